"""Build a split: pairs -> converted, execution-verified samples in SLOT, SEL or REST style."""

from __future__ import annotations

import shutil
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import sqlglot
from pydantic import ConfigDict, Field

from benchsmith.schemas import (
    CheckResult, ExactAnswer, Provenance, Sample, SplitManifest, Step, StrictModel, Tool, ToolCall,
    UserError, Verification, file_sha256, iter_jsonl_lenient, read_json, samples_content_hash, write_json, write_jsonl,
)

from .compare import multiset_equal, ordered_equal
from .converter import REASONS, Rejection, convert
from .database import DESCRIPTIONS_FIX, DESCRIPTIONS_SHAPE, Database
from .rest import column_json_types, make_endpoint, rename_endpoint_params, run_endpoint
from .runtime import Binding, slot_bindings
from .styles import (
    obfuscate_bindings, obfuscate_call, obfuscate_tool, obfuscation_map, reduce_universe, sel_toolset, slot_tools,
    to_sel_call,
)
from .verify import ChainRun, execute_sql, run_and_check

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


@dataclass
class BuildOptions:
    style: Style = "slot"
    obfuscate: bool = False
    tool_universe: int | None = None
    seed: int = 0
    timeout_s: float = 10.0
    copy_db: bool = True
    name: str | None = None
    version: str = "1.0.0"
    descriptions: str | Path | None = None  # JSON {table: {column: text}}; default: <db>.descriptions.json
    allow_empty: bool = False  # write a split even when nothing verifies (default: UserError, out_dir untouched)


@dataclass
class _Accepted:
    line: int
    pair: Pair
    conv: Any
    run: ChainRun  # the proof of verification; nothing is written without one
    calls: list[ToolCall]
    tools: list[Tool]
    bindings: dict[str, Any] = field(default_factory=dict)


