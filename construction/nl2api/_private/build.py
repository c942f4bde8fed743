"""Build a split: pairs -> converted, execution-verified samples in SLOT, SEL or REST style."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from importlib import metadata
from itertools import chain, islice
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal, Sequence

import orjson
import sqlglot
from pydantic import ConfigDict, Field, field_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass

from benchsmith.schemas import (
    CheckResult,
    ExactAnswer,
    PairAccepted,
    PairRejected,
    Provenance,
    RowError,
    Sample,
    SampleEncoder,
    SplitManifest,
    Step,
    StrictModel,
    Tool,
    ToolCall,
    UserError,
    Verification,
    check_out_dir,
    file_sha256,
    read_json,
    samples_content_hash,
    scan_jsonl,
    swap_folder,
    write_json,
)

from .converter import Conversion
from .database import DESCRIPTIONS_FIX, DESCRIPTIONS_SHAPE, Database
from .pairwork import BATCH, JOURNAL, PENDING, PairJournal, fingerprint, in_pool, in_process, on_ray, run_pairs
from .reasons import REASONS, Rejection
from .rest import rename_endpoint_params
from .runtime import Binding, slot_bindings
from .styles import (
    obfuscate_bindings,
    obfuscate_call,
    obfuscate_tool,
    obfuscation_map,
    reduce_universe,
    sel_toolset,
    slot_tools,
)
from .verify import run_and_check

Style = Literal["slot", "sel", "rest"]
STYLES = ("slot", "sel", "rest")


class Pair(StrictModel):
    """One NL2SQL input row."""

    model_config = ConfigDict(extra="forbid")
    id: str | None = None
    question: str = Field(min_length=1)
    sql: str = Field(min_length=1)
    evidence: str | None = None
    difficulty: str | None = None
    db_id: str | None = None


@pydantic_dataclass(config=ConfigDict(validate_assignment=True, arbitrary_types_allowed=True))
class BuildOptions:
    """What a build does. Ranges are declared here, so a bad value is refused (a pydantic
    ``ValidationError`` naming the field) however the options are made: the CLI, a script,
    ``dataclasses.replace``."""

    style: Style = "slot"
    obfuscate: bool = False
    # candidate tools per sample: a count (12) or a fraction of the full set (0.25); gold tools always kept
    tool_universe: int | float | None = None
    seed: int = 0
    timeout_s: float = Field(10.0, gt=0, allow_inf_nan=False)  # seconds per SQL query
    copy_db: bool = True
    name: str | None = None
    version: str = "1.0.0"
    descriptions: str | Path | None = None  # JSON {table: {column: text}}; default: <db>.descriptions.json
    allow_empty: bool = False  # write a split even when nothing verifies (default: UserError, out_dir untouched)
    workers: int = Field(1, ge=1)  # processes converting and verifying pairs (results identical, in input order)
    ray: str | None = None  # run the pairs as Ray tasks: "local", "auto" or a cluster address
    db_id: str | None = None  # the dataset database this split is built from (multi-database datasets)
    progress: Any = None  # called with the number of pairs just finished

    @field_validator("tool_universe")
    @classmethod
    def _universe(cls, value: int | float | None) -> int | float | None:
        if value is not None:
            try:
                universe_size(value, 1)
            except UserError as exc:
                raise ValueError(str(exc)) from None
        return value


#: what a build writes into its output folder (anything else there is someone else's: refused)
OWNED = frozenset(
    {
        "samples.jsonl",
        "tools.json",
        "toolset.json",
        "endpoints.json",
        "obfuscation.json",
        "database.sqlite",
        "database.sqlite.descriptions.json",
        "report.json",
        "manifest.json",
        JOURNAL,
        PENDING,
    }
)


@dataclass
class _Accepted:
    line: int
    pair: Pair
    result: PairAccepted  # process_pair's verified result: nothing is written without one
    conv: Conversion
    rows: list[tuple]
    calls: list[ToolCall]
    tools: list[Tool] = field(default_factory=list)
    bindings: dict[str, Any] = field(default_factory=dict)

    @property
    def rest(self) -> dict[str, Any]:
        """A REST pair's endpoint, tool and gold arguments (the build adds the endpoint's name)."""
        assert self.result.rest is not None, f"line {self.line}: a REST build's result has no endpoint"
        return self.result.rest


def library_versions() -> dict[str, str]:
    def v(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "unknown"

    return {
        "benchsmith": v("benchsmith"),
        "sqlglot": sqlglot.__version__ if hasattr(sqlglot, "__version__") else v("sqlglot"),
        "sqlite": sqlite3.sqlite_version,
    }


def _difficulty(features: set[str], n_calls: int) -> str:
    if "nested" in features or n_calls >= 7:
        return "challenging"
    if features & {"join", "group", "case", "arithmetic", "function"} or n_calls >= 4:
        return "moderate"
    return "simple"


def universe_size(spec: int | float, n_tools: int) -> int:
    """Candidate tools for a universe spec: a count, or a fraction (0 < f <= 1) of ``n_tools``.

    >>> universe_size(12, 40), universe_size(0.25, 40), universe_size(1.0, 40)
    (12, 10, 40)
    """
    if isinstance(spec, float) and spec <= 1.0:
        if spec <= 0:
            raise UserError(f"tool universe fraction {spec} is not in (0, 1]", fix="e.g. --tool-universe 0.25")
        return max(1, round(spec * n_tools))
    if isinstance(spec, float) and not spec.is_integer():
        raise UserError(
            f"tool universe {spec} is neither a count nor a fraction in (0, 1]",
            fix="e.g. --tool-universe 12 or --tool-universe 0.25",
        )
    if int(spec) < 1:
        raise UserError(f"tool universe {spec} is not a positive count", fix="e.g. --tool-universe 12 or 0.25")
    return int(spec)


def parse_universe(text: str) -> int | float:
    """``--tool-universe`` text: ``12`` (a count) or ``0.25`` (a fraction of the full tool set)."""
    try:
        value: int | float = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise UserError(
                f"tool universe {text!r} is neither a count nor a fraction",
                fix="e.g. --tool-universe 12 or --tool-universe 0.25",
            ) from None
    universe_size(value, 1)  # validates
    return value


def universe_label(spec: int | float) -> str:
    return f"universe-{spec:g}" if isinstance(spec, float) else f"universe-{spec}"


def write_lines(path: Path, lines: Iterable[bytes]) -> None:
    """Write ``lines`` (UTF-8) to a new file in a folder about to be swapped in (flushed to disk)."""
    with open(path, "wb") as fh:
        for text in lines:
            fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def _pairs(pairs_path: Path) -> Iterator[tuple[int, Pair | RowError]]:
    return scan_jsonl(pairs_path, Pair)


def _collect(
    db: Database, db_path: Path, pairs_path: Path, out: Path, opts: BuildOptions, rejections: list[dict[str, Any]]
) -> tuple[PairJournal, int, int]:
    """Every pair's result in the journal: from the journal of an earlier (killed) build of the
    same inputs, the rest converted and verified now (serially, in a process pool or on Ray),
    reading the pairs file as the work goes. Returns the journal, the rows and the pairs resumed."""
    journal = PairJournal(out, fingerprint(db_path, Path(pairs_path), opts.style, opts.timeout_s, db.descriptions))
    seen: set[str] = set()
    counts = {"total": 0, "resumed": 0}
    duplicates: list[dict[str, Any]] = []  # listed after the invalid rows (the order of the report's reasons)

    def items() -> Iterator[tuple[int, dict[str, Any]]]:
        for line, pair in _pairs(pairs_path):
            counts["total"] += 1
            if isinstance(pair, RowError):
                rejections.append({"id": None, "line": line, "code": "invalid_row", "message": pair.message})
                continue
            pid = pair.id or f"line-{line}"
            if pid in seen:
                duplicates.append(
                    {
                        "id": pid,
                        "line": line,
                        "code": "duplicate_id",
                        "message": f"duplicate_id: id {pid} appears more than once",
                        "question": pair.question,
                        "sql": pair.sql,
                    }
                )
                continue
            seen.add(pid)
            if line in journal.done:
                counts["resumed"] += 1
                continue
            yield line, pair.model_dump()

    desc_json = json.dumps(db.descriptions) if db.descriptions else None
    todo = items()
    head = list(islice(todo, BATCH + 1))  # a few pairs are not worth starting workers for
    todo = chain(head, todo)
    if opts.ray:
        runner = on_ray(opts.ray, str(db_path), opts.timeout_s, desc_json, opts.style, max(1, opts.workers))
    elif opts.workers > 1 and len(head) > BATCH:
        runner = in_pool(str(db_path), opts.timeout_s, desc_json, opts.style, opts.workers)
    else:
        runner = in_process(db, opts.style)
    run_pairs(journal, todo, runner, opts.progress)
    rejections.extend(duplicates)
    return journal, counts["total"], counts["resumed"]


def build_split(
    db_path: str | Path, pairs_path: str | Path, out_dir: str | Path, options: BuildOptions | None = None
) -> dict[str, Any]:
    """Convert and verify every pair; write ``samples.jsonl``, ``tools.json``, ``report.json``,
    ``manifest.json`` (and ``endpoints.json`` for REST) to ``out_dir``. Returns the report.

    The pairs are read, and the samples written, one at a time (memory stays flat however many
    pairs there are); the finished folder replaces ``out_dir`` at once, so a failed or killed build
    leaves an earlier split there as it was. Pairs finished by a killed build of the same inputs
    into the same ``out_dir`` are taken from its journal (``.journal.jsonl``) instead of being
    converted again."""
    opts = options or BuildOptions()
    return build_universes(db_path, pairs_path, out_dir, opts, None)[0]


def build_universes(
    db_path: str | Path,
    pairs_path: str | Path,
    out_dir: str | Path,
    options: BuildOptions,
    sizes: Sequence[int | float] | None,
) -> list[dict[str, Any]]:
    """Convert and verify once; write one split per tool-universe size in ``sizes`` (each in
    ``out_dir/universe-<size>``), or one split with ``options.tool_universe`` when ``sizes`` is None."""
    opts = options  # a BuildOptions checks its own values
    started = time.perf_counter()
    out = check_out_dir(out_dir)
    _check_owned(out, sizes)
    descriptions = read_json(opts.descriptions, DESCRIPTIONS_SHAPE, fix=DESCRIPTIONS_FIX) if opts.descriptions else None
    db = Database(db_path, timeout_s=opts.timeout_s, descriptions=descriptions)
    made = _first_missing(out)  # the folder this build makes (None: out exists)
    journal: PairJournal | None = None
    swapped = False
    try:
        rejections: list[dict[str, Any]] = []
        journal, total, resumed = _collect(db, Path(db_path), Path(pairs_path), out, opts, rejections)
        if len(journal.done) == len(journal.rejected) and not opts.allow_empty:
            codes: dict[str, int] = {}
            for r in [*rejections, *_rejected(journal, Path(pairs_path))]:
                codes[r["code"]] = codes.get(r["code"], 0) + 1
            why = ", ".join(f"{k}={v}" for k, v in sorted(codes.items())) or "the pairs file has no rows"
            journal.discard()
            raise UserError(
                f"nothing verified: 0 of {total} pairs in {pairs_path} verified "
                f"(rejected: {why}); {out} was left untouched",
                fix="check --pairs (JSONL of {question, sql}) and --db",
            )
        rejections.extend(_rejected(journal, Path(pairs_path)))
        tools = _ToolSets(opts, journal.extended)
        if opts.style == "rest" or opts.obfuscate:  # the split-wide tool universe comes first
            for a in _accepted(journal, Path(pairs_path)):
                tools.assign(a)
        reports = []
        for size in sizes if sizes else [opts.tool_universe]:
            target = out / universe_label(size) if sizes else out
            o = replace(opts, tool_universe=size)
            written: list[dict[str, Any]] = []

            def fill(fresh: Path, o: BuildOptions = o, written: list = written) -> None:
                written.append(
                    _write_split(
                        db,
                        Path(db_path),
                        Path(pairs_path),
                        fresh,
                        o,
                        journal,
                        tools,
                        list(rejections),
                        total,
                        started,
                        resumed,
                    )
                )
                if not sizes:
                    journal.link_into(fresh)

            swap_folder(target, fill, owned=OWNED, what="nl2api build")
            swapped = True
            reports.append(written[0])
        journal.finish()
        return reports
    except UserError:
        # bad input: what this build started goes, so an existing split is left as it was
        if journal is not None:
            journal.abandon()
        if made is not None and not swapped:
            shutil.rmtree(made, ignore_errors=True)
        raise
    except BaseException:  # killed or interrupted: the pending journal stays, to resume from
        if journal is not None:
            journal.close()
        raise
    finally:
        db.close()


def _first_missing(out: Path) -> Path | None:
    """The outermost folder of ``out``'s path that does not exist yet (None: ``out`` exists)."""
    missing = None
    while not os.path.lexists(out) and out.parent != out:
        missing, out = out, out.parent
    return missing


