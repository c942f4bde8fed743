"""Per-pair work of a build: convert, verify by execution, and the style's own verified form.

:func:`process_pair` is pure apart from reading the database, and its result is plain data, so
the same function runs in the build's own process, in a process pool (``--workers N``) or as Ray
tasks (``--ray ADDRESS``); each worker opens the database read-only where it runs. Results are
appended to the build's journal (``.journal.jsonl`` in the output folder) as they arrive, so a
killed build resumes with the pairs it has not finished.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import sqlglot

from benchsmith.schemas import ToolCall, UserError, append_jsonl, file_sha256

from .compare import multiset_equal, ordered_equal
from .converter import convert
from .database import Database
from .reasons import Rejection
from .rest import column_json_types, make_endpoint, run_endpoint
from .styles import sel_toolset, to_sel_call, uses_extended
from .verify import execute_sql, run_and_check

JOURNAL = ".journal.jsonl"
PENDING = ".journal.pending.jsonl"
JOURNAL_VERSION = 1
BATCH = 32  # pairs per task sent to a worker


# ---- plain-data encoding (JSON journal; bytes and non-finite floats survive) ---------------------
def encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$bytes"}:
            return base64.b64decode(value["$bytes"])
        if set(value) == {"$float"}:
            return float(value["$float"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


# ---- one pair ---------------------------------------------------------------------------------------
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


def _dump_calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json") for c in calls]


def process_pair(db: Database, style: str, line: int, pair: dict[str, Any]) -> dict[str, Any]:
    """Convert and verify one pair (``Pair`` fields as a dict) in ``style``. Returns plain data:
    ``{"line", "status": "accepted", ...}`` with everything the split needs, or ``{"line",
    "status": "rejected", "code", "message"}``."""
    try:
        conv = _convert_safely(db, pair["sql"])
        expected = execute_sql(db, pair["sql"])
        if not expected:
            raise Rejection("empty_result", "the SQL returns no rows")
        run = run_and_check(db, conv.setup, conv.calls, expected, conv.ordered, observe=True, sql=pair["sql"])
        out: dict[str, Any] = {
            "line": line, "status": "accepted",
            "conv": {"setup": _dump_calls(conv.setup), "calls": _dump_calls(conv.calls), "ordered": conv.ordered,
                     "features": sorted(conv.features)},
            "rows": [list(r) for r in run.rows], "observations": run.observations, "columns": run.columns,
            "descriptions": run.descriptions, "extended": uses_extended(conv.calls), "calls": _dump_calls(conv.calls),
        }
        if style == "sel":
            _, bindings = sel_toolset(run.columns, run.descriptions, extended=True)
            calls = [to_sel_call(c) for c in conv.calls]
            sel_run = run_and_check(db, conv.setup, calls, expected, conv.ordered, bindings=bindings, observe=True,
                                    sql=pair["sql"])
            out.update(calls=_dump_calls(calls), observations=sel_run.observations, rows=[list(r) for r in sel_run.rows])
        elif style == "rest":
            tool, endpoint, gold_args = make_endpoint(conv, set(), column_json_types(db, conv.setup))
            result = run_endpoint(db, endpoint, gold_args)
            rest_rows = [tuple(r) for r in result["rows"]]
            # the endpoint must reproduce the SQL's answer with the gold arguments
            same = ordered_equal(expected, rest_rows) if conv.ordered else multiset_equal(expected, rest_rows)
            if not same:
                raise Rejection("result_mismatch", "REST endpoint result differs from the SQL")
            out.update(rest={"tool": tool.model_dump(mode="json", exclude_none=True), "endpoint": endpoint,
                             "args": gold_args})
        return out
    except Rejection as rej:
        return {"line": line, "status": "rejected", "code": rej.code, "message": str(rej)}


# ---- workers ----------------------------------------------------------------------------------------
_OPEN: dict[tuple[str, float, str], Database] = {}


def worker_db(path: str, timeout_s: float, descriptions_json: str | None) -> Database:
    """The database of a worker process (opened read-only once per process and kept)."""
    key = (path, timeout_s, descriptions_json or "")
    if key not in _OPEN:
        _OPEN[key] = Database(path, timeout_s=timeout_s,
                              descriptions=json.loads(descriptions_json) if descriptions_json else None)
    return _OPEN[key]


def process_batch(path: str, timeout_s: float, descriptions_json: str | None, style: str,
                  items: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """A batch of pairs in a worker: results in the batch's order, as plain (journal) data."""
    db = worker_db(path, timeout_s, descriptions_json)
    return [process_pair(db, style, line, pair) for line, pair in items]


def _batches(items: Sequence[tuple[int, dict[str, Any]]], size: int) -> list[list[tuple[int, dict[str, Any]]]]:
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def run_serial(db: Database, style: str, items: Sequence[tuple[int, dict[str, Any]]]) -> Iterator[dict[str, Any]]:
    for line, pair in items:
        yield process_pair(db, style, line, pair)


