"""Freeze the accepted items of a workspace into a versioned split with a datasheet."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from benchsmith.schemas import (
    Sample,
    Split,
    SplitManifest,
    UserError,
    check_out_dir,
    file_sha256,
    samples_content_hash,
    write_json,
    write_jsonl,
)

from .agreement import cohen_kappa, percent_agreement

COPIED = ("tools.json", "toolset.json", "endpoints.json", "database.sqlite", "database.sqlite.descriptions.json")
#: a merged split's databases (``databases/<db_id>.sqlite`` and their ``.descriptions.json``) and its
#: per-database tool sets (``tools/<db_id>.json``), copied whole
COPIED_FOLDERS = (Split.DATABASES, "tools")


def copy_split_files(split: Path | None, out: Path) -> list[str]:
    """Copy the source split's tools and databases (:data:`COPIED`, and every file of a merged
    split's :data:`COPIED_FOLDERS`) into ``out``; the names written, relative to ``out`` with "/"."""
    if split is None:
        return []
    written = []
    for f in COPIED:
        if (split / f).is_file() and (split / f).resolve() != (out / f).resolve():
            shutil.copyfile(split / f, out / f)
        if (out / f).is_file():
            written.append(f)
    for folder in COPIED_FOLDERS:
        source = split / folder
        if not source.is_dir():
            continue
        names = sorted(p.name for p in source.iterdir() if p.is_file() and not p.name.startswith("."))
        if names:
            (out / folder).mkdir(parents=True, exist_ok=True)
        for name in names:
            if (source / name).resolve() != (out / folder / name).resolve():
                shutil.copyfile(source / name, out / folder / name)
            written.append(f"{folder}/{name}")
    return written


#: the folder of a finalized split holding the tool environments its samples name by file
ENVIRONMENTS_FOLDER = "environments"
#: what an environment file names beside itself (an MCP state template, an OpenAPI service file)
ENVIRONMENT_PARTS = ("template", "service")


def bundle_environments(samples: list[Sample], bases: list[Path], out: Path) -> tuple[list[Sample], list[str]]:
    """Copy every environment file the samples name (``metadata.environment.file``: absolute, or
    relative to one of ``bases``, the source splits), with what it names beside itself (a state
    template folder, a service file), into ``out/environments/<name>/``, and point the samples
    there (relative to ``out``), so the finalized split runs wherever it is copied. The samples,
    and the files written (relative to ``out``)."""
    bundles: dict[Path, str] = {}
    written: list[str] = []
    changed = []
    for sample in samples:
        env = sample.metadata.get("environment")
        if not isinstance(env, dict) or not isinstance(env.get("file"), str):
            changed.append(sample)
            continue
        given = Path(env["file"])
        source = next((b / given for b in bases if (b / given).is_file()), given) if not given.is_absolute() else given
        if not source.is_file():
            raise UserError(
                f"sample {sample.id}: its environment file {env['file']} is not there",
                fix="finalize from where the samples were built, or fix metadata.environment.file",
            )
        source = source.resolve()
        if source not in bundles:
            name = f"{source.parent.name}-{hashlib.sha256(str(source).encode()).hexdigest()[:8]}"
            bundles[source] = f"{ENVIRONMENTS_FOLDER}/{name}/{source.name}"
            written += _copy_environment(source, out / ENVIRONMENTS_FOLDER / name)
        changed.append(
            sample.model_copy(update={"metadata": {**sample.metadata, "environment": {**env, "file": bundles[source]}}})
        )
    return changed, written


def _copy_environment(source: Path, folder: Path) -> list[str]:
    spec = json.loads(source.read_text(encoding="utf-8"))
    folder.mkdir(parents=True, exist_ok=True)
    for key in ENVIRONMENT_PARTS:
        part = spec.get(key)
        if not isinstance(part, str):
            continue
        origin = (source.parent / part).resolve()
        if origin.is_dir():
            shutil.copytree(origin, folder / origin.name, symlinks=True, dirs_exist_ok=True)
        elif origin.is_file():
            shutil.copyfile(origin, folder / origin.name)
        else:
            continue  # the environment names it but it is not there: opening it says so
        spec[key] = origin.name
    write_json(folder / source.name, spec)
    root = folder.parent.parent
    return sorted(p.relative_to(root).as_posix() for p in folder.rglob("*") if p.is_file())