def _check_owned(out: Path, sizes: Sequence[int | float] | None) -> None:
    """Refuse, before any work, an output folder holding files a build did not write."""
    if out.is_dir():
        foreign = sorted(
            p.name
            for p in out.iterdir()
            if p.name not in OWNED
            and not (sizes and p.name.startswith("universe-"))
            and not (p.name.startswith(".") and p.name.endswith(".tmp"))
        )
        if foreign:
            raise UserError(
                f"{out} holds {', '.join(foreign[:5])}, which nl2api build did not write; a build "
                "replaces the whole folder",
                fix="build into a new or empty folder (or a split built before), or move those files away",
            )


def _rejected(journal: PairJournal, pairs_path: Path) -> Iterator[dict[str, Any]]:
    """The rejections the journal holds, with their pairs' question and SQL."""
    if not journal.rejected:
        return
    for line, pair in _pairs(pairs_path):
        if line in journal.rejected and not isinstance(pair, RowError):
            res = journal.get(line)
            assert isinstance(res, PairRejected), f"line {line} is journaled as rejected"
            yield {
                "id": pair.id or f"line-{line}",
                "line": line,
                "code": res.code,
                "message": res.message,
                "question": pair.question,
                "sql": pair.sql,
            }


def _accepted(journal: PairJournal, pairs_path: Path) -> Iterator[_Accepted]:
    """The verified pairs in line order, one at a time, from the pairs file and the journal."""
    for line, pair in _pairs(pairs_path):
        if line not in journal.done or line in journal.rejected or isinstance(pair, RowError):
            continue
        res = journal.get(line)
        if not isinstance(res, PairAccepted):
            continue
        c = res.conv
        conv = Conversion(
            [ToolCall.model_validate(x) for x in c.setup],
            [ToolCall.model_validate(x) for x in c.calls],
            "",
            c.ordered,
            set(c.features),
        )
        # a SLOT pair's gold calls are the conversion's own (SEL and REST ones differ)
        calls = list(conv.calls) if res.calls == c.calls else [ToolCall.model_validate(x) for x in res.calls]
        yield _Accepted(line, pair, res, conv, [tuple(r) for r in res.rows], calls)


