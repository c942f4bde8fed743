"""Build a whole NL2SQL dataset (BIRD, Spider, a folder of SQLite files): one split per database
and a merged split holding every database.

``<out>/<db_id>/`` is an ordinary split of that database (its own ``report.json``);
``<out>/merged/`` holds every verified sample in the dataset's order, each with
``metadata["db_id"]``, the databases as ``databases/<db_id>.sqlite`` and each database's own tool
set in ``tools/<db_id>.json``; ``<out>/report.json`` sums up the dataset (per database, the
dataset's own rejections and warnings). ``<out>/_inputs/`` keeps the pairs and descriptions each
database was built from. A database where nothing verifies is reported, not fatal.
"""

from __future__ import annotations

import heapq
import shutil
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel

from benchsmith.schemas import (
    Provenance,
    RowError,
    Sample,
    SplitManifest,
    UserError,
    check_out_dir,
    file_sha256,
    read_json,
    samples_content_hash,
    scan_jsonl,
    swap_folder,
    write_json,
    write_jsonl,
)

from .build import BuildOptions, build_split, library_versions
from .datasets import Dataset, read_dataset, write_pairs

MERGED = "merged"


def build_dataset(
    root: str | Path,
    kind: str,
    out_dir: str | Path,
    options: BuildOptions | None = None,
    *,
    split_file: str | None = None,
    merged: bool = True,
) -> dict[str, Any]:
    """Read the dataset at ``root`` (``kind``: bird, spider or sqlite-dir) and build it into
    ``out_dir``; returns the dataset report (also written to ``out_dir/report.json``)."""
    opts = options or BuildOptions()
    check_out_dir(out_dir)
    ds = read_dataset(root, kind, split_file=split_file)
    if not ds.databases:
        raise UserError(
            f"{ds.question_file}: no entry names a database that exists ({len(ds.rejections)} entries rejected)",
            fix="check the dataset's database folder",
        )
    out = Path(out_dir)
    if out.name == MERGED or (out / "samples.jsonl").exists():
        raise UserError(f"{out} holds a split already", fix="give --out a folder for the whole dataset")
    inputs = out / "_inputs"
    per_db: dict[str, dict[str, Any]] = {}
    built: dict[str, Path] = {}
    rejections: list[dict[str, Any]] = []
    for db_id, d in ds.databases.items():
        pairs_path = write_pairs(d, inputs / f"{db_id}.jsonl")
        desc_path = None
        if d.descriptions:
            desc_path = inputs / f"{db_id}.descriptions.json"
            write_json(desc_path, d.descriptions)
        o = replace(opts, db_id=db_id, descriptions=desc_path, name=f"{opts.name or kind}-{db_id}-{opts.style}")
        try:
            report = build_split(d.path, pairs_path, out / db_id, o)
        except UserError as exc:
            if not str(exc).startswith("nothing verified"):
                raise
            per_db[db_id] = {"total": len(d.pairs), "verified": 0, "error": str(exc)}
            continue
        built[db_id] = out / db_id
        per_db[db_id] = {k: report[k] for k in ("total", "verified", "verified_rate", "rejected", "seconds")}
        for r in report["rejections"]:  # named by the dataset's own file and entry, not the per-database input
            line = r.get("line") or 0
            entry = d.indexes[line - 1] if 0 < line <= len(d.indexes) else None
            rejections.append(
                {
                    "db_id": db_id,
                    "id": r.get("id"),
                    "entry": entry,
                    "file": str(ds.question_file),
                    "code": r["code"],
                    "message": r["message"],
                }
            )
    merged_info: dict[str, Any] | None = None
    if merged and built:
        try:
            merged_info = merge_splits(built, out / MERGED, ds, opts)
        except UserError as exc:
            merged_info = {"error": str(exc)}
    total = ds.total
    verified = sum(r["verified"] for r in per_db.values())
    report = {
        "kind": kind,
        "root": str(Path(root)),
        "question_file": str(ds.question_file),
        "style": opts.style,
        "total": total,
        "verified": verified,
        "verified_rate": round(verified / total, 4) if total else 0.0,
        "databases": per_db,
        "merged": merged_info,
        "dataset_rejections": ds.rejections,
        "warnings": ds.warnings,
        "rejections": sorted(rejections, key=lambda r: (r["entry"] is None, r["entry"] or 0)),
    }
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "report.json", report)
    return report


