"""The scoring core shared by every benchmark: cases, record results, registries, runs.

A benchmark plugs in as a class registered with :func:`benchmark`; its leaf checks are pure
functions registered with :func:`scorer`. Scoring a record never raises: garbage model
output becomes a failed record with an error type. Every record is scored within a
:class:`Budget` (time and sizes); a record over it fails with the error type ``over_budget``.
No scorer walks a value nested deeper than :data:`MAX_DEPTH` (``too_deep``; :mod:`.depth`), and
every benchmark's ``score`` and every registered scorer is wrapped by :func:`never_raises`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import heapq
import json
import math
import sys
from abc import ABC, abstractmethod
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any, Callable, ClassVar, Iterable, Iterator, Literal, Mapping, Protocol

from pydantic import ConfigDict, Field

from benchsmith.schemas import Registry, StrictModel, UserError, loads_json

from .budget import (
    DEFAULT_BUDGET,
    Budget,
    OverBudget,
    ScoringBudget,
)
from .depth import MAX_DEPTH, TooDeep, nesting_depth
from .reportview import ReportView

Mode = Literal["strict", "official"]
MODES: tuple[str, ...] = ("strict", "official")


class EvalCase(StrictModel):
    """One scorable record of a benchmark, in benchsmith's neutral form."""

    model_config = ConfigDict(extra="forbid")
    id: str
    benchmark: str
    category: str
    input: dict[str, Any] = Field(default_factory=dict)  # what the model sees (question, functions, ...)
    gold: Any = None  # what the scorer compares with
    meta: dict[str, Any] = Field(default_factory=dict)  # source file, line, anything else


class RecordResult(StrictModel):
    """The verdict on one record."""

    model_config = ConfigDict(extra="forbid")
    id: str
    category: str
    ok: bool
    score: float = Field(ge=0.0, le=1.0)
    error_type: str | None = None
    reason: str = ""
    details: dict[str, Any] = Field(default_factory=dict)


def passed(case: EvalCase, score: float = 1.0, **details: Any) -> RecordResult:
    return RecordResult(id=case.id, category=case.category, ok=True, score=score, details=details)


def failed(case: EvalCase, error_type: str, reason: str = "", score: float = 0.0, **details: Any) -> RecordResult:
    return RecordResult(
        id=case.id,
        category=case.category,
        ok=False,
        score=score,
        error_type=error_type,
        reason=reason[:500],
        details=details,
    )


def too_deep(case: EvalCase, exc: TooDeep, **details: Any) -> RecordResult:
    """The failed record of a prediction (or case) holding a value nested deeper than a scorer
    walks: error type ``too_deep``."""
    return failed(case, "too_deep", f"not scored: {exc}", limit=exc.limit, **details)


def last_resort(case: EvalCase, exc: BaseException) -> RecordResult:
    """The failed record of a scorer that raised :class:`TooDeep`, ``RecursionError`` or
    ``MemoryError`` (:func:`never_raises`). The last two mean a helper was not bounded: the record
    says which was caught (``details.caught``) so that tests can tell it from a bounded refusal."""
    if isinstance(exc, TooDeep):
        return too_deep(case, exc)
    kind = type(exc).__name__
    if isinstance(exc, RecursionError):
        return failed(case, "too_deep", f"not scored: the scorer recursed too deep ({kind}: {exc})", caught=kind)
    return failed(case, "out_of_memory", f"not scored: the scorer ran out of memory ({kind})", caught=kind)


_LAST_RESORT = (TooDeep, RecursionError, MemoryError)
# the case a never_raises wrapper further up the stack already guards (an inner one then just calls)
_GUARDED: contextvars.ContextVar[EvalCase | None] = contextvars.ContextVar("benchsmith_guarded", default=None)