def _memo_key(columns: list[str], descriptions: dict[str, str]) -> bytes | str:
    """Equal for equal column lists and descriptions (a tool set's memo key)."""
    try:
        return orjson.dumps([columns, descriptions], option=orjson.OPT_SORT_KEYS)
    except TypeError:  # a lone surrogate in a name (orjson.JSONEncodeError is a TypeError)
        return json.dumps([columns, descriptions], sort_keys=True)


class _ToolSets:
    """Each sample's tool set. The extended tier (joining, combining, ranking derived data) is in
    the universe of every sample of a split where any gold sequence needs it, never per sample.
    Samples over the same tables share one tool set (specs are built once per column set); a REST
    split's samples share the universe of every endpoint (named first come, first named)."""

    def __init__(self, opts: BuildOptions, extended: bool) -> None:
        self.style, self.extended = opts.style, extended
        self.memo: dict[bytes | str, Any] = {}
        self.universe: list[Tool] = []  # REST
        self.rest_names: dict[int, str] = {}  # REST: line -> endpoint name
        self.names: set[str] = set()
        self.bindings = slot_bindings() if opts.style == "slot" else {}

    def assign(self, a: _Accepted) -> None:
        if self.style == "rest":
            name = self.rest_names.get(a.line)
            if name is None:
                tool = Tool.model_validate(a.rest["tool"])
                base, name, k = tool.name, tool.name, 2
                while name in self.names:  # endpoint names are unique within the split, first come first named
                    name, k = f"{base}_{k}", k + 1
                if name != tool.name:
                    tool = tool.model_copy(
                        update={"name": name, "rest": tool.rest.model_copy(update={"path": f"/v1/{name}"})}
                    )
                self.rest_names[a.line] = name
                self.names.add(name)
                self.universe.append(tool)
            a.rest["name"] = name
            a.calls = [ToolCall(name=name, arguments=a.rest["args"], label="result_1")]
            a.tools = self.universe
            return
        k = _memo_key(a.result.columns, a.result.descriptions)
        if k not in self.memo:
            if self.style == "slot":
                self.memo[k] = (
                    slot_tools(a.result.columns, a.result.descriptions, extended=self.extended),
                    self.bindings,
                )
            else:
                self.memo[k] = sel_toolset(a.result.columns, a.result.descriptions, extended=self.extended)
        a.tools, a.bindings = self.memo[k]

    def all_tools(self) -> Iterator[Tool]:
        if self.style == "rest":
            yield from self.universe
        for tools, _ in self.memo.values():
            yield from tools


