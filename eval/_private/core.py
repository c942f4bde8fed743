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
import json
import math
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO, Callable, ClassVar, Generic, Iterable, Iterator, Literal, Mapping, Self, TypeVar

from benchsmith.schemas import EvalCase, RecordResult, Registry, UserError, loads_json, progress_bar

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One scored record as a benchmark's :meth:`~Benchmark.metrics` sees it: the verdict, the
    category and whether the case is a trial of a task (pass^k), and nothing of the case's input
    or the record's details (a list of 100,000 rows takes tens of MB). A benchmark whose
    metrics read more subclasses it (``@dataclass(frozen=True, slots=True, kw_only=True)``) with
    those values only, and builds it with :meth:`of`."""

    id: str
    category: str
    ok: bool
    score: float
    error_type: str | None
    #: the task a trial belongs to (``meta["base_id"]``); None when the case is not a trial
    task: str | None = None
    #: whether the case is a trial (``meta["trial"]`` set), even one without a task
    trial: bool = False
    #: the episode's own error type (``details["episode"]["error_type"]``), when an episode ran
    episode_error: str | None = None
    #: the records resampled together by the bootstrap (``meta["cluster"]``, else a trial's task):
    #: records that are not independent, such as the steps of one query; empty: the record alone
    cluster: str = ""

    @classmethod
    def of(cls, case: EvalCase, record: RecordResult, **values: Any) -> Self:
        """The row of ``record`` (scored from ``case``) with a subclass's own ``values``."""
        trial = case.meta.get("trial") is not None
        base = case.meta.get("base_id") if trial else None
        episode = record.details.get("episode")
        kind = episode.get("error_type") if isinstance(episode, dict) else None
        cluster = cluster_of(case)
        return cls(
            id=record.id,
            category=sys.intern(record.category),
            ok=record.ok,
            score=record.score,
            error_type=sys.intern(record.error_type) if record.error_type else None,
            task=None if base is None else str(base),
            trial=trial,
            episode_error=kind if isinstance(kind, str) else None,
            cluster=sys.intern(cluster),
            **values,
        )


RowT = TypeVar("RowT", bound=Row)


def cluster_of(case: EvalCase) -> str:
    """The key of the records a bootstrap resamples together with ``case`` (:attr:`Row.cluster`):
    its loader's ``meta["cluster"]`` (a GTA query, an ACEBench dialogue, a T-Eval gold chain), else
    the task a trial belongs to; empty when the case stands alone."""
    given = case.meta.get("cluster")
    if given is None and case.meta.get("trial") is not None:
        given = case.meta.get("base_id")
    return "" if given is None else str(given)


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


@dataclass(frozen=True, kw_only=True)
class Rules:
    """How a benchmark scores in one mode: ``official`` (as the benchmark's own evaluator does, its
    known bugs included) or ``strict`` (what the benchmark means, those bugs fixed). A benchmark
    declares one object per mode (:attr:`Benchmark.rules`), a subclass whose fields name each choice
    where its modes differ (GTA: ``first_call_only``, ``word_boundaries``, ...), so its scorers and
    metrics read a named rule instead of testing the mode."""

    mode: Mode


class Benchmark(ABC, Generic[RowT]):
    """Base of a benchmark plug-in. Subclasses implement the four abstract methods (and
    :meth:`row` when their metrics read more than a :class:`Row` holds); the optional hooks
    below make the benchmark's other verbs (derive, export, the report's view) known by name.
    The run task registers itself with :func:`~benchsmith.eval.task`."""

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
    #: how it scores in each mode (a :class:`Rules` subclass per benchmark; the base has no rule)
    rules: ClassVar[Mapping[str, Rules]] = MappingProxyType({m: Rules(mode=m) for m in ("strict", "official")})

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
    def metrics(self, rows: list[RowT], mode: Mode) -> dict[str, Any]:
        """Benchmark-level figures (the content of scores.json): a pure function of the rows of
        every scored record, in scoring order (one per record, made by :meth:`row`)."""

    @abstractmethod
    def gold_prediction(self, case: EvalCase) -> str:
        """The gold answer written in the benchmark's native prediction format."""

    def iter_cases(self, data: Path) -> Iterator[EvalCase]:
        """The cases of ``data`` one at a time, in :meth:`load`'s order (what ``eval score`` reads).
        The default reads them all with :meth:`load`; a benchmark whose layout can be read line by
        line overrides it so that scoring holds one case at a time."""
        yield from self.load(data)

    def row(self, case: EvalCase, record: RecordResult, mode: Mode) -> RowT:
        """The slim row :meth:`metrics` reads for one record scored in ``mode``. The default is a
        :class:`Row` (verdict, category, trial); a benchmark whose metrics read more of the case or
        the record's details returns its own :class:`Row` subclass, holding only those values."""
        return Row.of(case, record)  # type: ignore[return-value]


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


