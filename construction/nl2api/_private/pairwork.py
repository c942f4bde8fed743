"""Per-pair work of a build: convert, verify by execution, and the style's own verified form.

:func:`process_pair` is pure apart from reading the database, and its result is plain data, so
the same function runs in the build's own process, in a process pool (``--workers N``) or as Ray
tasks (``--ray ADDRESS``); each worker opens the database read-only where it runs. Results are
appended to the build's journal (``.journal.jsonl`` in the output folder) as they arrive, so a
killed build resumes with the pairs it has not finished.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from importlib import metadata
from itertools import islice
from pathlib import Path
from typing import Any, Awaitable, Callable, ContextManager, Iterable, Iterator, Sequence

import orjson
import sqlglot
from pydantic import ValidationError

from benchsmith.schemas import (
    PairAccepted,
    PairConversion,
    PairJournalHead,
    PairRejected,
    ToolCall,
    UserError,
    append_jsonl,
    appended_line,
    dumps_json,
    pair_record,
    run_items,
)

from .compare import multiset_equal, ordered_equal
from .converter import Conversion, convert
from .database import Database, QueryTimeout
from .jsonvalues import TAGS, first_tagged, from_json_value, json_value
from .reasons import Rejection
from .relation import ToolError
from .rest import column_json_types, make_endpoint, run_endpoint
from .styles import sel_toolset, to_sel_call, uses_extended
from .verify import execute_sql, run_and_check

JOURNAL = ".journal.jsonl"
PENDING = ".journal.pending.jsonl"
JOURNAL_VERSION = 4  # 4: answers and observations JSON cannot carry are rejected; 3: REST tool descriptions state every step; 2: written with orjson, ints beyond 64 bits tagged ("$int")
BATCH = 32  # pairs per task sent to a worker
_TAG_BYTES = tuple(f'"{tag}"'.encode() for tag in TAGS)  # a journal line holding a tagged value


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


def _where(path: tuple) -> str:
    """A place in an answer or observation, in words: rows are counted from 1."""
    if path[:1] == ("rows",):
        path = path[1:]
    if len(path) == 2 and all(isinstance(p, int) for p in path):
        return f" (row {path[0] + 1}, value {path[1] + 1})"
    return f" (at {'/'.join(map(str, path))})" if path else ""


def _check_json(rows: list[Any], observations: list[Any]) -> None:
    """Samples carry JSON: an answer or observation holding bytes that are not UTF-8 text, or an
    infinite or NaN number, is rejected here, before anything is encoded (JSON would have no word
    for it: the sample would not be written, or would say null where SQL says inf). UTF-8 bytes
    are fine: a sample holds their text."""
    places = [("the answer", rows), *((f"step {i}'s observation", o) for i, o in enumerate(observations, 1))]
    for what, value in places:
        found = first_tagged(value)
        if found is None:
            continue
        path, bad = found
        if isinstance(bad, bytes):
            raise Rejection(
                "binary_value",
                f"{what} holds binary data that is not UTF-8 text{_where(path)}: "
                f"{len(bad)} bytes starting {bad[:8].hex()}; samples carry JSON",
            )
        raise Rejection(
            "non_finite_value",
            f"{what} holds the number {bad!r}{_where(path)}, which JSON cannot carry; samples carry JSON",
        )


def _dump_calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json") for c in calls]


def process_pair(
    db: Database, style: str, line: int, pair: dict[str, Any], *, converted: Conversion | Rejection | None = None
) -> PairAccepted | PairRejected:
    """Convert and verify one pair (``Pair`` fields as a dict) in ``style``: a :class:`PairAccepted`
    with everything the split needs, or a :class:`PairRejected` saying why not. ``converted`` is the
    pair's conversion (or the rejection it gave) when it was made beforehand."""
    try:
        conv = _convert_safely(db, pair["sql"]) if converted is None else converted
        if isinstance(conv, Rejection):
            raise conv
        expected = execute_sql(db, pair["sql"])
        if not expected:
            raise Rejection("empty_result", "the SQL returns no rows")
        run = run_and_check(db, conv.setup, conv.calls, expected, conv.ordered, observe=True, sql=pair["sql"])
        dumped = _dump_calls(conv.calls)
        out: dict[str, Any] = {  # built as plain data first: SEL and REST replace or add fields
            "line": line,
            "status": "accepted",
            "conv": {
                "setup": _dump_calls(conv.setup),
                "calls": dumped,
                "ordered": conv.ordered,
                "features": sorted(conv.features),
            },
            "rows": [list(r) for r in run.rows],
            "observations": run.observations,
            "columns": run.columns,
            "descriptions": run.descriptions,
            "extended": uses_extended(conv.calls),
            "calls": dumped,
        }
        if style == "sel":
            _, bindings = sel_toolset(run.columns, run.descriptions, extended=True)
            calls = [to_sel_call(c) for c in conv.calls]
            sel_run = run_and_check(
                db, conv.setup, calls, expected, conv.ordered, bindings=bindings, observe=True, sql=pair["sql"]
            )
            out.update(
                calls=_dump_calls(calls), observations=sel_run.observations, rows=[list(r) for r in sel_run.rows]
            )
        # a REST sample's only observation is its answer
        _check_json(out["rows"], [] if style == "rest" else out["observations"])
        if style == "rest":
            tool, endpoint, gold_args = make_endpoint(conv, set(), column_json_types(db, conv.setup))
            try:
                result = run_endpoint(db, endpoint, gold_args)
            except (ToolError, QueryTimeout) as exc:  # e.g. a gold value over the REST argument caps
                raise Rejection("tool_error", f"REST endpoint: {str(exc)[:300]}") from None
            rest_rows = [tuple(r) for r in result["rows"]]
            # the endpoint must reproduce the SQL's answer with the gold arguments
            same = ordered_equal(expected, rest_rows) if conv.ordered else multiset_equal(expected, rest_rows)
            if not same:
                raise Rejection("result_mismatch", "REST endpoint result differs from the SQL")
            out.update(
                rest={"tool": tool.model_dump(mode="json", exclude_none=True), "endpoint": endpoint, "args": gold_args}
            )
        # trusted: built just above from the converter's and the database's own values
        return PairAccepted.model_construct(**{**out, "conv": PairConversion.model_construct(**out["conv"])})
    except Rejection as rej:
        return PairRejected(line=line, status="rejected", code=rej.code, message=str(rej))