def _version(previous: Path, content_hash: str) -> str:
    """1.0.0 for a new folder; the same version when the split there has the same samples; else the
    next minor version."""
    manifest = previous / "manifest.json"
    if not manifest.is_file():
        return "1.0.0"
    from benchsmith.construction.nl2api import read_manifest

    old_manifest = read_manifest(manifest)  # a broken one is one red line naming it, before anything is written
    old = old_manifest.version
    if old_manifest.content_hash == content_hash:
        return old
    major, minor, *_ = (old.split("+")[0].split("-")[0] + ".0.0").split(".")
    return f"{int(major)}.{int(minor) + 1}.0"


def datasheet(items: list[dict[str, Any]], users: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Counts per stage and round, Cohen's kappa of the two reviewers per round, rejection reasons,
    reviewer statistics (pure)."""
    counts: Counter[str] = Counter()
    pairs: dict[int, list[tuple[str, str]]] = defaultdict(list)
    reasons: Counter[str] = Counter()
    per_user: dict[Any, Counter[str]] = defaultdict(Counter)
    final = {it["sample_id"]: it["status"] for it in items}
    for it in items:
        for e in it["history"]:
            counts[f"{e['stage']} r{e['round']}: {e['outcome']}"] += 1
            if e["stage"] == "review" and len(e.get("reviews") or []) >= 2:
                a, b = e["reviews"][0], e["reviews"][1]
                pairs[e["round"]].append((a["decision"], b["decision"]))
            for r in e.get("reviews") or []:
                c = per_user[r.get("user")]
                c[f"{e['stage']}s"] += 1
                c[r.get("decision") or "?"] += 1
                agrees = (r.get("decision") == "accept") == (final[it["sample_id"]] == "accepted")
                c["agrees_with_final"] += int(agrees)
        if it["status"] == "rejected":
            last = it["history"][-1] if it["history"] else {}
            for r in last.get("reasons") or ["unknown"]:
                reasons[str(r).split(":")[0]] += 1
    rounds = {
        str(r): {"items": len(p), "cohen_kappa": cohen_kappa(p), "percent_agreement": percent_agreement(p)}
        for r, p in sorted(pairs.items())
    }
    reviewers = {}
    for uid, c in per_user.items():
        info = users.get(uid, {}) if uid is not None else {}
        total = c["reviews"] + c["adjudicates"]
        reviewers[str(info.get("username") or uid)] = {
            "user_id": uid,
            "simulated": bool(info.get("simulated")),
            "reviews": c["reviews"],
            "adjudications": c["adjudicates"],
            "accept": c["accept"],
            "fix": c["fix"],
            "reject": c["reject"],
            "agreement_with_final": round(c["agrees_with_final"] / total, 4) if total else None,
        }
    status = Counter(it["status"] for it in items)
    return {
        "items": len(items),
        "final": dict(status),
        "stages": dict(sorted(counts.items())),
        "agreement": rounds,
        "rejection_reasons": dict(reasons.most_common()),
        "reviewers": reviewers,
        "verdicts_supplied_automatically": any(r["simulated"] for r in reviewers.values()),
        "models": producing_models([it.get("sample") or {} for it in items if it["status"] == "accepted"]),
    }


def counts_text(counts: Mapping[str, int]) -> str:
    """Counts by name as a phrase, largest first (pure).

    >>> counts_text({"rejected": 2, "accepted": 140})
    '140 accepted, 2 rejected'
    >>> counts_text({})
    'none'
    """
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{n} {name}" for name, n in ordered) or "none"


def agreement_text(agreement: Mapping[str, Mapping[str, Any]]) -> str:
    """Cohen's kappa of each review round with two reviewers, as a phrase (pure).

    >>> agreement_text({"1": {"items": 12, "cohen_kappa": 0.5}, "2": {"items": 3, "cohen_kappa": None}})
    "Cohen's kappa 0.50 in round 1 (12 items), undefined in round 2 (3 items: one label throughout)"
    >>> agreement_text({})
    "Cohen's kappa: no round had two reviewers"
    """
    if not agreement:
        return "Cohen's kappa: no round had two reviewers"
    parts = []
    for rnd, a in agreement.items():
        k = a.get("cohen_kappa")
        n = a.get("items", 0)
        parts.append(
            f"{k:.2f} in round {rnd} ({n} items)"
            if k is not None
            else f"undefined in round {rnd} ({n} items: one label throughout)"
        )
    return "Cohen's kappa " + ", ".join(parts)


def producing_models(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The models that made the accepted samples (from each sample's provenance: ``model.<node>`` and
    ``model_file.<node>``), with their weights file's sha256 when local and how many samples each
    took part in (pure).

    >>> made = {"model.plan": "m", "model_file.plan": "ab", "model.act": "m", "model_file.act": "ab"}
    >>> producing_models([{"provenance": {"versions": made}}, {"provenance": {"versions": {"model.gen": "gpt"}}}])
    [{'model': 'gpt', 'file_sha256': None, 'samples': 1}, {'model': 'm', 'file_sha256': 'ab', 'samples': 1}]
    """
    seen: Counter[tuple[str, str | None]] = Counter()
    for sample in samples:
        versions = (sample.get("provenance") or {}).get("versions") or {}
        pairs = {
            (name, versions.get(f"model_file.{key[len('model.') :]}"))
            for key, name in versions.items()
            if key.startswith("model.")
        }
        for pair in pairs:
            seen[pair] += 1
    return [{"model": name, "file_sha256": sha, "samples": n} for (name, sha), n in sorted(seen.items(), key=str)]


def finalize(workspace: Any, out: str | Path, *, name: str | None = None) -> dict[str, Any]:
    """Write the accepted items to ``out`` (samples.jsonl, manifest.json, datasheet.json/.md, and the
    source split's tools and database) and return the datasheet. Items still under review block it."""
    items = workspace.store.items()
    open_ = [it for it in items if it["status"] in ("review", "adjudicate")]
    if open_:
        raise UserError(
            f"{len(open_)} items are still under review (e.g. {open_[0]['sample_id']})",
            fix="pull their annotations (`benchsmith annotate pull`) or finish the review first",
        )
    out = check_out_dir(out, "--out")
    users = workspace.store.users()
    sheet = datasheet(items, users)
    now = datetime.now(timezone.utc)
    accepted = []
    for it in items:
        if it["status"] != "accepted":
            continue
        data = dict(it["sample"])
        history = it["history"]
        data["verification"] = {
            "status": "verified",
            "method": "expert-review",
            "verified_at": now.isoformat(),
            "checks": [
                {
                    "name": f"{e['stage']}_r{e['round']}",
                    "ok": e["outcome"] in ("accepted", "revise", "voted"),
                    "reason": e["outcome"],
                    "code": None,
                }
                for e in history
            ],
            "details": {
                "rounds": it["round"],
                "original_id": it["sample_id"],
                "reviewers": sorted({str(r.get("user")) for e in history for r in e.get("reviews") or []}),
                "verdicts_supplied_automatically": sheet["verdicts_supplied_automatically"],
            },
        }
        accepted.append(Sample.model_validate(data))
    version = _version(out, samples_content_hash(s.id for s in accepted))  # reads a previous manifest first
    out.mkdir(parents=True, exist_ok=True)
    split = workspace.split_dir()
    bases = [Path(src["split"]) for src in workspace.sources() if src.get("split")]
    bases += [Path(src["samples"]).parent for src in workspace.sources() if src.get("samples")]
    accepted, bundled = bundle_environments(accepted, bases, out)
    write_jsonl(out / "samples.jsonl", accepted)
    copied = copy_split_files(split, out) + bundled
    write_json(out / "datasheet.json", sheet)
    (out / "datasheet.md").write_text(datasheet_markdown(sheet, version), encoding="utf-8")
    files = {
        f: file_sha256(out / f)
        for f in ("samples.jsonl", "datasheet.json", "datasheet.md", *COPIED)
        if (out / f).is_file()
    }
    files.update({f: file_sha256(out / f) for f in copied if f not in files})
    extra: dict[str, Any] = {"datasheet": "datasheet.md"}
    if Split(out).has_databases():  # a merged split: its samples run on databases/<db_id>.sqlite
        extra["databases"] = Split(out).db_ids()
    src = workspace.store.get_meta("source") or {}
    manifest = SplitManifest(
        name=name or f"{(split.name if split else 'split')}-reviewed",
        version=version,
        created_at=now,
        description="accepted by multi-stage expert review in Label Studio"
        + (" (reviewers' verdicts supplied automatically)" if sheet["verdicts_supplied_automatically"] else ""),
        sample_count=len(accepted),
        files=files,
        content_hash=samples_content_hash(s.id for s in accepted),
        provenance={
            "source": src.get("samples", "?"),
            "method": "annotation.review",
            "created_at": now,
            "params": {
                "workspace": str(workspace.folder),
                "final": sheet["final"],
                "sources": [s["samples"] for s in workspace.sources()],
            },
        },
        parent=str(split / "manifest.json") if split and (split / "manifest.json").is_file() else None,
        extra=extra,
    )
    write_json(out / "manifest.json", manifest)
    return {"out": str(out), "version": version, "accepted": len(accepted), "datasheet": sheet}


def datasheet_markdown(sheet: dict[str, Any], version: str) -> str:
    lines = [f"# Datasheet (version {version})", ""]
    if sheet["verdicts_supplied_automatically"]:
        lines += [
            "**The reviewers' verdicts in this split were supplied automatically (simulated reviewers), "
            "not by people.**",
            "",
        ]
    lines += [
        f"Items reviewed: {sheet['items']}; final: " + ", ".join(f"{k} {v}" for k, v in sheet["final"].items()),
        "",
        "## Stages",
        "",
        "| stage, round: outcome | items |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v} |" for k, v in sheet["stages"].items()]
    lines += [
        "",
        "## Agreement (two independent reviewers)",
        "",
        "| round | items | Cohen's kappa | % agreement |",
        "|---|---|---|---|",
    ]
    for r, a in sheet["agreement"].items():
        kappa = "undefined" if a["cohen_kappa"] is None else f"{a['cohen_kappa']:.3f}"
        pa = "n/a" if a["percent_agreement"] is None else f"{100 * a['percent_agreement']:.1f}%"
        lines.append(f"| {r} | {a['items']} | {kappa} | {pa} |")
    lines += ["", "## Rejection reasons", "", "| reason | items |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in sheet["rejection_reasons"].items()] or ["| (none) | 0 |"]
    lines += [
        "",
        "## Models that made the accepted items",
        "",
        "| model | weights file sha256 | items |",
        "|---|---|---|",
    ]
    lines += [
        f"| {m['model']} | {m['file_sha256'] or '(remote model)'} | {m['samples']} |" for m in sheet.get("models") or []
    ] or ["| (none: no item was made by a model) | | 0 |"]
    lines += [
        "",
        "## Reviewers",
        "",
        "| reviewer | simulated | reviews | adjudications | accept | fix | reject | agrees with final |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in sheet["reviewers"].items():
        agree = "n/a" if r["agreement_with_final"] is None else f"{100 * r['agreement_with_final']:.0f}%"
        lines.append(
            f"| {name} | {'yes' if r['simulated'] else 'no'} | {r['reviews']} | {r['adjudications']} | "
            f"{r['accept']} | {r['fix']} | {r['reject']} | {agree} |"
        )
    return "\n".join(lines) + "\n"