def _versions() -> dict[str, str]:
    def v(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "unknown"
    return {"benchsmith": v("benchsmith"), "sqlglot": sqlglot.__version__ if hasattr(sqlglot, "__version__") else v("sqlglot"),
            "sqlite": sqlite3.sqlite_version}


def _difficulty(features: set[str], n_calls: int) -> str:
    if "nested" in features or n_calls >= 7:
        return "challenging"
    if features & {"join", "group", "case", "arithmetic", "function"} or n_calls >= 4:
        return "moderate"
    return "simple"


def build_split(db_path: str | Path, pairs_path: str | Path, out_dir: str | Path,
                options: BuildOptions | None = None) -> dict[str, Any]:
    """Convert and verify every pair; write ``samples.jsonl``, ``tools.json``, ``report.json``,
    ``manifest.json`` (and ``endpoints.json`` for REST) to ``out_dir``. Returns the report."""
    opts = options or BuildOptions()
    if opts.style not in STYLES:
        raise UserError(f"unknown style {opts.style!r}", fix=f"use one of {', '.join(STYLES)}")
    started = time.perf_counter()
    descriptions = read_json(opts.descriptions, DESCRIPTIONS_SHAPE, fix=DESCRIPTIONS_FIX) if opts.descriptions else None
    db = Database(db_path, timeout_s=opts.timeout_s, descriptions=descriptions)
    rows, bad_rows = iter_jsonl_lenient(pairs_path, Pair)
    out = Path(out_dir)
    rejections: list[dict[str, Any]] = [
        {"id": None, "line": e.line, "code": "invalid_row", "message": e.message} for e in bad_rows]
    accepted: list[_Accepted] = []
    seen: set[str] = set()
    taken_names: set[str] = set()
    endpoints: dict[str, Any] = {}
    for line, pair in rows:
        pid = pair.id or f"line-{line}"
        try:
            if pid in seen:
                raise Rejection("duplicate_id", f"id {pid} appears more than once")
            seen.add(pid)
            conv = _convert_safely(db, pair.sql)  # parses first: only SQL the converter took is executed
            expected = execute_sql(db, pair.sql)
            if not expected:
                raise Rejection("empty_result", "the SQL returns no rows")
            run = run_and_check(db, conv.setup, conv.calls, expected, conv.ordered, observe=True, sql=pair.sql)
            accepted.append(_style(db, opts, line, pair, conv, run, expected, taken_names, endpoints))
        except Rejection as rej:
            rejections.append({"id": pid, "line": line, "code": rej.code, "message": str(rej),
                               "question": pair.question, "sql": pair.sql})
    if opts.style == "rest":
        universe = [a.tools[0] for a in accepted]
        for a in accepted:
            a.tools = universe
    mapping = obfuscation_map([t for a in accepted for t in a.tools]) if opts.obfuscate else None
    created = datetime.now(timezone.utc)
    versions = _versions()
    samples: list[Sample] = []
    for a in accepted:
        calls, tools = a.calls, a.tools
        if mapping is not None:
            calls = [obfuscate_call(c, mapping) for c in calls]
            tools = [obfuscate_tool(t, mapping) for t in tools]
            if opts.style != "rest":  # prove the obfuscated sequence still runs and matches
                try:
                    run_and_check(db, a.conv.setup, calls, a.run.rows, a.conv.ordered,
                                  bindings=obfuscate_bindings(a.bindings, mapping), sql=a.pair.sql)
                except Rejection as rej:
                    rejections.append({"id": a.pair.id or f"line-{a.line}", "line": a.line, "code": rej.code,
                                       "message": f"obfuscated: {rej}", "question": a.pair.question, "sql": a.pair.sql})
                    continue
        if opts.tool_universe:
            tools = reduce_universe(tools, {c.name for c in calls}, opts.tool_universe, f"{opts.seed}:{a.pair.id or a.line}")
        observations = a.run.observations if opts.style != "rest" else [
            {"columns": None, "rows": [list(r) for r in a.run.rows]}]
        gold = [Step(call=c, observation=o) for c, o in zip(calls, observations)]
        samples.append(Sample(
            query=a.pair.question, context=a.pair.evidence, tools=tools,
            setup=a.conv.setup if opts.style != "rest" else [],
            gold=gold,
            answer=ExactAnswer(value=[list(r) for r in a.run.rows], ordered=a.conv.ordered),
            categories=["nl2api", opts.style, *sorted(a.conv.features)],
            difficulty=a.pair.difficulty or _difficulty(a.conv.features, len(a.conv.calls)),
            provenance=Provenance(source=f"{Path(db_path).name}+{Path(pairs_path).name}", source_id=a.pair.id or f"line-{a.line}",
                                  method=f"nl2api.{opts.style}", versions=versions, seed=opts.seed, created_at=created,
                                  params={"obfuscate": opts.obfuscate, "tool_universe": opts.tool_universe}),
            verification=Verification(status="verified", method="execution-match", verified_at=created, checks=[
                CheckResult(name="sql_executes", ok=True, reason=f"{len(a.run.rows)} rows"),
                CheckResult(name="chain_executes", ok=True, reason=f"{len(calls)} calls"),
                CheckResult(name="result_matches", ok=True,
                            reason="ordered match" if a.conv.ordered else "multiset match"),
                CheckResult(name="limit_deterministic", ok=True, reason="no ties across LIMIT")],
                details={"ordered": a.conv.ordered}),
            metadata={"sql": a.pair.sql, "pair_line": a.line},
        ))
    if not samples and not opts.allow_empty:
        codes: dict[str, int] = {}
        for r in rejections:
            codes[r["code"]] = codes.get(r["code"], 0) + 1
        why = ", ".join(f"{k}={v}" for k, v in sorted(codes.items())) or "the pairs file has no rows"
        raise UserError(f"nothing verified: 0 of {len(rows) + len(bad_rows)} pairs in {pairs_path} verified "
                        f"(rejected: {why}); {out} was left untouched",
                        fix="check --pairs (JSONL of {question, sql}) and --db")
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "samples.jsonl", samples)
    universe: dict[str, Tool] = {}
    for s in samples:
        for t in s.tools:
            universe.setdefault(t.name, t)
    write_json(out / "tools.json", [t.model_dump(mode="json", exclude_none=True) for t in universe.values()])
    files = ["samples.jsonl", "tools.json"]
    if opts.style != "rest":
        # how each visible tool runs on the SLOT implementations: what an evaluator needs to execute predictions
        bindings: dict[str, Binding] = {}
        for a in accepted:
            bindings.update(obfuscate_bindings(a.bindings, mapping) if mapping is not None else a.bindings)
        write_json(out / "toolset.json", {name: {"tool": b.tool, "fixed": dict(b.fixed), "rename": dict(b.rename)}
                                          for name, b in sorted(bindings.items())})
        files.append("toolset.json")
    if opts.style == "rest":
        write_json(out / "endpoints.json", endpoints if mapping is None else {
            mapping["tools"][k]: rename_endpoint_params(v, mapping["arguments"]) for k, v in endpoints.items()})
        files.append("endpoints.json")
    if mapping is not None:
        write_json(out / "obfuscation.json", mapping)
        files.append("obfuscation.json")
    if opts.copy_db:
        tmp = out / "database.sqlite.tmp"
        shutil.copyfile(db_path, tmp)
        tmp.replace(out / "database.sqlite")
        files.append("database.sqlite")
        if db.descriptions:
            write_json(out / "database.sqlite.descriptions.json", db.descriptions)
            files.append("database.sqlite.descriptions.json")
    counts: dict[str, int] = {}
    for r in rejections:
        counts[r["code"]] = counts.get(r["code"], 0) + 1
    total = len(rows) + len(bad_rows)
    report = {
        "total": total, "verified": len(samples), "rejected": dict(sorted(counts.items())),
        "verified_rate": round(len(samples) / total, 4) if total else 0.0,
        "style": opts.style, "obfuscated": opts.obfuscate, "tool_universe": opts.tool_universe,
        "db": str(db_path), "pairs": str(pairs_path), "seconds": round(time.perf_counter() - started, 3),
        "reasons": {code: REASONS[code] for code in counts},
        "rejections": sorted(rejections, key=lambda r: r["line"]),
        # views of the database that cannot be read (e.g. over a dropped table): not part of the schema
        "skipped_views": dict(db.skipped),
    }
    write_json(out / "report.json", report)
    files.append("report.json")
    manifest = SplitManifest(
        name=opts.name or f"{Path(db_path).stem}-{opts.style}", version=opts.version, created_at=created,
        description=f"NL2API {opts.style.upper()} split built from {Path(pairs_path).name} over {Path(db_path).name}; "
                    "every gold sequence verified by execution against the SQL",
        sample_count=len(samples), files={f: file_sha256(out / f) for f in files},
        content_hash=samples_content_hash([s.id for s in samples]),
        provenance=Provenance(source=str(pairs_path), method=f"nl2api.{opts.style}", versions=versions,
                              seed=opts.seed, created_at=created, params={"db": str(db_path)}),
        extra={"style": opts.style, "obfuscated": opts.obfuscate, "tool_universe": opts.tool_universe},
    )
    write_json(out / "manifest.json", manifest.model_dump(mode="json"))
    db.close()
    return report