def _write_split(
    db: Database,
    db_path: Path,
    pairs_path: Path,
    out: Path,
    opts: BuildOptions,
    journal: PairJournal,
    toolsets: _ToolSets,
    rejections: list[dict[str, Any]],
    total: int,
    started: float,
    resumed: int,
) -> dict[str, Any]:
    """Write the split into ``out`` (a fresh folder), one sample at a time."""
    mapping = obfuscation_map(list(toolsets.all_tools())) if opts.obfuscate else None
    obfuscated: dict[int, Tool] = {}  # id(tool) -> its obfuscated copy (made once per tool)
    created = datetime.now(timezone.utc)
    versions = library_versions()
    endpoints: dict[str, Any] = {}
    universe: dict[str, Tool] = {}
    bindings: dict[str, Binding] = {}
    ids: list[str] = []
    encoder = SampleEncoder()
    provenance_params = {"obfuscate": opts.obfuscate, "tool_universe": opts.tool_universe}
    checks_done = [CheckResult(name="limit_deterministic", ok=True, reason="no ties across LIMIT")]

    def lines() -> Iterator[bytes]:
        for a in _accepted(journal, pairs_path):
            toolsets.assign(a)
            calls, tools = a.calls, a.tools
            if mapping is not None:
                calls = [obfuscate_call(c, mapping) for c in calls]
                tools = [
                    obfuscated.get(id(t)) or obfuscated.setdefault(id(t), obfuscate_tool(t, mapping)) for t in tools
                ]
                if opts.style != "rest":  # prove the obfuscated sequence still runs and matches
                    try:
                        run_and_check(
                            db,
                            a.conv.setup,
                            calls,
                            a.rows,
                            a.conv.ordered,
                            bindings=obfuscate_bindings(a.bindings, mapping),
                            sql=a.pair.sql,
                        )
                    except Rejection as rej:
                        rejections.append(
                            {
                                "id": a.pair.id or f"line-{a.line}",
                                "line": a.line,
                                "code": rej.code,
                                "message": f"obfuscated: {rej}",
                                "question": a.pair.question,
                                "sql": a.pair.sql,
                            }
                        )
                        continue
            if opts.tool_universe:
                size = universe_size(opts.tool_universe, len(tools))
                tools = reduce_universe(tools, {c.name for c in calls}, size, f"{opts.seed}:{a.pair.id or a.line}")
            if opts.style == "rest":
                endpoints[a.rest["name"]] = a.rest["endpoint"]
            else:
                bindings.update(obfuscate_bindings(a.bindings, mapping) if mapping is not None else a.bindings)
            for t in tools:
                universe.setdefault(t.name, t)
            observations = (
                a.result.observations
                if opts.style != "rest"
                else [{"columns": None, "rows": [list(r) for r in a.rows]}]
            )
            gold = [Step(call=c, observation=o) for c, o in zip(calls, observations)]
            metadata_: dict[str, Any] = {"sql": a.pair.sql, "pair_line": a.line}
            if opts.db_id or a.pair.db_id:
                metadata_["db_id"] = opts.db_id or a.pair.db_id
            bare = Sample(
                id="",
                query=a.pair.question,
                context=a.pair.evidence,
                setup=a.conv.setup if opts.style != "rest" else [],
                gold=gold,
                answer=ExactAnswer(value=[list(r) for r in a.rows], ordered=a.conv.ordered),
                # an imported dataset's own difficulty (BIRD: simple / moderate / challenging) stays a category
                categories=[
                    "nl2api",
                    opts.style,
                    *sorted(a.conv.features),
                    *([f"difficulty:{a.pair.difficulty}"] if a.pair.difficulty and opts.db_id else []),
                ],
                difficulty=a.pair.difficulty or _difficulty(a.conv.features, len(a.conv.calls)),
                provenance=Provenance(
                    source=f"{db_path.name}+{pairs_path.name}",
                    source_id=a.pair.id or f"line-{a.line}",
                    method=f"nl2api.{opts.style}",
                    versions=versions,
                    seed=opts.seed,
                    created_at=created,
                    params=provenance_params,
                ),
                verification=Verification(
                    status="verified",
                    method="execution-match",
                    verified_at=created,
                    checks=[
                        CheckResult(name="sql_executes", ok=True, reason=f"{len(a.rows)} rows"),
                        CheckResult(name="chain_executes", ok=True, reason=f"{len(calls)} calls"),
                        CheckResult(
                            name="result_matches",
                            ok=True,
                            reason="ordered match" if a.conv.ordered else "multiset match",
                        ),
                        *checks_done,
                    ],
                    details={"ordered": a.conv.ordered},
                ),
                metadata=metadata_,
            )
            line, sid = encoder.encode_bytes(bare, tools)
            ids.append(sid)
            yield line

    write_lines(out / "samples.jsonl", lines())
    write_json(out / "tools.json", [t.model_dump(mode="json", exclude_none=True) for t in universe.values()])
    files = ["samples.jsonl", "tools.json"]
    if opts.style != "rest":
        # how each visible tool runs on the SLOT implementations: what an evaluator needs to execute predictions
        write_json(
            out / "toolset.json",
            {
                name: {"tool": b.tool, "fixed": dict(b.fixed), "rename": dict(b.rename)}
                for name, b in sorted(bindings.items())
            },
        )
        files.append("toolset.json")
    if opts.style == "rest":
        write_json(
            out / "endpoints.json",
            endpoints
            if mapping is None
            else {mapping["tools"][k]: rename_endpoint_params(v, mapping["arguments"]) for k, v in endpoints.items()},
        )
        files.append("endpoints.json")
    if mapping is not None:
        write_json(out / "obfuscation.json", mapping)
        files.append("obfuscation.json")
    if opts.copy_db:
        shutil.copyfile(db_path, out / "database.sqlite")
        files.append("database.sqlite")
        if db.descriptions:
            write_json(out / "database.sqlite.descriptions.json", db.descriptions)
            files.append("database.sqlite.descriptions.json")
    counts: dict[str, int] = {}
    for r in rejections:
        counts[r["code"]] = counts.get(r["code"], 0) + 1
    report = {
        "total": total,
        "verified": len(ids),
        "rejected": dict(sorted(counts.items())),
        "verified_rate": round(len(ids) / total, 4) if total else 0.0,
        "style": opts.style,
        "obfuscated": opts.obfuscate,
        "tool_universe": opts.tool_universe,
        "db": str(db_path),
        "pairs": str(pairs_path),
        "seconds": round(time.perf_counter() - started, 3),
        "workers": opts.workers,
        "ray": opts.ray,
        "resumed_pairs": resumed,
        "reasons": {code: REASONS[code] for code in counts},
        "rejections": sorted(rejections, key=lambda r: r["line"]),
        # views of the database that cannot be read (e.g. over a dropped table): not part of the schema
        "skipped_views": dict(db.skipped),
    }
    if opts.db_id:
        report["db_id"] = opts.db_id
    write_json(out / "report.json", report)
    files.append("report.json")
    extra: dict[str, Any] = {"style": opts.style, "obfuscated": opts.obfuscate, "tool_universe": opts.tool_universe}
    if opts.db_id:
        extra["db_id"] = opts.db_id
    manifest = SplitManifest(
        name=opts.name or f"{db_path.stem}-{opts.style}",
        version=opts.version,
        created_at=created,
        description=f"NL2API {opts.style.upper()} split built from {pairs_path.name} over {db_path.name}; "
        "every gold sequence verified by execution against the SQL",
        sample_count=len(ids),
        files={f: file_sha256(out / f) for f in files},
        content_hash=samples_content_hash(ids),
        provenance=Provenance(
            source=str(pairs_path),
            method=f"nl2api.{opts.style}",
            versions=versions,
            seed=opts.seed,
            created_at=created,
            params={"db": str(db_path)},
        ),
        extra=extra,
    )
    write_json(out / "manifest.json", manifest.model_dump(mode="json"))
    return report


def default_pairs_path() -> Path:
    """The embedded question/SQL pairs written for the Chinook database."""
    return Path(__file__).resolve().parent.parent / "data" / "chinook_pairs.jsonl"