# ---- workers ----------------------------------------------------------------------------------------
_OPEN: dict[tuple[str, float, str], Database] = {}


def worker_db(path: str, timeout_s: float, descriptions_json: str | None) -> Database:
    """The database of a worker process (opened read-only once per process and kept)."""
    key = (path, timeout_s, descriptions_json or "")
    if key not in _OPEN:
        _OPEN[key] = Database(
            path, timeout_s=timeout_s, descriptions=json.loads(descriptions_json) if descriptions_json else None
        )
    return _OPEN[key]


def process_batch(
    path: str, timeout_s: float, descriptions_json: str | None, style: str, items: list[tuple[int, dict[str, Any]]]
) -> list[PairAccepted | PairRejected]:
    """A batch of pairs in a worker: results in the batch's order."""
    return list(_phased(worker_db(path, timeout_s, descriptions_json), style, items))


def _attempt(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Rejection as rej:
        return rej


def _phased(db: Database, style: str, batch: list[tuple[int, dict[str, Any]]]) -> Iterator[PairAccepted | PairRejected]:
    """A batch's pairs converted first, all of them, then verified one by one: the parser's code
    and data stay in the CPU's caches (parsing a pair took 0.085 ms in a loop of parses and 0.195
    ms between verifications on 2 cores, Nov 2026). The results are the same as pair by pair; only
    conversions are held (the SQL's rows are read pair by pair, so memory stays as it was)."""
    convs = [_attempt(_convert_safely, db, pair["sql"]) for _, pair in batch]
    for (line, pair), conv in zip(batch, convs):
        yield process_pair(db, style, line, pair, converted=conv)


def _batches(items: Iterable[tuple[int, dict[str, Any]]], size: int) -> Iterator[list[tuple[int, dict[str, Any]]]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


Work = Callable[[list[tuple[int, dict[str, Any]]]], Awaitable[list[PairAccepted | PairRejected]]]
"""Where a batch of pairs runs: a batch in, its results (in the batch's order) out."""


@contextlib.contextmanager
def in_process(db: Database, style: str) -> Iterator[tuple[Work, int]]:
    """The pairs in the build's own process, one batch at a time."""

    async def work(batch: list[tuple[int, dict[str, Any]]]) -> list[PairAccepted | PairRejected]:
        return list(_phased(db, style, batch))

    yield work, 1


@contextlib.contextmanager
def in_pool(
    path: str, timeout_s: float, descriptions_json: str | None, style: str, workers: int
) -> Iterator[tuple[Work, int]]:
    """The pairs in ``workers`` spawned processes, two batches per worker in flight."""
    import asyncio
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    fn = partial(process_batch, path, timeout_s, descriptions_json, style)
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:

        async def work(batch: list[tuple[int, dict[str, Any]]]) -> list[PairAccepted | PairRejected]:
            return await asyncio.get_running_loop().run_in_executor(pool, fn, batch)

        yield work, 2 * workers


@contextlib.contextmanager
def on_ray(
    address: str, path: str, timeout_s: float, descriptions_json: str | None, style: str, workers: int
) -> Iterator[tuple[Work, int]]:
    """The pairs as Ray tasks (``address``: ``local`` starts a local Ray instance with ``workers``
    CPUs, ``auto`` joins the running cluster, else a cluster address), four batches per CPU in
    flight. Each task opens the database read-only on the node it runs on, so ``path`` must exist
    there (a shared file system)."""
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
        cpus = max(1, int(ray.cluster_resources().get("CPU", workers)))

        async def work(batch: list[tuple[int, dict[str, Any]]]) -> list[PairAccepted | PairRejected]:
            return await remote.remote(path, timeout_s, descriptions_json, style, batch)

        yield work, 4 * cpus
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
    return {
        "journal": JOURNAL_VERSION,
        "style": style,
        "timeout_s": timeout_s,
        "db": {"path": str(db_path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns},
        "pairs": pairs_sha256(pairs_path),
        "descriptions": hashlib.sha256(json.dumps(descriptions, sort_keys=True).encode()).hexdigest()
        if descriptions
        else None,
        "benchsmith": version,
        "sqlglot": getattr(sqlglot, "__version__", "unknown"),
    }


def pairs_sha256(path: Path) -> str:
    """The pairs file's SHA-256 (as ``file_sha256`` gives it). Read once, before a build makes
    anything: a file that cannot be read, or a line that is not UTF-8, is a ``UserError`` here
    rather than halfway through the build."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for line, raw in enumerate(fh, 1):
                digest.update(raw)
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise UserError(
                        f"{path}:{line}: not UTF-8 text (bad byte at column {exc.start + 1})",
                        fix="re-save the pairs file as UTF-8",
                    ) from None
    except OSError as exc:
        raise UserError(
            f"{path}: cannot read: {exc.strerror or exc}", fix="check the pairs file's path and permissions"
        ) from None
    return "sha256:" + digest.hexdigest()


def _dumps_record(model: PairAccepted | PairRejected) -> bytes:
    """One journal line: the record's fields as given (``rest`` only for REST). orjson writes most
    records; it turns NaN and infinities into null and refuses bytes, ints beyond 64 bits and lone
    surrogates, so a record holding a null is read back and compared, and any other record goes
    through the tagged, escaped writer; either reads back to the same values (:func:`_read_record`)."""
    record = model.model_dump(exclude_unset=True)
    try:
        data = orjson.dumps(record)
        if b"null" not in data or orjson.loads(data) == record:
            return data + b"\n"
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        pass
    return (dumps_json(json_value(record, exact=True), allow_nan=False) + "\n").encode("utf-8")


def _read_record(raw: bytes) -> PairAccepted | PairRejected | None:
    """One journal line as its record; None for a line that is not one (cut by a kill: that pair
    runs again)."""
    if not raw.endswith(b"\n"):
        return None
    try:
        rec = orjson.loads(raw)
    except orjson.JSONDecodeError:  # a lone surrogate, written escaped by the fallback
        try:
            rec = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
    tagged = any(tag in raw for tag in _TAG_BYTES)
    try:
        return pair_record(from_json_value(rec) if tagged else rec)  # tags are rare: skip the walk
    except ValidationError:
        return None


class PairJournal:
    """Append-only record of finished pairs: a header line with the inputs' fingerprint, then one
    line per pair. A build in progress writes ``<out>/.journal.pending.jsonl``; a finished build
    turns it into ``<out>/.journal.jsonl`` (:meth:`finish`), so a build that fails on bad input
    leaves an existing split folder as it was (:meth:`discard`, :meth:`abandon`), and one that is
    killed leaves its pending journal to resume from. Either file, written for the same inputs, is
    resumed.

    Only an index is held in memory (each pair's line -> where its record starts in the file, the
    lines rejected, whether any accepted sequence needs the extended tools); :meth:`get` reads a
    record back, so memory stays flat however many pairs a build has."""

    def __init__(self, out: Path, fp: dict[str, Any]) -> None:
        self.final = out / JOURNAL
        self.path = out / PENDING
        self.done: dict[int, int] = {}  # line -> byte offset of its record
        self.rejected: set[int] = set()
        self.extended = False
        self._n = 0
        self._reader: Any = None
        self.created = False  # this build started the pending journal (see abandon)
        for candidate in (self.final, self.path):
            if candidate.is_file() and self._load(candidate, fp):
                self.path = candidate
                break
        else:
            out.mkdir(parents=True, exist_ok=True)
            self.path.unlink(missing_ok=True)  # a pending journal of other inputs
            append_jsonl(self.path, PairJournalHead(fingerprint=fp))
            self.created = True
        self._writer = open(self.path, "ab")  # noqa: SIM115 - closed in close()

    def _load(self, path: Path, fp: dict[str, Any]) -> bool:
        with open(path, "rb") as fh:
            first = fh.readline()
            head = appended_line(first, PairJournalHead) if first.endswith(b"\n") else None
            if head is None or head.fingerprint != fp:
                return False
            offset = fh.tell()
            for raw in fh:
                at, offset = offset, offset + len(raw)
                rec = _read_record(raw)
                if rec is not None:
                    self._note(rec, at)
        if not path.read_bytes()[-1:] == b"\n":
            with open(path, "ab") as fh:
                fh.write(b"\n")  # the next record starts on its own line
        return True

    def _note(self, rec: PairAccepted | PairRejected, at: int) -> None:
        self.done[rec.line] = at
        if isinstance(rec, PairAccepted):
            self.rejected.discard(rec.line)
            self.extended = self.extended or rec.extended
        else:
            self.rejected.add(rec.line)

    def add(self, record: PairAccepted | PairRejected) -> None:
        self._n += 1
        data = _dumps_record(record)
        at = self._writer.tell()
        self._writer.write(data)
        self._writer.flush()
        if self._n % 200 == 0:
            os.fsync(self._writer.fileno())
        self._note(record, at)

    def get(self, line: int) -> PairAccepted | PairRejected:
        """The record of ``line``."""
        if self._reader is None:
            self._writer.flush()
            self._reader = open(self.path, "rb")  # noqa: SIM115 - closed in close()
        self._reader.seek(self.done[line])
        rec = _read_record(self._reader.readline())
        assert rec is not None, f"{self.path} changed while the build read it"
        return rec

    def close(self) -> None:
        for fh in (self._reader, self._writer):
            if fh is not None:
                fh.close()
        self._reader = None

    def link_into(self, folder: Path) -> None:
        """Give ``folder`` (a split about to be swapped in) this journal as its ``.journal.jsonl``."""
        self._writer.flush()
        os.fsync(self._writer.fileno())
        target = folder / JOURNAL
        try:
            os.link(self.path, target)
        except OSError:
            shutil.copyfile(self.path, target)

    def finish(self) -> None:
        """The build's split is written: keep this journal as the folder's journal."""
        self.close()
        if self.path != self.final and self.path.exists():
            self.path.replace(self.final)
            self.path = self.final

    def discard(self) -> None:
        """The build failed: remove what it started (an earlier build's journal stays)."""
        self.close()
        if self.path != self.final:
            self.path.unlink(missing_ok=True)

    def abandon(self) -> None:
        """The build failed on bad input: remove the pending journal if this build started it, so
        an existing split is left as it was. One resumed from an earlier, killed build of the same
        inputs keeps what it holds (nothing done is lost); a kill or an interrupt keeps either."""
        self.close()
        if self.created:
            self.path.unlink(missing_ok=True)


def run_pairs(
    journal: PairJournal,
    items: Iterable[tuple[int, dict[str, Any]]],
    runner: ContextManager[tuple[Work, int]],
    progress: Callable[[int], None] | None = None,
) -> None:
    """Run the pairs the journal has not finished, :data:`BATCH` at a time, where ``runner`` says
    (:func:`in_process`, :func:`in_pool`, :func:`on_ray`), through the one job driver
    (:func:`~benchsmith.schemas.run_items`): the pairs are read as the work goes and each result is
    journaled in input order, so the journal is the same however the pairs ran."""
    import asyncio

    def journaled(_: list[tuple[int, dict[str, Any]]], records: list[PairAccepted | PairRejected]) -> None:
        for rec in records:
            journal.add(rec)
            if progress is not None:
                progress(1)

    todo = ((line, pair) for line, pair in items if line not in journal.done)
    with runner as (work, in_flight):
        asyncio.run(run_items(_batches(todo, BATCH), work, concurrency=in_flight, done=journaled, in_order=True))