def _convert_safely(db: Database, sql: str) -> Any:
    """Convert; a converter crash on one pair becomes that pair's rejection, not the batch's end.
    The SQL of a pair the converter refused or crashed on is never executed."""
    try:
        return convert(db, sql)
    except Rejection:
        raise
    except Exception as exc:  # noqa: BLE001 - any converter fault is contained to its pair
        if isinstance(exc, (KeyboardInterrupt, MemoryError)):
            raise
        raise Rejection("unsupported_expression", f"converter failed: {type(exc).__name__}: {exc}") from None


def _style(db: Database, opts: BuildOptions, line: int, pair: Pair, conv: Any, run: ChainRun,
           expected: list[tuple], taken: set[str], endpoints: dict[str, Any]) -> _Accepted:
    if opts.style == "slot":
        return _Accepted(line, pair, conv, run, list(conv.calls), slot_tools(run.columns, run.descriptions),
                         slot_bindings())
    if opts.style == "sel":
        tools, bindings = sel_toolset(run.columns, run.descriptions)
        calls = [to_sel_call(c) for c in conv.calls]
        sel_run = run_and_check(db, conv.setup, calls, expected, conv.ordered, bindings=bindings, observe=True,
                                sql=pair.sql)
        return _Accepted(line, pair, conv, sel_run, calls, tools, bindings)
    tool, endpoint, gold_args = make_endpoint(conv, taken, column_json_types(db, conv.setup))
    result = run_endpoint(db, endpoint, gold_args)
    rest_rows = [tuple(r) for r in result["rows"]]
    # the endpoint must reproduce the SQL's answer with the gold arguments
    same = ordered_equal(expected, rest_rows) if conv.ordered else multiset_equal(expected, rest_rows)
    if not same:
        taken.discard(tool.name)
        raise Rejection("result_mismatch", "REST endpoint result differs from the SQL")
    endpoints[tool.name] = endpoint
    call = ToolCall(name=tool.name, arguments=gold_args, label="result_1")
    return _Accepted(line, pair, conv, run, [call], [tool])


def default_pairs_path() -> Path:
    """The embedded question/SQL pairs written for the Chinook database."""
    return Path(__file__).resolve().parent.parent / "data" / "chinook_pairs.jsonl"