def json_line_at(fh: BinaryIO, offset: int) -> dict[str, Any]:
    """The object on the line of an open JSONL file (binary) that starts at ``offset`` (as
    :func:`scan_json_lines` gave it): a loader that joins two files keeps the second one open and
    reads an answer when its record comes."""
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


class Predictions:
    """A predictions file (``{"id", "result"}`` JSONL), read once line by line into the line
    offset of each id (a later line of an id wins); a prediction's text is read back when it is
    asked for (:meth:`get`), so scoring holds one at a time. A line of at most :attr:`KEEP_BYTES`
    bytes keeps its text instead (a typical prediction: read and parsed once, at a bounded cost
    of memory per record). ``result`` may be a string (the raw
    model output) or any JSON value (given back as its text, a :class:`JSONValueText`). Bad lines
    and repeated ids are reported (the first ``keep`` of each), never fatal. Use it as a context
    manager: it keeps the file open."""

    #: lines up to this long keep their prediction in memory rather than their offset
    KEEP_BYTES = 512

    def __init__(self, path: str | Path, keep: int = 100) -> None:
        p = Path(path)
        if not p.is_file():
            raise UserError(f"predictions file {p} does not exist", fix="pass a JSONL file of {id, result} lines")
        self.path = p
        self.offsets: dict[str, int] = {}
        self.kept: dict[str, str] = {}  # id -> its prediction, for a short line (KEEP_BYTES)
        self.asked: set[str] = set()
        self.bad_lines: list[tuple[int, str]] = []
        self.duplicates: list[str] = []
        self._fh = open(p, "rb")
        offset = 0
        for n, raw in enumerate(self._fh, 1):
            start, offset = offset, offset + len(raw)
            obj = _prediction_line(raw)
            if isinstance(obj, str):
                if obj and len(self.bad_lines) < keep:
                    self.bad_lines.append((n, obj))
                continue
            rid = str(obj["id"])
            if rid in self.offsets and len(self.duplicates) < keep:
                self.duplicates.append(rid)
            self.offsets[rid] = start
            if len(raw) <= self.KEEP_BYTES:
                self.kept[rid] = _result_text(obj["result"])
            else:
                self.kept.pop(rid, None)  # a later, longer line of the id wins

    def get(self, rid: str, default: str | None = None) -> str | None:
        """The prediction of ``rid``, else ``default``."""
        offset = self.offsets.get(rid)
        if offset is None:
            return default
        self.asked.add(rid)
        kept = self.kept.get(rid)
        if kept is not None:
            return kept
        self._fh.seek(offset)
        obj = _prediction_line(self._fh.readline())
        assert isinstance(obj, dict), f"{self.path} changed while it was read"
        return _result_text(obj["result"])

    def __contains__(self, rid: object) -> bool:
        return rid in self.offsets

    def __len__(self) -> int:
        return len(self.offsets)

    def never_asked(self, limit: int) -> list[str]:
        """The ``limit`` smallest ids never passed to :meth:`get` (ids no case has), sorted."""
        return sorted(rid for rid in self.offsets if rid not in self.asked)[:limit]

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _result_text(result: Any) -> str:
    """A prediction's ``result``: a string as it is, any other JSON value as its text."""
    return result if isinstance(result, str) else JSONValueText(json.dumps(result, ensure_ascii=False))