def never_raises(fn: Callable[..., RecordResult]) -> Callable[..., RecordResult]:
    """Wrap a scorer (a function, or a benchmark's ``score`` method) taking an :class:`EvalCase`:
    a case whose gold nests deeper than :data:`MAX_DEPTH` is a ``too_deep`` record without
    scoring, and :class:`TooDeep`, ``RecursionError`` or ``MemoryError`` out of the scorer become a
    failed record (:func:`last_resort`) instead of propagating. Other exceptions propagate (a bug:
    :func:`score_record` reports it as ``scorer_error``), as do :class:`OverBudget` and
    ``KeyboardInterrupt``. :class:`Benchmark` subclasses and :func:`scorer` apply it themselves."""
    if getattr(fn, "__never_raises__", False):
        return fn

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> RecordResult:
        case = next((a for a in (*args, *kwargs.values()) if isinstance(a, EvalCase)), None)
        if case is None or _GUARDED.get() is case:
            return fn(*args, **kwargs)
        if nesting_depth(case.gold) > MAX_DEPTH:
            return too_deep(case, TooDeep(MAX_DEPTH, "the case's gold"))
        token = _GUARDED.set(case)
        try:
            return fn(*args, **kwargs)
        except _LAST_RESORT as exc:
            return last_resort(case, exc)
        finally:
            _GUARDED.reset(token)

    guarded.__never_raises__ = True  # type: ignore[attr-defined]
    return guarded


# ---- registries -------------------------------------------------------------------------------
# the built-in benchmarks: each package registers its benchmark, scorers and task when imported
BUILTIN_BENCHMARKS = tuple(
    f"benchsmith.eval.{b}" for b in ("acebench", "agent", "bfcl", "gta", "nl2api", "teval", "toolassess")
)
SCORERS: Registry[Callable[..., RecordResult]] = Registry("scorer", BUILTIN_BENCHMARKS)
BENCHMARKS: Registry[type["Benchmark"]] = Registry("benchmark", BUILTIN_BENCHMARKS, set_name=True)


def scorer(name: str) -> Callable[[Callable[..., RecordResult]], Callable[..., RecordResult]]:
    """Register a pure scoring function ``(case, prediction, mode) -> RecordResult`` by name.

    A name ``"<benchmark>:<category>"`` makes it the scorer of that benchmark's records of that
    category (:func:`scorer_for`); other names (``"<benchmark>.<part>"``) are parts a benchmark's
    ``score`` calls. The function is registered (and returned) wrapped by :func:`never_raises`."""

    register = SCORERS.register(name)
    return lambda fn: register(never_raises(fn))


def benchmark(name: str) -> Callable[[type["Benchmark"]], type["Benchmark"]]:
    """Register a :class:`Benchmark` subclass by name (the ``--benchmark`` value)."""

    return BENCHMARKS.register(name)