class _OrderFields(BaseModel):
    """The parts of a sample its place in the dataset comes from."""

    metadata: dict[str, Any]


def _order_key(ds: Dataset, sample: Any) -> int:
    db = ds.databases[sample.metadata["db_id"]]
    line = int(sample.metadata.get("pair_line", 0))
    return db.indexes[line - 1] if 0 < line <= len(db.indexes) else 1 << 30


#: what a merge writes into the merged folder
MERGED_OWNED = frozenset(
    {
        "samples.jsonl",
        "tools.json",
        "toolset.json",
        "endpoints.json",
        "report.json",
        "manifest.json",
        "databases",
        "tools",
    }
)


def _part_samples(ds: Dataset, part: Path, renames: dict[str, str]) -> Iterator[tuple[int, Sample]]:
    """A part's samples with their dataset order keys, one at a time."""
    for _, sample in scan_jsonl(part / "samples.jsonl", Sample):
        if isinstance(sample, RowError):
            raise UserError(
                f"{part / 'samples.jsonl'}:{sample.line}: {sample.message}", fix="rebuild that database's split"
            )
        if renames:
            sample = _rename_rest(sample, renames)
        yield _order_key(ds, sample), sample


def _in_dataset_order(ds: Dataset, parts: list[tuple[Path, dict[str, str]]]) -> Iterator[Sample]:
    """Every part's samples in the dataset's order: a merge of the parts (each in its pairs' order,
    which is the dataset's), read one sample at a time; a part out of order is sorted in memory."""
    for part, _renames in parts:
        keys = [k for k, _ in _part_keys(ds, part)]
        if keys != sorted(keys):  # not expected from build_split; kept correct all the same
            everything = [x for p, r in parts for x in _part_samples(ds, p, r)]
            everything.sort(key=lambda x: x[0])
            yield from (s for _, s in everything)
            return
    for _, sample in heapq.merge(*(_part_samples(ds, p, r) for p, r in parts), key=lambda x: x[0]):
        yield sample


def _part_keys(ds: Dataset, part: Path) -> Iterator[tuple[int, None]]:
    for _, raw in scan_jsonl(part / "samples.jsonl", _OrderFields):
        if not isinstance(raw, RowError):
            yield _order_key(ds, raw), None