def run_pool(path: str, timeout_s: float, descriptions_json: str | None, style: str,
             items: Sequence[tuple[int, dict[str, Any]]], workers: int) -> Iterator[dict[str, Any]]:
    """The pairs in ``workers`` spawned processes; results come back in input order."""
    import multiprocessing as mp
    from functools import partial

    fn = partial(process_batch, path, timeout_s, descriptions_json, style)
    with mp.get_context("spawn").Pool(workers) as pool:
        for batch in pool.imap(fn, _batches(items, BATCH)):
            yield from batch


def run_ray(address: str, path: str, timeout_s: float, descriptions_json: str | None, style: str,
            items: Sequence[tuple[int, dict[str, Any]]], workers: int) -> Iterator[dict[str, Any]]:
    """The pairs as Ray tasks (``address``: ``local`` starts a local Ray instance with ``workers``
    CPUs, ``auto`` joins the running cluster, else a cluster address). Each task opens the database
    read-only on the node it runs on, so ``path`` must exist there (a shared file system). Results
    come back in input order."""
    try:
        import ray
    except ImportError:
        raise UserError("--ray needs Ray, which is not installed", fix="pip install 'benchsmith[ray]'") from None
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if address == "local":
            kwargs["num_cpus"] = max(1, workers)
        else:
            kwargs["address"] = address
        ray.init(**kwargs)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(process_batch)
        pending = [remote.remote(path, timeout_s, descriptions_json, style, batch) for batch in _batches(items, BATCH)]
        for ref in pending:
            yield from ray.get(ref)
    finally:
        if started:
            ray.shutdown()


# ---- the journal ------------------------------------------------------------------------------------
def fingerprint(db_path: Path, pairs_path: Path, style: str, timeout_s: float, descriptions: Any) -> dict[str, Any]:
    """What a journal's results depend on: a journal written for other inputs is not reused."""
    st = db_path.stat()
    try:
        version = metadata.version("benchsmith")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {"journal": JOURNAL_VERSION, "style": style, "timeout_s": timeout_s,
            "db": {"path": str(db_path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns},
            "pairs": file_sha256(pairs_path),
            "descriptions": hashlib.sha256(json.dumps(descriptions, sort_keys=True).encode()).hexdigest()
            if descriptions else None,
            "benchsmith": version, "sqlglot": getattr(sqlglot, "__version__", "unknown")}


class Journal:
    """Append-only record of finished pairs: a header line with the inputs' fingerprint, then one
    line per pair. A build in progress writes ``<out>/.journal.pending.jsonl``; a finished build
    turns it into ``<out>/.journal.jsonl`` (:meth:`finish`), so a build that fails leaves an existing
    split folder as it was (:meth:`discard`). Either file, written for the same inputs, is resumed."""

    def __init__(self, out: Path, fp: dict[str, Any]) -> None:
        self.final = out / JOURNAL
        self.path = out / PENDING
        self.done: dict[int, dict[str, Any]] = {}
        self._n = 0
        for candidate in (self.final, self.path):
            if candidate.is_file() and self._load(candidate, fp):
                self.path = candidate
                return
        out.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)  # a pending journal of other inputs
        append_jsonl(self.path, {"fingerprint": fp})

    def _load(self, path: Path, fp: dict[str, Any]) -> bool:
        lines = path.read_text("utf-8", errors="replace").splitlines()
        try:
            head = json.loads(lines[0]) if lines else None
        except json.JSONDecodeError:
            head = None
        if head != {"fingerprint": fp}:
            return False
        for text in lines[1:]:
            try:
                rec = json.loads(text)
            except json.JSONDecodeError:
                continue  # a line cut by a kill: that pair runs again
            if isinstance(rec, dict) and isinstance(rec.get("line"), int):
                self.done[rec["line"]] = decode(rec)
        return True

    def add(self, record: dict[str, Any]) -> None:
        self._n += 1
        try:
            append_jsonl(self.path, record, fsync=self._n % 200 == 0)
        except (TypeError, ValueError):  # a blob or a non-finite float in the rows: write it tagged
            append_jsonl(self.path, encode(record), fsync=self._n % 200 == 0)
        self.done[record["line"]] = record

    def finish(self) -> None:
        """The build's split is written: keep this journal as the folder's journal."""
        if self.path != self.final:
            self.path.replace(self.final)
            self.path = self.final

    def discard(self) -> None:
        """The build failed: remove what it started (an earlier build's journal stays)."""
        if self.path != self.final:
            self.path.unlink(missing_ok=True)


def run_pairs(journal: Journal, items: Sequence[tuple[int, dict[str, Any]]], run: Callable[[Sequence], Iterable[dict]],
              progress: Callable[[int], None] | None = None) -> dict[int, dict[str, Any]]:
    """Run the pairs the journal has not finished with ``run`` and journal each result; returns
    every pair's result by line (decoded)."""
    todo = [(line, pair) for line, pair in items if line not in journal.done]
    for rec in run(todo):
        journal.add(rec)
        if progress is not None:
            progress(1)
    return dict(journal.done)