class Benchmark(ABC):
    """Base of a benchmark plug-in. Subclasses implement the four methods; the optional hooks
    below make the benchmark's other verbs (derive, export, the report's view) known by name.
    The run task registers itself with :func:`~benchsmith.eval.task`."""

    #: case sets derived from a benchsmith split that this benchmark loads:
    #: ``{name: derive(split_dir, out_dir, seed=0) -> report}`` (``benchsmith eval derive``)
    derivers: ClassVar[Mapping[str, Callable[..., dict[str, Any]]]] = MappingProxyType({})
    #: ``export(split_dir, out_dir) -> report``: a split in the benchmark's own layout
    #: (``benchsmith eval export --to <name>``); None when there is none
    exporter: ClassVar[Callable[..., dict[str, Any]] | None] = None
    #: how the report shows the benchmark (headline figures, categories, charts, notes)
    report: ClassVar[ReportView] = ReportView()

    name: ClassVar[str] = ""
    #: the options the benchmark takes, each with its allowed values (e.g. BFCL's ``format``)
    option_values: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: the options it was configured with by :func:`get_benchmark` (none given: empty)
    options: Mapping[str, str] = MappingProxyType({})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # the promise "score never raises" kept for every benchmark, plug-ins included: a value
        # too deep to walk, a RecursionError or a MemoryError becomes a failed record
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("score")
        if isinstance(own, (staticmethod, classmethod)):
            # the descriptor (not a plain function) goes back on the class, which mypy cannot type
            cls.score = type(own)(never_raises(own.__func__))  # type: ignore[assignment]
        elif callable(own):
            cls.score = never_raises(own)  # type: ignore[method-assign]

    @abstractmethod
    def load(self, data: Path) -> list[EvalCase]:
        """Read the benchmark's own layout (or a benchsmith split) into cases."""

    @abstractmethod
    def score(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        """Score one record; must not raise on any prediction string."""

    @abstractmethod
    def aggregate(self, cases: list[EvalCase], records: list[RecordResult], mode: Mode) -> dict[str, Any]:
        """Benchmark-level figures (the content of scores.json)."""

    @abstractmethod
    def gold_prediction(self, case: EvalCase) -> str:
        """The gold answer written in the benchmark's native prediction format."""

    def iter_cases(self, data: Path) -> Iterator[EvalCase]:
        """The cases of ``data`` one at a time, in :meth:`load`'s order (what ``eval score`` reads).
        The default reads them all with :meth:`load`; a benchmark whose layout can be read line by
        line overrides it so that scoring holds one case at a time."""
        yield from self.load(data)

    def start_aggregate(self, mode: Mode) -> "Aggregator":
        """An :class:`Aggregator` that is given each ``(case, record)`` as it is scored and returns
        what :meth:`aggregate` would. The default keeps the cases and records and calls
        :meth:`aggregate`; a benchmark overrides it to keep running sums and counters only, so that
        scoring a large set holds no list of every record."""
        return ListAggregator(self, mode)


class Aggregator(Protocol):
    """Builds a benchmark's scores.json from its records one at a time (:meth:`Benchmark.start_aggregate`).
    ``add(case, record)`` in scoring order (``case`` is None when only the record is known);
    ``result()`` once, at the end."""

    def add(self, case: EvalCase | None, record: RecordResult) -> None: ...

    def result(self) -> dict[str, Any]: ...


class ListAggregator:
    """The default :class:`Aggregator`: keeps every case and record for :meth:`Benchmark.aggregate`."""

    def __init__(self, bench: Benchmark, mode: Mode) -> None:
        self.bench, self.mode = bench, mode
        self.cases: list[EvalCase] = []
        self.records: list[RecordResult] = []

    def add(self, case: EvalCase | None, record: RecordResult) -> None:
        if case is not None:
            self.cases.append(case)
        self.records.append(record)

    def result(self) -> dict[str, Any]:
        return self.bench.aggregate(self.cases, self.records, self.mode)


def aggregate_lists(acc: Aggregator, cases: list[EvalCase], records: list[RecordResult]) -> dict[str, Any]:
    """Feed ``records`` (with their cases: by position when ``cases`` lines up with them, else by
    id, None when absent) to an :class:`Aggregator` and return its result: a benchmark's
    :meth:`~Benchmark.aggregate` over lists, computed by its streaming aggregator."""
    if len(cases) == len(records) and all(c.id == r.id for c, r in zip(cases, records)):
        for c, r in zip(cases, records):
            acc.add(c, r)
    else:
        by_id = {c.id: c for c in cases}
        for r in records:
            acc.add(by_id.get(r.id), r)
    return acc.result()


# Python 3.12 made sum() of floats compensated (Neumaier); a running sum must add the same way to
# give the same float as sum() over a list of the same values.
_COMPENSATED_SUM = sys.version_info >= (3, 12)


class RunningSum:
    """A running sum of floats equal, bit for bit, to ``sum(values)`` over the same values in the
    same order (``value``; ``0`` when nothing was added, as ``sum([])``), and ``mean()`` equal to
    :func:`mean` of them.

    >>> s = RunningSum()
    >>> for x in (0.1, 0.2, 0.3):
    ...     s.add(x)
    >>> s.value == sum([0.1, 0.2, 0.3]), s.mean() == mean([0.1, 0.2, 0.3]), RunningSum().value
    (True, True, 0)
    """

    __slots__ = ("total", "comp", "n")

    def __init__(self) -> None:
        self.total, self.comp, self.n = 0.0, 0.0, 0

    def add(self, x: float) -> None:
        self.n += 1
        if _COMPENSATED_SUM:
            t = self.total + x
            if abs(self.total) >= abs(x):
                self.comp += (self.total - t) + x
            else:
                self.comp += (x - t) + self.total
            self.total = t
        else:
            self.total += x

    @property
    def value(self) -> float:
        if not self.n:
            return 0
        if _COMPENSATED_SUM and self.comp and math.isfinite(self.comp):
            return self.total + self.comp
        return self.total

    def mean(self) -> float:
        return self.value / self.n if self.n else 0.0


def get_benchmark(name: str, **options: str | None) -> Benchmark:
    """The benchmark registered as ``name``, configured with ``options`` (``None`` = not given).

    An option the benchmark does not take, or a value it does not allow, is a :class:`UserError`.
    """
    bench = BENCHMARKS.get_or_raise(name)()
    given = {k: v for k, v in options.items() if v is not None}
    for key, value in given.items():
        allowed = bench.option_values.get(key)
        if allowed is None:
            takes = ", ".join(bench.option_values) or "none"
            raise UserError(f"benchmark {name!r} takes no {key!r} option", fix=f"drop it (options of {name}: {takes})")
        if value not in allowed:
            raise UserError(
                f"{key} {value!r} is not one of {', '.join(allowed)} (benchmark {name})",
                fix=f"use one of {', '.join(allowed)}",
            )
    if given:
        bench.options = given
    return bench


# ---- tool calls in predictions ------------------------------------------------------------------
class CallShapeError(ValueError):
    """A tool-call entry that is not ``{"name", "arguments"}`` (or OpenAI's ``{"function": {...}}``)."""


def tool_call_parts(item: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(name, arguments, entry)`` of one predicted tool call; arguments may be JSON text.

    >>> tool_call_parts({"function": {"name": "f", "arguments": '{"x": 1}'}})[:2]
    ('f', {'x': 1})
    """
    if not isinstance(item, dict):
        raise CallShapeError(f"a tool call is a {type(item).__name__}, not an object")
    entry = (
        {**item["function"], **{k: v for k, v in item.items() if k != "function"}}
        if isinstance(item.get("function"), dict)
        else item
    )
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise CallShapeError("a tool call has no name")
    args = entry.get("arguments", {})
    if args is None:
        args = {}
    if isinstance(args, str):
        try:
            args = loads_json(args) if args.strip() else {}
        except json.JSONDecodeError:
            raise CallShapeError(f"arguments of {name} are not JSON") from None
    if not isinstance(args, dict):
        raise CallShapeError(f"arguments of {name} are not an object")
    return name, args, entry


# ---- data files -------------------------------------------------------------------------------
def scan_json_lines(path: Path, *, fix: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(line number, byte offset, object)`` for each non-blank line of a JSONL data file, read
    one line at a time. Anything unreadable raises :class:`UserError` naming ``path:LINE`` and ``fix``
    (when that line is reached)."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})", fix=fix) from None
    with fh:
        offset = 0
        n = 0
        while True:
            try:
                line = fh.readline()
            except OSError as exc:
                raise UserError(f"{path}: cannot be read ({exc.strerror})", fix=fix) from None
            if not line:
                break
            n += 1
            start, offset = offset, offset + len(line)
            try:
                text = line.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                raise UserError(
                    f"{path}:{n}: not UTF-8 text (bad byte at column {exc.start + 1})", fix="re-save the file as UTF-8"
                ) from None
            if not text:
                continue
            try:
                obj = loads_json(text)
            except json.JSONDecodeError as exc:
                raise UserError(f"{path}:{n}: not JSON ({exc.msg})", fix="one JSON object per line") from None
            if not isinstance(obj, dict):
                raise UserError(f"{path}:{n}: a line is not a JSON object", fix="one JSON object per line")
            yield n, start, obj


@contextlib.contextmanager
def syntax_errors_first(path: Path, *, fix: str, then: Iterable[Any] = ()) -> Iterator[None]:
    """Around the checks of a JSONL file read with :func:`scan_json_lines`: a :class:`UserError`
    raised inside gives way to the file's first unreadable line when it has one (then to what
    iterating ``then``, a generator of whole-file checks, raises), as when the whole file was read
    before any line was checked."""
    try:
        yield
    except UserError:
        for _ in scan_json_lines(path, fix=fix):
            pass
        for _ in then:
            pass
        raise


def read_json_line_at(path: Path, offset: int) -> dict[str, Any]:
    """The object on the line of a JSONL file that starts at ``offset`` (one :func:`scan_json_lines` gave)."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        return loads_json(fh.readline().decode("utf-8"))


def iter_json_lines(path: Path, *, fix: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSONL data file, one at a time
    (errors as :func:`read_json_lines`)."""
    for n, _, obj in scan_json_lines(path, fix=fix):
        yield n, obj


def read_json_lines(path: Path, *, fix: str) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSONL data file.

    Anything unreadable raises :class:`UserError` naming ``path:LINE`` and ``fix``.
    """
    return list(iter_json_lines(path, fix=fix))


# ---- predictions ------------------------------------------------------------------------------
class JSONValueText(str):
    """A prediction whose ``result`` was a JSON value other than a string (a list, an object, a
    number ...), held as its JSON text. It is a ``str`` everywhere; a scorer for which the
    difference matters can tell by its type (BFCL's FC decoder: an FC model's result is a list of
    calls, while a string is the model's text reply)."""

    __slots__ = ()


@dataclass
class Predictions:
    by_id: dict[str, str]
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)


def read_predictions(path: str | Path) -> Predictions:
    """Read ``{"id", "result"}`` JSONL; bad lines are reported (line, reason), never fatal.

    ``result`` may be a string (the raw model output) or any JSON value (serialised back to text,
    as a :class:`JSONValueText`).
    """
    p = Path(path)
    if not p.is_file():
        raise UserError(f"predictions file {p} does not exist", fix="pass a JSONL file of {id, result} lines")
    out = Predictions({})
    with open(p, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                obj = loads_json(text)
            except json.JSONDecodeError as exc:
                out.bad_lines.append((n, f"not JSON: {exc.msg}"))
                continue
            if not isinstance(obj, dict) or "id" not in obj or "result" not in obj:
                out.bad_lines.append((n, "expected an object with 'id' and 'result'"))
                continue
            rid = str(obj["id"])
            result = obj["result"]
            if rid in out.by_id:
                out.duplicates.append(rid)
            out.by_id[rid] = (
                result if isinstance(result, str) else JSONValueText(json.dumps(result, ensure_ascii=False))
            )
    return out


def digest64(key: str) -> int:
    """An 8-byte BLAKE2b digest of ``key`` as a signed integer (what :class:`DigestSet` keeps)."""
    return int.from_bytes(
        hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little", signed=True
    )


class DigestSet:
    """An insertion-ordered set of strings held as 8-byte digests (:func:`digest64`) in an
    open-addressing table over arrays: 24 to 40 bytes a key, where a ``set`` of strings takes
    100 or more. ``add`` returns the key's position (in insertion order; a new key gets ``len``
    before it was added), so parallel arrays can hold numbers per key. Two different keys share a
    digest with probability about n^2 / 2^65 (1e-10 for 100,000 keys); they then count as one:
    where that matters, check a hit against the data (as :class:`OffsetIndex` does).

    >>> d = DigestSet()
    >>> [d.add(k) for k in ("a", "b", "a")], len(d), "b" in d, "c" in d
    ([0, 1, 0], 2, True, False)
    """

    __slots__ = ("_slots", "_keys")

    def __init__(self) -> None:
        self._slots = array("q", [-1]) * 16  # table slot -> position in _keys (-1: empty)
        self._keys = array("q")  # digests in insertion order

    def __len__(self) -> int:
        return len(self._keys)

    def _find(self, h: int) -> tuple[int, int]:
        """``(slot, position)`` of digest ``h``; position -1 when absent (slot: where it would go)."""
        slots, keys = self._slots, self._keys
        mask = len(slots) - 1
        i = h & mask
        while True:
            j = slots[i]
            if j < 0 or keys[j] == h:
                return i, j
            i = (i + 1) & mask

    def position(self, key: str) -> int:
        """The key's position, -1 when absent."""
        return self._find(digest64(key))[1]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.position(key) >= 0

    def add(self, key: str) -> int:
        h = digest64(key)
        i, j = self._find(h)
        if j >= 0:
            return j
        j = len(self._keys)
        self._keys.append(h)
        self._slots[i] = j
        if 2 * len(self._keys) > len(self._slots):  # keep the table at most half full
            self._grow()
        return j

    def add_unindexed(self, key: str) -> int:
        """Give ``key`` the next position without making it findable (its digest is another key's:
        :class:`OffsetIndex` finds it by name); ``len`` counts it."""
        self._keys.append(digest64(key))
        if 2 * len(self._keys) > len(self._slots):
            self._grow()
        return len(self._keys) - 1

    def _grow(self) -> None:
        self._slots = slots = array("q", [-1]) * (2 * len(self._slots))
        keys = self._keys
        mask = len(slots) - 1
        for j, h in enumerate(keys):
            i = h & mask
            while slots[i] >= 0 and keys[slots[i]] != h:
                i = (i + 1) & mask
            if slots[i] < 0:  # the first key of a digest only (see add_unindexed)
                slots[i] = j


class OffsetIndex:
    """String id -> byte offset of the line of a file that holds it, in about 50 bytes an id
    (a :class:`DigestSet` and an array of offsets; a dict of strings takes 150 or more). The file
    decides: ``id_at(offset)`` reads the id of the line at an offset. A new id whose digest is
    already taken by another id (a collision: rare) is kept in a small dict of its own, so
    :meth:`put` is exact; :meth:`position` is exact for every id put, and may give an id never
    put the position of another one: check the line read there (``id_at``) before trusting it.
    ``offsets`` holds the offsets by position, ``len`` the ids put."""

    def __init__(self, id_at: Callable[[int], str]) -> None:
        self.id_at = id_at
        self.keys = DigestSet()
        self.offsets = array("q")
        self.other: dict[str, int] = {}  # ids whose digest another id had first -> position

    def __len__(self) -> int:
        return len(self.offsets)

    def position(self, key: str) -> int:
        if self.other:
            j = self.other.get(key)
            if j is not None:
                return j
        return self.keys.position(key)

    def put(self, key: str, offset: int) -> tuple[int, bool]:
        """Point ``key`` at ``offset`` (a repeated id: the later line wins): ``(its position, whether
        it was there)``."""
        j = self.position(key)
        if j >= 0 and (key in self.other or self.id_at(self.offsets[j]) == key):
            self.offsets[j] = offset
            return j, True
        if self.keys.position(key) >= 0:  # another id with the same digest
            j = self.other[key] = self.keys.add_unindexed(key)
        else:
            j = self.keys.add(key)
        self.offsets.append(offset)
        return j, False


class PredictionIndex:
    """A predictions file (``{"id", "result"}`` JSONL) read the way :func:`read_predictions` reads
    it, holding only each id's line offset (:class:`OffsetIndex`: about 50 bytes an id): a
    prediction's text is read from the file when it is asked for (:meth:`get`), so scoring holds
    one prediction at a time. Bad lines and duplicate ids are kept up to ``keep`` each (the first
    ones), as scores.json shows them; a later line of an id wins, as in :func:`read_predictions`.
    Use it as a context manager (it keeps the file open)."""

    def __init__(self, path: str | Path, keep: int = 100) -> None:
        p = Path(path)
        if not p.is_file():
            raise UserError(f"predictions file {p} does not exist", fix="pass a JSONL file of {id, result} lines")
        self.path, self.keep = p, keep
        self.bad_lines: list[tuple[int, str]] = []
        self.duplicates: list[str] = []
        self._fh: IO[bytes] = open(p, "rb")
        self._index = OffsetIndex(self._id_at)
        self._asked = bytearray()  # by position: 1 once asked for
        offset = 0
        for n, raw in enumerate(self._fh, 1):
            start, offset = offset, offset + len(raw)
            obj = self._parse(raw)
            if isinstance(obj, str):
                if obj and len(self.bad_lines) < keep:
                    self.bad_lines.append((n, obj))
                continue
            rid = str(obj["id"])
            if self._index.put(rid, start)[1]:
                if len(self.duplicates) < keep:
                    self.duplicates.append(rid)
            else:
                self._asked.append(0)

    @staticmethod
    def _parse(raw: bytes) -> dict[str, Any] | str:
        """The line's object, or why it is bad ("" for a blank line)."""
        text = raw.decode("utf-8", errors="replace").strip()
        if not text:
            return ""
        try:
            obj = loads_json(text)
        except json.JSONDecodeError as exc:
            return f"not JSON: {exc.msg}"
        if not isinstance(obj, dict) or "id" not in obj or "result" not in obj:
            return "expected an object with 'id' and 'result'"
        return obj

    def _read(self, offset: int) -> dict[str, Any]:
        """The (good) line at ``offset``; the file handle's position is kept."""
        here = self._fh.tell()
        try:
            self._fh.seek(offset)
            obj = self._parse(self._fh.readline())
        finally:
            self._fh.seek(here)
        assert isinstance(obj, dict), f"{self.path} changed while it was read"
        return obj

    def _id_at(self, offset: int) -> str:
        return str(self._read(offset)["id"])

    def _line(self, rid: object) -> tuple[int, dict[str, Any]] | None:
        """``(position, object)`` of the line of ``rid``, None when the file has no such id."""
        if not isinstance(rid, str):
            return None
        j = self._index.position(rid)
        if j < 0:
            return None
        obj = self._read(self._index.offsets[j])
        return (j, obj) if str(obj["id"]) == rid else None  # another id's digest: not there

    def __contains__(self, rid: object) -> bool:
        return self._line(rid) is not None

    def __len__(self) -> int:
        return len(self._index)

    def get(self, rid: str, default: str | None = None) -> str | None:
        """The prediction of ``rid`` (a :class:`JSONValueText` for a non-string result), else ``default``."""
        hit = self._line(rid)
        if hit is None:
            return default
        j, obj = hit
        self._asked[j] = 1
        result = obj["result"]
        return result if isinstance(result, str) else JSONValueText(json.dumps(result, ensure_ascii=False))

    def never_asked(self, limit: int) -> list[str]:
        """The ``limit`` smallest ids never passed to :meth:`get` (ids no case has), sorted: read
        back from their lines."""
        offsets, asked = self._index.offsets, self._asked
        return heapq.nsmallest(limit, (self._id_at(offsets[j]) for j in range(len(offsets)) if not asked[j]))

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "PredictionIndex":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def over_budget(case: EvalCase, exc: OverBudget) -> RecordResult:
    """The failed record of a prediction that exceeds its budget."""
    return failed(
        case, "over_budget", f"not scored: over budget ({exc})", budget=exc.limit, figure=exc.figure, limit=exc.allowed
    )


def scorer_for(bench: Benchmark, case: EvalCase) -> Callable[[EvalCase, str, Mode], RecordResult]:
    """What scores ``case``: a scorer registered as ``"<benchmark>:<category>"`` (for example
    ``@scorer("gta:step:tool")``) when there is one, else the benchmark's own ``score``. So a
    scorer for a category (a new one, or one scored differently) is used by registering it alone.

    >>> from benchsmith.eval import get_benchmark
    >>> case = EvalCase(id="x", benchmark="toolassess", category="awareness")
    >>> scorer_for(get_benchmark("toolassess"), case).__name__
    'score'
    """
    return SCORERS.get(f"{bench.name}:{case.category}") or bench.score


def score_record(
    bench: Benchmark, case: EvalCase, prediction: str, mode: Mode, budget: Budget = DEFAULT_BUDGET
) -> RecordResult:
    """Score one record within ``budget``; never raises. ``over_budget`` when the prediction is
    too long, a limit is hit while scoring, or scoring took longer than ``budget.seconds``; a
    scorer that raises gives ``scorer_error``. (Without SIGALRM: :func:`score_cases` installs it
    for a whole run.)"""
    with ScoringBudget(budget, alarm=False) as keeper:
        return _score_within(keeper, bench, case, prediction, mode)


def _score_within(keeper: ScoringBudget, bench: Benchmark, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
    try:
        result = keeper.within(prediction, lambda: scorer_for(bench, case)(case, prediction, mode))
    except OverBudget as exc:
        return over_budget(case, exc)
    except _LAST_RESORT as exc:  # a scorer not wrapped by never_raises (its benchmark's and registered ones are)
        result = last_resort(case, exc)
    except Exception as exc:  # noqa: BLE001 - a scorer bug must not lose the run; it is reported
        result = failed(case, "scorer_error", f"{type(exc).__name__}: {exc}")
    late = keeper.overtime()
    return over_budget(case, late) if late is not None and result.error_type != "over_budget" else result


# ---- runs -------------------------------------------------------------------------------------
@dataclass
class ScoreRun:
    scores: dict[str, Any]
    records: list[RecordResult]


def iter_scored(
    bench: Benchmark,
    cases: Iterable[EvalCase],
    prediction_for: Callable[[EvalCase], str | None],
    mode: Mode,
    budget: Budget = DEFAULT_BUDGET,
) -> Iterator[tuple[EvalCase, RecordResult]]:
    """Score each case as ``cases`` yields it, within ``budget`` per record, and yield ``(case,
    record)`` before the next case is read: nothing is kept. A case whose ``prediction_for`` is
    None is a failed record (``missing_prediction``), not a crash. Consume it to the end (or close
    it): the run's time limit (SIGALRM) stays installed until then."""
    with ScoringBudget(budget) as keeper:
        for case in cases:
            pred = prediction_for(case)
            if pred is None:
                yield case, failed(case, "missing_prediction", "no prediction for this id")
                continue
            yield case, _score_within(keeper, bench, case, pred, mode)


def score_cases(
    bench: Benchmark,
    cases: list[EvalCase],
    predictions: Mapping[str, str | None],
    mode: Mode,
    budget: Budget = DEFAULT_BUDGET,
) -> ScoreRun:
    """Score every case within ``budget`` per record (a missing prediction is a failed record,
    not a crash; see :func:`score_record`)."""
    records: list[RecordResult] = []
    acc = bench.start_aggregate(mode)
    for case, record in iter_scored(bench, cases, lambda c: predictions.get(c.id), mode, budget):
        records.append(record)
        acc.add(case, record)
    return ScoreRun(acc.result(), records)


class ReliabilityTally:
    """pass^k / pass@k over trials (:func:`benchsmith.eval.reliability`), counted one record at a
    time: per task only a digest of its id and its trial and success counts are kept (about 56
    bytes a task)."""

    def __init__(self) -> None:
        self.trial_cases = False
        self.tasks = DigestSet()  # base ids, as digests
        self.trials, self.ok = array("q"), array("q")  # by task position: trials, successes
        self.excluded = 0

    def add(self, case: EvalCase | None, record: Any) -> None:
        if case is None or case.meta.get("trial") is None:
            return
        self.trial_cases = True
        b = case.meta.get("base_id")
        if b is None:
            return
        if (record.details.get("episode") or {}).get("error_type") == "user_simulator_failure":
            self.excluded += 1
            return
        j = self.tasks.add(str(b))
        if j == len(self.trials):
            self.trials.append(0)
            self.ok.append(0)
        self.trials[j] += 1
        self.ok[j] += 1 if record.ok else 0

    def result(self, ks: Iterable[int] | None = None) -> dict[str, Any] | None:
        """None when no case was a trial."""
        if not self.trial_cases:
            return None
        tally = list(zip(self.trials, self.ok))
        most = max((n for n, _ in tally), default=0)
        wanted = sorted({k for k in (ks or range(1, most + 1)) if k >= 1})
        hat: dict[str, float] = {}
        at: dict[str, float] = {}
        tasks: dict[str, int] = {}
        for k in wanted:
            rows = [(n, c) for n, c in tally if n >= k]
            if not rows:
                continue
            hat[str(k)] = sum(math.comb(c, k) / math.comb(n, k) for n, c in rows) / len(rows)
            at[str(k)] = sum(1 - math.comb(n - c, k) / math.comb(n, k) for n, c in rows) / len(rows)
            tasks[str(k)] = len(rows)
        return {
            "trials": most,
            "tasks": len(tally),
            "pass^k": hat,
            "pass@k": at,
            "tasks_per_k": tasks,
            "user_simulator_failures": self.excluded,
        }


def mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


def safe_ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def sqrt_weights(counts: Mapping[str, int]) -> dict[str, float]:
    """Weights proportional to sqrt(n) (ACEBench's Summary)."""
    total = sum(math.sqrt(n) for n in counts.values())
    return {k: (math.sqrt(n) / total if total else 0.0) for k, n in counts.items()}