def merge_splits(parts: dict[str, Path], out: Path, ds: Dataset, opts: BuildOptions) -> dict[str, Any]:
    """One split over several databases from per-database splits (same style): samples in the
    dataset's order, ``databases/<db_id>.sqlite``, per-database tool sets, merged bindings and
    endpoints (an endpoint name two databases both use gets the database's name appended).
    Samples are merged one at a time and the finished folder replaces ``out`` at once."""
    result: dict[str, Any] = {}

    def fill(tmp: Path) -> None:
        toolset: dict[str, Any] = {}
        endpoints: dict[str, Any] = {}
        universe: dict[str, Any] = {}
        (tmp / "databases").mkdir(parents=True)
        (tmp / "tools").mkdir()
        files: list[str] = []
        ordered: list[tuple[Path, dict[str, str]]] = []
        for db_id, part in parts.items():
            renames: dict[str, str] = {}
            if (part / "endpoints.json").is_file():
                for name, spec in read_json(part / "endpoints.json").items():
                    new = name if name not in endpoints else f"{name}_{db_id}"
                    renames[name] = new
                    endpoints[new] = {**spec, "db_id": db_id}
            if (part / "toolset.json").is_file():
                for name, binding in read_json(part / "toolset.json").items():
                    new = name
                    if (
                        name in toolset and toolset[name] != binding
                    ):  # e.g. a SEL getter of a column both databases name alike
                        new = renames[name] = f"{name}_{db_id}"
                    toolset[new] = binding
            ordered.append((part, renames))
            tools = read_json(part / "tools.json")
            if renames:
                tools = [
                    {**t, "name": renames.get(t["name"], t["name"])}
                    | (
                        {"rest": {**t["rest"], "path": f"/v1/{renames[t['name']]}"}}
                        if t.get("rest") and t["name"] in renames
                        else {}
                    )
                    for t in tools
                ]
            write_json(tmp / "tools" / f"{db_id}.json", tools)
            files.append(f"tools/{db_id}.json")
            for t in tools:
                universe.setdefault(t["name"], t)
            shutil.copyfile(part / "database.sqlite", tmp / "databases" / f"{db_id}.sqlite")
            files.append(f"databases/{db_id}.sqlite")
            if (part / "database.sqlite.descriptions.json").is_file():
                shutil.copyfile(
                    part / "database.sqlite.descriptions.json", tmp / "databases" / f"{db_id}.sqlite.descriptions.json"
                )
                files.append(f"databases/{db_id}.sqlite.descriptions.json")
        ids: list[str] = []

        def samples() -> Iterator[Sample]:
            for s in _in_dataset_order(ds, ordered):
                ids.append(s.id or "")
                yield s

        write_jsonl(tmp / "samples.jsonl", samples())
        write_json(tmp / "tools.json", list(universe.values()))
        files += ["samples.jsonl", "tools.json"]
        if toolset:
            write_json(tmp / "toolset.json", dict(sorted(toolset.items())))
            files.append("toolset.json")
        if endpoints:
            write_json(tmp / "endpoints.json", endpoints)
            files.append("endpoints.json")
        per_db = {db_id: read_json(part / "report.json") for db_id, part in parts.items()}
        report = {
            "total": sum(r["total"] for r in per_db.values()),
            "verified": len(ids),
            "style": opts.style,
            "databases": {
                k: {"total": r["total"], "verified": r["verified"], "rejected": r["rejected"]}
                for k, r in per_db.items()
            },
        }
        write_json(tmp / "report.json", report)
        files.append("report.json")
        created = datetime.now(timezone.utc)
        manifest = SplitManifest(
            name=f"{opts.name or ds.kind}-{MERGED}-{opts.style}",
            version=opts.version,
            created_at=created,
            description=f"NL2API {opts.style.upper()} split over {len(parts)} databases of {ds.question_file.name}; "
            "every gold sequence verified by execution against the SQL on its own database",
            sample_count=len(ids),
            files={f: file_sha256(tmp / f) for f in files},
            content_hash=samples_content_hash(ids),
            provenance=Provenance(
                source=str(ds.question_file),
                method=f"nl2api.{opts.style}",
                versions=library_versions(),
                seed=opts.seed,
                created_at=created,
                params={"kind": ds.kind},
            ),
            extra={
                "style": opts.style,
                "obfuscated": opts.obfuscate,
                "tool_universe": opts.tool_universe,
                "databases": list(parts),
            },
        )
        write_json(tmp / "manifest.json", manifest.model_dump(mode="json"))
        result.update({"path": str(out), "samples": len(ids), "databases": list(parts)})

    swap_folder(out, fill, owned=MERGED_OWNED, what="the merge of a dataset's splits")
    return result


def _rename_tool(tool: Any, new: str) -> Any:
    update: dict[str, Any] = {"name": new}
    if tool.rest is not None:
        update["rest"] = tool.rest.model_copy(update={"path": f"/v1/{new}"})
    return tool.model_copy(update=update)


def _rename_rest(sample: Sample, renames: dict[str, str]) -> Sample:
    """The sample with tools (and its gold calls) renamed where two databases used one name."""
    tools = [_rename_tool(t, renames[t.name]) if renames.get(t.name, t.name) != t.name else t for t in sample.tools]
    gold = [
        g.model_copy(update={"call": g.call.model_copy(update={"name": renames.get(g.call.name, g.call.name)})})
        if g.call is not None
        else g
        for g in sample.gold
    ]
    return sample.model_copy(update={"tools": tools, "gold": gold})
