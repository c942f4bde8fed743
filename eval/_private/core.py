"""The scoring core shared by every benchmark: cases, record results, registries, runs.

A benchmark plugs in as a class registered with :func:`benchmark`; its leaf checks are pure
functions registered with :func:`scorer`. Scoring a record never raises: garbage model
output becomes a failed record with an error type.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, ClassVar, Iterable, Literal, Mapping

from pydantic import ConfigDict, Field

from benchsmith.schemas import StrictModel, UserError, loads_json

Mode = Literal["strict", "official"]
MODES: tuple[str, ...] = ("strict", "official")


class EvalCase(StrictModel):
    """One scorable record of a benchmark, in benchsmith's neutral form."""

    model_config = ConfigDict(extra="forbid")
    id: str
    benchmark: str
    category: str
    input: dict[str, Any] = Field(default_factory=dict)   # what the model sees (question, functions, ...)
    gold: Any = None                                      # what the scorer compares with
    meta: dict[str, Any] = Field(default_factory=dict)    # source file, line, anything else


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
    return RecordResult(id=case.id, category=case.category, ok=False, score=score, error_type=error_type,
                        reason=reason[:500], details=details)


# ---- registries -------------------------------------------------------------------------------
SCORERS: dict[str, Callable[..., RecordResult]] = {}
BENCHMARKS: dict[str, type["Benchmark"]] = {}


def registrar(registry: dict[str, Any], kind: str, name: str, *, set_name: bool = False) -> Callable[[Any], Any]:
    """A decorator that registers its target in ``registry`` under ``name`` (once), optionally
    setting the target's ``name`` attribute; shared by scorers, benchmarks and run tasks."""

    def deco(target: Any) -> Any:
        if name in registry:
            raise ValueError(f"{kind} {name} registered twice")
        if set_name:
            target.name = name
        registry[name] = target
        return target

    return deco


def scorer(name: str) -> Callable[[Callable[..., RecordResult]], Callable[..., RecordResult]]:
    """Register a pure scoring function ``(case, prediction, mode) -> RecordResult`` by name."""

    return registrar(SCORERS, "scorer", name)


def benchmark(name: str) -> Callable[[type["Benchmark"]], type["Benchmark"]]:
    """Register a :class:`Benchmark` subclass by name (the ``--benchmark`` value)."""

    return registrar(BENCHMARKS, "benchmark", name, set_name=True)


class Benchmark(ABC):
    """Base of a benchmark plug-in. Subclasses implement the four methods."""

    name: ClassVar[str] = ""
    #: the options the benchmark takes, each with its allowed values (e.g. BFCL's ``format``)
    option_values: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: the options it was configured with by :func:`get_benchmark` (none given: empty)
    options: Mapping[str, str] = MappingProxyType({})

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


def get_benchmark(name: str, **options: str | None) -> Benchmark:
    """The benchmark registered as ``name``, configured with ``options`` (``None`` = not given).

    An option the benchmark does not take, or a value it does not allow, is a :class:`UserError`.
    """
    from . import plugins  # noqa: F401  (registers the built-in benchmarks)

    if name not in BENCHMARKS:
        raise UserError(f"unknown benchmark {name!r}", fix=f"use one of {', '.join(sorted(BENCHMARKS))}")
    bench = BENCHMARKS[name]()
    given = {k: v for k, v in options.items() if v is not None}
    for key, value in given.items():
        allowed = bench.option_values.get(key)
        if allowed is None:
            takes = ", ".join(bench.option_values) or "none"
            raise UserError(f"benchmark {name!r} takes no {key!r} option", fix=f"drop it (options of {name}: {takes})")
        if value not in allowed:
            raise UserError(f"{key} {value!r} is not one of {', '.join(allowed)} (benchmark {name})",
                            fix=f"use one of {', '.join(allowed)}")
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
    entry = {**item["function"], **{k: v for k, v in item.items() if k != "function"}} \
        if isinstance(item.get("function"), dict) else item
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
def read_json_lines(path: Path, *, fix: str) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSONL data file.

    Anything unreadable raises :class:`UserError` naming ``path:LINE`` and ``fix``.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})", fix=fix) from None
    rows = []
    for n, line in enumerate(raw.split(b"\n"), 1):
        text = line.decode("utf-8", errors="replace").strip()
        if not text:
            continue
        try:
            obj = loads_json(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{n}: not JSON ({exc.msg})", fix="one JSON object per line") from None
        if not isinstance(obj, dict):
            raise UserError(f"{path}:{n}: a line is not a JSON object", fix="one JSON object per line")
        rows.append((n, obj))
    return rows


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
            out.by_id[rid] = result if isinstance(result, str) else JSONValueText(json.dumps(result, ensure_ascii=False))
    return out


# ---- runs -------------------------------------------------------------------------------------
@dataclass
class ScoreRun:
    scores: dict[str, Any]
    records: list[RecordResult]


def score_cases(bench: Benchmark, cases: list[EvalCase], predictions: Mapping[str, str | None],
                mode: Mode) -> ScoreRun:
    """Score every case (a missing prediction is a failed record, not a crash)."""
    records = []
    for case in cases:
        pred = predictions.get(case.id)
        if pred is None:
            records.append(failed(case, "missing_prediction", "no prediction for this id"))
            continue
        try:
            records.append(bench.score(case, pred, mode))
        except Exception as exc:  # noqa: BLE001 - a scorer bug must not lose the run; it is reported
            records.append(failed(case, "scorer_error", f"{type(exc).__name__}: {exc}"))
    return ScoreRun(bench.aggregate(cases, records, mode), records)


def mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


def safe_ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def sqrt_weights(counts: Mapping[str, int]) -> dict[str, float]:
    """Weights proportional to sqrt(n) (ACEBench's Summary)."""
    total = sum(math.sqrt(n) for n in counts.values())
    return {k: (math.sqrt(n) / total if total else 0.0) for k, n in counts.items()}