def _prediction_line(raw: bytes) -> dict[str, Any] | str:
    """A predictions line's object, or why it is bad ("" for a blank line)."""
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
    scorer that raises gives ``scorer_error``. (Without SIGALRM: :func:`iter_scored` installs it
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
    rows: list[Row],
    budget: Budget = DEFAULT_BUDGET,
) -> Iterator[RecordResult]:
    """The one scoring loop: score each case as ``cases`` yields it, within ``budget`` per record,
    append its row (:meth:`Benchmark.row`) to ``rows`` and yield the record before the next case is
    read. A case whose ``prediction_for`` is None is a failed record (``missing_prediction``), not a
    crash. Once consumed, ``bench.metrics(rows, mode)`` gives the scores. Consume it to the end (or
    close it): the run's time limit (SIGALRM) stays installed until then."""
    with ScoringBudget(budget) as keeper, progress_bar(f"scoring {bench.name}") as bar:
        for case in cases:
            pred = prediction_for(case)
            if pred is None:
                record = failed(case, "missing_prediction", "no prediction for this id")
            else:
                record = _score_within(keeper, bench, case, pred, mode)
            rows.append(bench.row(case, record, mode))
            bar.advance()
            yield record


def score_cases(
    bench: Benchmark,
    cases: Iterable[EvalCase],
    predictions: Mapping[str, str | None],
    mode: Mode,
    budget: Budget = DEFAULT_BUDGET,
) -> ScoreRun:
    """Score every case against ``predictions`` (by id) through :func:`iter_scored`, keeping the
    records: what ``eval score`` computes, held in memory."""
    rows: list[Row] = []
    records = list(iter_scored(bench, cases, lambda c: predictions.get(c.id), mode, rows, budget))
    return ScoreRun(bench.metrics(rows, mode), records)


def reliability(rows: Iterable[Row], ks: Iterable[int] | None = None) -> dict[str, Any] | None:
    """pass^k and pass@k over independent trials, as tau-bench defines them (pure): for a task with
    ``n`` trials of which ``c`` succeeded, pass^k = C(c, k) / C(n, k) (all of k trials succeed) and
    pass@k = 1 - C(n - c, k) / C(n, k) (at least one does), each averaged over tasks (in the order
    they first come). Trials whose user simulator failed are left out (never charged to the model);
    a task with fewer than k counted trials is left out of that k. None when no row is a trial.

    >>> rows = [Row(id=f"a~t{i}", category="c", ok=i == 0, score=0.0, error_type=None, task="a", trial=True)
    ...         for i in range(2)]
    >>> out = reliability(rows)
    >>> out["pass^k"], out["pass@k"]
    ({'1': 0.5, '2': 0.0}, {'1': 0.5, '2': 1.0})
    """
    tally: dict[str, list[int]] = {}  # task -> [trials, successes]
    any_trial = False
    excluded = 0
    for r in rows:
        if not r.trial:
            continue
        any_trial = True
        if r.task is None:
            continue
        if r.episode_error == "user_simulator_failure":
            excluded += 1
            continue
        counts = tally.setdefault(r.task, [0, 0])
        counts[0] += 1
        counts[1] += r.ok
    if not any_trial:
        return None
    most = max((n for n, _ in tally.values()), default=0)
    wanted = sorted({k for k in (ks or range(1, most + 1)) if k >= 1})
    hat: dict[str, float] = {}
    at: dict[str, float] = {}
    tasks: dict[str, int] = {}
    for k in wanted:
        counted = [(n, c) for n, c in tally.values() if n >= k]
        if not counted:
            continue
        hat[str(k)] = sum(math.comb(c, k) / math.comb(n, k) for n, c in counted) / len(counted)
        at[str(k)] = sum(1 - math.comb(n - c, k) / math.comb(n, k) for n, c in counted) / len(counted)
        tasks[str(k)] = len(counted)
    return {
        "trials": most,
        "tasks": len(tally),
        "pass^k": hat,
        "pass@k": at,
        "tasks_per_k": tasks,
        "user_simulator_failures": excluded,
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
