"""The files of an evaluation run folder (``benchsmith eval run``) and of a score folder (``eval
score``), each a model with one reader and one writer, used by the runner, ``eval score`` and the
report: ``run.json`` (:class:`RunManifest`), each task's ``replies.jsonl`` (:class:`ReplyLine`) and
``records.jsonl`` (:class:`RecordResult`), the cases both score (:class:`EvalCase`, a run's
``cases.jsonl``), ``scores.json`` (:class:`ScoreHead`, then the benchmark's figures) and
``selftest.json`` (:class:`Selftest`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal

from pydantic import Field, ValidationError, model_validator

from .errors import UserError
from .jsonl import (
    append_jsonl,
    appended_line,
    iter_appended,
    loads_json,
    read_json,
    read_jsonl,
    validate_shape,
    write_json,
    write_json_streamed,
    write_jsonl,
)
from .tool import StrictModel
from .usage import CostSummary, PriceTable, RoleUsage

#: the ``format`` a run.json is written with; a reader accepts any ``benchsmith.run/`` version
RUN_FORMAT = "benchsmith.run/v1"
_FIX = "pass a run folder written by `benchsmith eval run` (it holds run.json)"


class RunModel(StrictModel):
    """A model as a run records it (``ModelConfig.describe()``: never a key)."""

    name: str
    base_url: str | None = None
    local: bool | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    timeout: float | None = None
    file_sha256: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _name_only(cls, value: Any) -> Any:
        # early runs recorded the user simulator by its name alone
        return {"name": value} if isinstance(value, str) else value


class RunTask(StrictModel):
    """One task of a run: what was planned and, once the run stops, how far it got."""

    benchmark: str
    data: str | None = None
    cases: int | None = None
    prompt_version: str | None = None
    done: int | None = Field(default=None, description="cases with a final reply")
    status_counts: dict[str, int] | None = None
    model_calls: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    user_model_calls: int | None = None
    user_prompt_tokens: int | None = None
    user_completion_tokens: int | None = None
    wall_s: float | None = None
    usage: dict[str, RoleUsage] | None = Field(
        default=None,
        description="per role (assistant: the model under test; user: the user simulator), summed from replies.jsonl",
    )
    cost: CostSummary | None = Field(default=None, description="from the run's price table, when it has one")


class RunManifest(StrictModel):
    """``run.json``. Fields not given stay out of the written file (:func:`write_run_manifest`)."""

    format: str = RUN_FORMAT
    run_id: str | None = None
    model: RunModel | None = None
    mode: str | None = None
    split: str | None = None
    concurrency: int | None = None
    strategy: str | None = Field(default=None, description="react | direct; missing: react")
    created_at: str | None = None
    updated_at: str | None = None
    status: str | None = Field(default=None, description="running | partial | complete")
    tasks: dict[str, RunTask] = {}
    user_model: RunModel | None = Field(default=None, description="the model that played the user in episodes")
    prices: PriceTable | None = Field(default=None, description="--prices: what the run's calls cost")
    repeat: int | None = Field(default=None, description="eval run --repeats: this run is repeat N (from 1)")
    repeats: int | None = Field(
        default=None, description="eval run --repeats: of this many, same settings, fresh seeds"
    )
    nondeterminism: str | None = Field(
        default=None,
        description="why identical settings may not give identical replies in this run (none known: absent)",
    )


def read_run_manifest(path: Path) -> RunManifest:
    """The ``run.json`` at ``path``. Missing, unreadable, not JSON, of another format or of the
    wrong shape: a :class:`UserError` naming the file (and the line or the place inside it)."""
    if not path.is_file():
        raise UserError(f"{path}: missing", fix=_FIX)
    try:
        meta = loads_json(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f":{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise UserError(
            f"{path}{where}: not valid JSON ({exc})", fix="re-run `benchsmith eval run` on this folder to rewrite it"
        ) from None
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})", fix="check its permissions") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("tasks"), dict):
        raise UserError(f"{path}: wrong shape: not a run description (no 'tasks' object)", fix=_FIX)
    fmt = meta.get("format")
    if fmt is not None and not str(fmt).startswith(RUN_FORMAT.split("/")[0] + "/"):
        raise UserError(f"{path}: format {fmt!r} is not {RUN_FORMAT}", fix=_FIX)
    return validate_shape(
        meta,
        RunManifest,
        where=str(path),
        fix="this is not a run.json written by `benchsmith eval run`: move it away, or use another --out "
        "folder (re-running the same command resumes only from a valid run.json)",
    )


def write_run_manifest(path: Path, manifest: RunManifest) -> None:
    """Write ``run.json`` atomically: the fields given (a ``None`` given is kept), in field order."""
    write_json(path, manifest.model_dump(mode="json", exclude_unset=True))


# ---- replies.jsonl --------------------------------------------------------------------------------
ReplyStatus = Literal["ok", "format_error", "request_error", "transport_error", "environment_error"]


class ReplyError(StrictModel):
    """Why a case has no readable prediction."""

    type: str
    message: str = ""


class ReplyTurn(StrictModel):
    """One model call of a case: what was sent, what came back, what it was read as."""

    messages: list[dict[str, Any]] = Field(description="the chat messages sent, as the endpoint took them")
    raw: str = Field(description="the model's reply text")
    tool_calls: list[dict[str, Any]] = []
    parsed: Any = None
    latency_s: float = 0.0
    usage: dict[str, Any] = {}
    shared: bool = Field(default=False, description="the reply of an identical request made for another case")
    role: str = Field(default="assistant", description="who answered: assistant (the model under test) or user")
    finish_reason: str | None = Field(default=None, description="the endpoint's; length: the output budget ran out")
    seed: int | None = Field(default=None, description="the sampling seed sent with the request")


class ReplyLine(StrictModel):
    """One line of a task's ``replies.jsonl``: a case's final (or failed) attempt. The last line of
    a ``key`` (case id, model and prompt version) wins."""

    id: str
    key: str
    model: str
    prompt_version: str | None = None
    status: ReplyStatus
    result: Any = Field(default=None, description="the prediction in the benchmark's native result format")
    error: ReplyError | None = None
    turns: list[ReplyTurn] = []
    started_at: str | None = None
    finished_at: str | None = None


def iter_reply_lines(path: Path) -> Iterator[tuple[int, ReplyLine | None]]:
    """``(byte offset, line)`` for each non-blank line of a ``replies.jsonl``; ``None`` for a line
    that cannot be read (:func:`iter_appended`)."""
    return iter_appended(path, ReplyLine)


def reply_line(raw: bytes) -> ReplyLine | None:
    """One ``replies.jsonl`` line read, None when it cannot be (not JSON, wrong shape)."""
    return appended_line(raw, ReplyLine)


def read_replies(path: Path) -> dict[str, ReplyLine]:
    """The last readable line per key of a ``replies.jsonl`` (none when the file is absent)."""
    return {line.key: line for _, line in iter_reply_lines(path) if line is not None}


def append_reply(path: Path, line: ReplyLine) -> None:
    """Append one line to a ``replies.jsonl`` (one write, fsync'd: :func:`append_jsonl`)."""
    append_jsonl(path, line.model_dump(mode="json"))


# ---- cases.jsonl ---------------------------------------------------------------------------------
class EvalCase(StrictModel):
    """One scorable record of a benchmark, in benchsmith's neutral form: what a benchmark's loader
    gives, and a line of a run task's ``cases.jsonl``."""

    id: str
    benchmark: str
    category: str
    input: dict[str, Any] = Field(default_factory=dict, description="what the model sees (question, functions, ...)")
    gold: Any = Field(default=None, description="what the scorer compares with")
    meta: dict[str, Any] = Field(default_factory=dict, description="source file, line, anything else")


def write_cases(path: Path, cases: Iterable[EvalCase]) -> int:
    """Write a run task's ``cases.jsonl`` atomically; the count."""
    return write_jsonl(path, cases)


def iter_cases(path: Path) -> Iterator[EvalCase]:
    """A ``cases.jsonl``, one case at a time; a bad row raises what :func:`read_jsonl` raises (every
    bad row of the file listed, each with its line and fix)."""
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                continue
            try:
                case = EvalCase.model_validate(loads_json(raw.decode("utf-8")))
            except ValueError:
                read_jsonl(path, EvalCase)  # raises the full report of the file's bad rows
                raise
            yield case


# ---- records.jsonl --------------------------------------------------------------------------------
class RecordResult(StrictModel):
    """The verdict on one scored record: a line of ``records.jsonl``."""

    id: str
    category: str
    ok: bool
    score: float = Field(ge=0.0, le=1.0)
    error_type: str | None = None
    reason: str = ""
    details: dict[str, Any] = Field(default_factory=dict, description="the scorer's findings; left out when empty")


def record_line(record: RecordResult) -> dict[str, Any]:
    """The ``records.jsonl`` line of ``record``: its fields in order, ``details`` only when it holds any."""
    line = {
        "id": record.id,
        "category": record.category,
        "ok": record.ok,
        "score": record.score,
        "error_type": record.error_type,
        "reason": record.reason,
    }
    if record.details:
        line["details"] = record.details
    return line


def write_records(path: Path, records: Iterable[RecordResult]) -> int:
    """Write ``records.jsonl`` atomically from a stream of records (:func:`record_line` each); the count."""
    return write_jsonl(path, (record_line(r) for r in records))


def iter_records(path: Path, clean: Callable[[Any], Any] | None = None) -> Iterator[RecordResult | None]:
    """Each non-blank line of a ``records.jsonl`` as a :class:`RecordResult`, ``None`` for one that
    cannot be read (not JSON, or not a record). ``clean`` rewrites the decoded JSON first (the report
    replaces lone surrogates, which no HTML page may hold)."""
    with path.open("rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            try:
                value = loads_json(raw.decode("utf-8", errors="replace"))
                yield RecordResult.model_validate(clean(value) if clean is not None else value)
            except (json.JSONDecodeError, ValidationError):
                yield None


# ---- scores.json ----------------------------------------------------------------------------------
class BadPredictionLine(StrictModel):
    """A predictions line that could not be read."""

    line: int
    reason: str


class GoldSelftest(StrictModel):
    """A run's own gold self-test: each scored case's gold answer scored as the prediction."""

    records: int
    gold_failing: int


class ScoreHead(StrictModel):
    """What a ``scores.json`` holds before the benchmark's own figures (``Benchmark.metrics``): what
    was scored, how, and what the scoring could not use. Fields not given stay out of the file."""

    benchmark: str
    mode: Literal["strict", "official"]
    records: int = Field(ge=0, description="records scored")
    missing_predictions: int | None = Field(default=None, description="cases without a prediction")
    unknown_prediction_ids: list[str] | None = Field(
        default=None, description="prediction ids no case has (100 at most)"
    )
    bad_prediction_lines: list[BadPredictionLine] | None = None
    duplicate_prediction_ids: list[str] | None = None
    gold_failing: int | None = Field(default=None, description="eval selftest: records whose gold answer fails")
    gold_selftest: GoldSelftest | None = Field(default=None, description="eval score --run")
    format_errors: int | None = None
    request_errors: int | None = None
    transport_errors: int | None = None
    environment_errors: int | None = Field(
        default=None, description="eval score --run: cases left out because their tool environment failed"
    )
    model: str | None = None
    prompt_version: str | None = None
    usage: dict[str, RoleUsage] | None = Field(
        default=None, description="eval score --run: the task's model calls per role"
    )
    cost: CostSummary | None = Field(default=None, description="eval score --run with a price table: money spent")


class ScoreIntervals(StrictModel):
    """``scores.json``'s ``intervals``: a confidence interval on each estimate among the figures,
    and how they were made. ``figures`` mirrors the figures' nesting, ``[low, high]`` in place of
    each float (null where a resample lacked the figure)."""

    confidence: float
    method: Literal["percentile", "degenerate"] = Field(
        description="percentile: scipy.stats.bootstrap over clusters within categories; degenerate: "
        "one cluster per category, nothing to resample"
    )
    resamples: int = Field(ge=0)
    seed: int
    units: int = Field(ge=0, description="clusters resampled (cases, when no records are grouped)")
    clustered: bool = Field(description="whether some records were resampled together (trials, steps, one chain)")
    strata: int = Field(
        ge=0,
        description="groups resampled on their own: each category of two clusters or more (it keeps its "
        "size), and the categories of one cluster together",
    )
    figures: dict[str, Any]


def scores_object(head: ScoreHead, figures: dict[str, Any], intervals: ScoreIntervals | None = None) -> dict[str, Any]:
    """The ``scores.json`` object: ``head``'s fields, then the figures (a figure of a head field's
    name takes its place), then their ``intervals`` when there are any."""
    out = {**head.model_dump(mode="json", exclude_unset=True), **figures}
    if intervals is not None:
        out["intervals"] = intervals.model_dump(mode="json")
    return out


def write_scores(path: Path, head: ScoreHead, figures: dict[str, Any], intervals: ScoreIntervals | None = None) -> None:
    """Write ``scores.json`` atomically (:func:`scores_object`)."""
    write_json(path, scores_object(head, figures, intervals))


def score_intervals(scores: dict[str, Any]) -> ScoreIntervals | None:
    """The ``intervals`` of a ``scores.json`` object read back; None when it has none (written with
    ``--resamples 0``, or by an older benchsmith) or they are not of that shape."""
    try:
        return ScoreIntervals.model_validate(scores["intervals"]) if "intervals" in scores else None
    except ValidationError:
        return None


def score_head(scores: dict[str, Any]) -> ScoreHead | None:
    """The head of a ``scores.json`` object read back, None when it has none of the shape
    :func:`write_scores` writes (a file of another program, or of an older benchsmith)."""
    try:
        return ScoreHead.model_validate({k: scores[k] for k in ScoreHead.model_fields if k in scores})
    except ValidationError:
        return None


class SelftestFailure(StrictModel):
    """One record of ``eval selftest`` whose gold answer does not pass."""

    id: str
    category: str | None = None
    error_type: str | None = None
    reason: str | None = None


class Selftest(StrictModel):
    """``selftest.json``: what was self-tested (the head of its ``scores.json``) and every failing record."""

    benchmark: str
    mode: Literal["strict", "official"]
    records: int = Field(ge=0)
    failing: list[SelftestFailure]


def write_selftest(path: Path, head: ScoreHead, failing: Callable[[], Iterable[SelftestFailure]]) -> None:
    """Write ``selftest.json`` atomically without holding the failing list (``failing()`` is called
    twice: it streams them, e.g. from ``records.jsonl``)."""
    write_json_streamed(
        path,
        head.model_dump(mode="json", include={"benchmark", "mode", "records"}),
        "failing",
        lambda: (f.model_dump(mode="json") for f in failing()),
    )


def read_selftest(path: Path) -> Selftest:
    """``selftest.json`` read back; one clear line when it is not of that shape."""
    return validate_shape(read_json(path), Selftest, where=str(path), fix="run `benchsmith eval selftest` again")
