"""The evaluation runner: asks a model to solve benchmark cases, concurrently and resumably.

A run folder (docs/eval/runs.md) holds one sub-folder per task. Every finished case is appended
to ``<task>/replies.jsonl`` (one write + fsync) the moment it finishes, keyed by case id, model and
prompt version; a re-run skips keys whose last status is ``ok`` or ``format_error`` and retries
``transport_error`` and ``environment_error`` (a tool server that failed: played again a few times
in the run first, never scored), so a killed run loses at most the cases in flight. Tasks (``eval/<benchmark>/_task.py``) are
registered by name; a task turns a case into model requests (pure), and a reply into the
benchmark's native prediction (pure), or says why it cannot (a format error, kept with the raw
reply, never a crash).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
import time
from abc import ABC, abstractmethod
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Iterator, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

from benchsmith.models import (  # noqa: F401  (read_json_reply: re-exported)
    ParseError,
    TransportError,
    backoff_delay,
    read_json_reply,
)
from benchsmith.schemas import (
    RUN_FORMAT,
    Bar,
    Bars,
    EnvironmentFault,
    GoldSelftest,
    PriceTable,
    RecordResult,
    Registry,
    ReplyError,
    ReplyLine,
    ReplyStatus,
    ReplyTurn,
    RunManifest,
    RunModel,
    RunTask,
    RuntimeFault,
    ScoreHead,
    Split,
    UserError,
    append_reply,
    failure_limit,
    iter_cases,
    iter_reply_lines,
    price_usage,
    read_json,
    read_jsonl,
    read_replies,
    read_run_manifest,
    run_items,
    validate_shape,
    write_cases,
    write_jsonl,
    write_run_manifest,
)

from .core import BUILTIN_BENCHMARKS, Benchmark, EvalCase, get_benchmark
from .depth import shallow_reply
from .stats import IntervalOptions
from .usage import run_usage

#: data names a task's loader knows without a folder (``--split sandbox --tasks agent``: the packaged scenarios)
PACKAGED_DATA = ("sandbox",)
DONE = ("ok", "format_error", "request_error")
STATUSES = ("ok", "format_error", "request_error", "transport_error", "environment_error")
#: seconds of the first wait before a case whose environment failed is played again (doubles, jittered)
ENVIRONMENT_BACKOFF = (1.0, 15.0)
#: how an end-to-end task asks for a call sequence (``TaskOptions.strategy``; run.json ``strategy``, missing = react)


# ---- model side ---------------------------------------------------------------------------------
class ChatClient(Protocol):
    """What the runner needs from a model client (``benchsmith.models.ModelClient``)."""

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_schema: dict[str, Any] | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
    ) -> Any: ...


@dataclass(frozen=True)
class Request:
    """One model call, as a task asks for it."""

    messages: list[dict[str, Any]]
    json_schema: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    temperature: float | None = None  # overrides the model configuration's (independent trials)
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.json_schema is not None:
            from benchsmith.models import bounded_strings, closed_schema

            object.__setattr__(self, "json_schema", bounded_strings(closed_schema(self.json_schema)))

    def key(self) -> str:
        blob = json.dumps(
            [self.messages, self.json_schema, self.tools, self.max_tokens, self.stop, self.temperature, self.seed],
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()  # model text may hold lone surrogates


@dataclass
class Turn:
    """One model call of a case: what was sent, what came back, what it was read as."""

    messages: list[dict[str, Any]]
    raw: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    parsed: Any = None
    latency_s: float = 0.0
    usage: dict[str, Any] = field(default_factory=dict)
    shared: bool = False  # the reply of an identical request made for another case
    role: str = "assistant"  # who answered: the model under test, or "user" (the user simulator)
    finish_reason: str | None = None  # "length": the output budget ran out
    seed: int | None = None  # the sampling seed sent with the request

    def as_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "raw": self.raw,
            "tool_calls": self.tool_calls,
            "parsed": self.parsed,
            "latency_s": round(self.latency_s, 4),
            "usage": self.usage,
            "shared": self.shared,
            "role": self.role,
            "finish_reason": self.finish_reason,
            "seed": self.seed,
        }


@dataclass
class Outcome:
    """How a case ended: ``ok`` (a prediction), ``format_error`` (the reply could not be read; the raw
    text is the prediction), ``request_error`` (the endpoint refused the request, e.g. longer than its
    context; final, no prediction) or ``transport_error`` (no reply after retries; retried next run)."""

    status: ReplyStatus
    result: Any
    turns: list[Turn] = field(default_factory=list)
    error: dict[str, str] | None = None


class CallContext:
    """What a task's ``solve`` uses to talk to the model: one call = one turn, identical requests
    across cases of a run share one model call (T-Eval asks reason, retrieve and understand from
    the same prompt). Episodic tasks also get the user simulator's client (``role="user"``) and the
    run's episode journal (``journal``: every finished turn, for resuming after a kill)."""

    def __init__(
        self,
        client: ChatClient,
        calling: str,
        memo: dict[str, asyncio.Future[Any]],
        counters: Counter[str],
        *,
        user_client: ChatClient | None = None,
        journal: Any = None,
        key: str | None = None,
        user_local: bool = False,
        seed: int = 0,
    ) -> None:
        self.client = client
        self.seed = seed  # the run's: trial t of a case samples with seed * 1000 + t
        self.user_client = user_client
        self.user_local = user_local  # the user simulator is the local base model: JSON replies after a worked example
        self.calling = calling  # "prompt" (JSON-constrained text) or "tools" (native tool calling)
        self.journal = journal
        self.key = key
        self._memo = memo
        self._counters = counters

    async def call(self, req: Request, role: str = "assistant", share: bool = True) -> tuple[Any, Turn]:
        """One model call; ``share=False`` never shares it with an identical request of another case
        (episodes: each is independent, and counts its own tokens)."""
        client = self.client
        prefix = ""
        if role == "user":
            if self.user_client is None:
                raise UserError(
                    "this task needs a user simulator model and none was given",
                    fix="pass --user-model (default: the local model)",
                )
            client, prefix = self.user_client, "user_"
        memo: dict[str, asyncio.Future[Any]] = self._memo if share else {}
        key = f"{role}:{req.key()}"
        fut = memo.get(key)
        shared = fut is not None
        if fut is None:
            fut = memo[key] = asyncio.get_running_loop().create_future()
            extra: dict[str, Any] = {}
            if req.temperature is not None:
                extra["temperature"] = req.temperature
            if req.seed is not None:
                extra["seed"] = req.seed
            try:
                reply = await client.acomplete(
                    req.messages,
                    tools=req.tools,
                    json_schema=req.json_schema,
                    max_tokens=req.max_tokens,
                    stop=req.stop,
                    **extra,
                )
            except Exception as exc:  # noqa: BLE001 - classified below; never cached
                del memo[key]
                fut.set_exception(exc)
                fut.exception()  # mark retrieved
                raise _transport(exc) from exc
            self._counters[prefix + "model_calls"] += 1
            usage = getattr(reply, "usage", None) or {}
            self._counters[prefix + "prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
            self._counters[prefix + "completion_tokens"] += int(usage.get("completion_tokens") or 0)
            fut.set_result(reply)
        else:
            try:
                reply = await asyncio.shield(fut)
            except Exception as exc:  # noqa: BLE001
                raise _transport(exc) from exc
        turn = Turn(
            messages=req.messages,
            raw=getattr(reply, "text", "") or "",
            tool_calls=list(getattr(reply, "tool_calls", None) or []),
            latency_s=0.0 if shared else float(getattr(reply, "latency_s", 0.0) or 0.0),
            usage={} if shared else dict(getattr(reply, "usage", None) or {}),
            shared=shared,
            role=role,
            finish_reason=getattr(reply, "finish_reason", None),
            seed=req.seed if req.seed is not None else getattr(getattr(client, "config", None), "seed", None),
        )
        return reply, turn


def budget_exhausted(outcome: Outcome) -> Outcome:
    """``outcome`` with the error type ``output_budget_exhausted`` when it is a format error whose last
    reply the endpoint cut at its output budget (``finish_reason`` "length"): the model ran out of
    tokens before an answer, which a reasoning model does by thinking too long; the message says how
    many were reasoning when the endpoint reports it. Never a transport error: the endpoint answered."""
    if outcome.status != "format_error" or not outcome.turns or outcome.turns[-1].finish_reason != "length":
        return outcome
    usage = outcome.turns[-1].usage
    spent = usage.get("completion_tokens")
    reasoning = usage.get("reasoning_tokens")
    how = f"{spent} tokens" if isinstance(spent, int) else "its tokens"
    if isinstance(reasoning, int):
        how += f", {reasoning} of them reasoning"
    was = (outcome.error or {}).get("type", "unreadable")
    error = {
        "type": "output_budget_exhausted",
        "message": f"the reply used its whole output budget ({how}) before an answer ({was})",
    }
    return dataclasses.replace(outcome, error=error)


def _transport(exc: BaseException) -> BaseException:
    if isinstance(exc, UserError):
        return exc  # a bad key or model name: stop the run, the user must fix it
    kind = getattr(exc, "kind", None)
    if kind is None:
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            kind = "timeout"
        elif isinstance(exc, (ConnectionError, OSError)):
            kind = "connection"
        else:
            return exc  # a bug, not a transport problem: let it surface
    # one transport exception: the client's, its message naming what failed underneath
    return TransportError(f"{type(exc).__name__}: {exc}"[:500], kind=str(kind), status=getattr(exc, "status", None))


# ---- tasks ----------------------------------------------------------------------------------------
#: how the model is asked: "prompt" (JSON-constrained text) or "tools" (native tool calling)
Calling = Literal["prompt", "tools"]


@pydantic_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class TaskOptions:
    """How a run's tasks ask and how long they may go on. Ranges are declared here, so a bad value is
    refused (a pydantic ``ValidationError`` naming the field) however the options are made."""

    # Field defaults go by keyword: the type checker takes a positional one for no default
    calling: Calling = "prompt"
    max_tokens: int = Field(default=384, ge=1)
    # end-to-end tasks: model calls per case (Chinook gold chains: up to 10 calls)
    step_budget: int = Field(default=12, ge=1)
    variant: Literal["standard", "condensed", "minimal"] = "standard"  # ACEBench prompt variant
    trials: int = Field(default=1, ge=1)  # episodic tasks: independent trials per case (pass^k, pass@k for k <= trials)
    # sampling temperature of trials when trials > 1 (trial t samples with seed run_seed * 1000 + t)
    trial_temperature: float = Field(default=0.7, ge=0, allow_inf_nan=False)
    max_turns: int = Field(default=12, ge=1)  # episodes: user messages
    max_steps: int = Field(default=8, ge=1)  # episodes: assistant replies after one user message
    max_tool_calls: int = Field(default=40, ge=1)  # episodes: tool calls
    # episodes: prompt + completion tokens of the model under test
    max_episode_tokens: int = Field(default=250_000, ge=1)
    episode_wall_s: float = Field(default=1800.0, gt=0, allow_inf_nan=False)  # episodes: seconds of model and tool time
    # nl2api end to end: "react" (one call per step, outputs fed back) or "direct" (the whole sequence at once)
    strategy: Literal["react", "direct"] = "react"
    # a case whose tool environment failed (a server that died, hung, answered malformed) is played
    # again this many times, after a backoff, before it is recorded as environment_error (the next run
    # retries it); the model is never charged for it
    environment_retries: int = Field(default=2, ge=0)
    # the user simulator's output budget per message; None: 120 tokens (JSON replies) or 160 (text)
    user_max_tokens: int | None = Field(default=None, ge=1)


class Task(ABC):
    """One benchmark's cases under one prompt. Subclasses register with :func:`task`, which names
    the benchmark (and so the task: its name unless it is a second task of that benchmark)."""

    name: ClassVar[str]
    #: the benchmark that loads and scores the task's cases (set by :func:`task`)
    benchmark: ClassVar[str]
    #: ``derive(split_dir, out_dir, seed=0) -> report``: the task's cases derived from a split
    #: (``benchsmith eval derive``; the derived folder is named after the task), or None
    deriver: ClassVar[Callable[..., dict[str, Any]] | None] = None
    #: fewest cases a small run (``benchsmith demo --limit N``) takes, so its headline means something
    min_cases: ClassVar[int] = 0
    description: ClassVar[str] = ""

    def __init__(self, data: Path, options: TaskOptions) -> None:
        self.data = Path(data)
        self.options = options

    def load(self) -> list[EvalCase]:
        """The cases this task can run (the benchmark's loader, minus what :meth:`runnable` refuses)."""
        return [c for c in get_benchmark(self.benchmark).load(self.data) if self.runnable(c)]

    def runnable(self, case: EvalCase) -> bool:
        return True

    def trials_for(self, case: EvalCase) -> int:
        """Independent runs of ``case`` (episodic tasks: ``options.trials``); each is its own case
        ``<id>~t<N>`` with ``meta["trial"] = N`` and ``meta["base_id"] = <id>``."""
        return 1

    @abstractmethod
    def prompt_version(self) -> str:
        """The version string of the prompt(s) this task sends (part of every reply's key)."""

    @abstractmethod
    async def solve(self, case: EvalCase, ctx: CallContext) -> Outcome:
        """Ask the model; never raises for a bad reply (format error) — only TransportError / UserError."""


class SingleCallTask(Task):
    """A task with one model call per case: ``request`` (pure) -> call -> ``parse`` (pure)."""

    @abstractmethod
    def request(self, case: EvalCase) -> Request: ...

    @abstractmethod
    def parse(self, case: EvalCase, text: str, tool_calls: list[dict[str, Any]]) -> tuple[Any, Any]:
        """``(native prediction, parsed form)``; raises :class:`ParseError`."""

    async def solve(self, case: EvalCase, ctx: CallContext) -> Outcome:
        req = self.request(case)
        _, turn = await ctx.call(req)
        try:
            result, parsed = self.parse(case, turn.raw, turn.tool_calls)
            shallow_reply(parsed)  # turn.parsed is written to replies.jsonl
            if not isinstance(result, str):
                shallow_reply(result)
        except ParseError as exc:
            turn.parsed = None
            return Outcome("format_error", turn.raw, [turn], {"type": exc.code, "message": str(exc)[:500]})
        except (RecursionError, MemoryError) as exc:  # a parse that walked a reply too deep or too big
            turn.parsed = None
            code = "too_deep" if isinstance(exc, RecursionError) else "too_large"
            return Outcome(
                "format_error", turn.raw, [turn], {"type": code, "message": f"{type(exc).__name__} reading the reply"}
            )
        turn.parsed = parsed
        return Outcome("ok", result, [turn])


# each built-in benchmark's task lives in its ``_task`` module, which its package imports on first use
TASKS: Registry[type[Task]] = Registry("task", tuple(f"{m}._task" for m in BUILTIN_BENCHMARKS), set_name=True)


def task(bench: type[Benchmark], name: str | None = None) -> Callable[[type[Task]], type[Task]]:
    """Register a :class:`Task` subclass as a run task of the benchmark class ``bench``, under the
    benchmark's name (the ``--tasks`` value), or under ``name`` for a second task of the benchmark."""
    if not bench.name:
        raise TypeError(f"{bench.__name__} is not a registered benchmark: decorate it with @benchmark first")

    def deco(cls: type[Task]) -> type[Task]:
        cls.benchmark = bench.name
        return TASKS.register(name or bench.name)(cls)

    return deco


def get_task(name: str) -> type[Task]:
    return TASKS.get_or_raise(name, fix=f"choose one of {', '.join(sorted(TASKS))}")


# ---- selection ------------------------------------------------------------------------------------
def _spread_order(categories: list[str]) -> list[str]:
    """Categories ordered so that each family (the part before ``/`` or ``:``) comes up once before
    any comes up twice: instruct/json, plan/json, ..., then instruct/string, plan/str, ...

    >>> _spread_order(["a/1", "a/2", "b/1", "c"])
    ['a/1', 'b/1', 'c', 'a/2']
    """
    families: dict[str, list[str]] = defaultdict(list)
    for c in sorted(categories):
        families[c.replace(":", "/").split("/", 1)[0]].append(c)
    order = []
    for i in range(max((len(v) for v in families.values()), default=0)):
        order += [v[i] for _, v in sorted(families.items()) if i < len(v)]
    return order


def select_cases(cases: list[EvalCase], limit: int | None, seed: int = 0) -> list[EvalCase]:
    """Up to ``limit`` cases, spread over categories (round robin in :func:`_spread_order`, each
    category shuffled with ``seed``), kept in file order; all cases when ``limit`` is None."""
    if limit is None or limit >= len(cases):
        return list(cases)
    by_cat: dict[str, list[EvalCase]] = defaultdict(list)
    for c in cases:
        by_cat[c.category].append(c)
    for cat, items in by_cat.items():
        random.Random(f"{seed}:{cat}").shuffle(items)
    picked: list[EvalCase] = []
    queues = [by_cat[c] for c in _spread_order(list(by_cat))]
    while len(picked) < limit and any(queues):
        for q in queues:
            if q and len(picked) < limit:
                picked.append(q.pop(0))
    order = {c.id: i for i, c in enumerate(cases)}
    return sorted(picked, key=lambda c: order[c.id])


# ---- the run ----------------------------------------------------------------------------------------
def reply_key(case_id: str, model: str, prompt_version: str) -> str:
    return hashlib.sha256(f"{case_id}\x00{model}\x00{prompt_version}".encode("utf-8")).hexdigest()


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class _DerivedShape(_Open):
    folder: str


class _DeriveReportShape(_Open):
    derived: dict[str, _DerivedShape] = {}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def expand_trials(t: Task, cases: list[EvalCase]) -> list[EvalCase]:
    """Each case as many times as ``t.trials_for`` says (one trial keeps the case as it is)."""
    out: list[EvalCase] = []
    for c in cases:
        n = t.trials_for(c)
        if n <= 1:
            out.append(c)
            continue
        out += [
            c.model_copy(update={"id": f"{c.id}~t{i}", "meta": {**c.meta, "trial": i, "base_id": c.id}})
            for i in range(n)
        ]
    return out


@dataclass
class PlannedTask:
    task: Task
    cases: list[EvalCase]
    folder: Path


def _derive_report(folder: Path) -> dict[str, Any]:
    """``derived`` of a folder's derive_report.json (deriver -> folder, benchmark, records), checked."""
    report = read_json(folder / "derive_report.json")
    validate_shape(
        report,
        _DeriveReportShape,
        where=str(folder / "derive_report.json"),
        fix="derive the folder again with `benchsmith eval derive`",
    )
    return report.get("derived") or {}


def plan_tasks(
    split: Path,
    out: Path,
    names: Iterable[str] | None,
    options: TaskOptions,
    limit: int | dict[str, int] | None,
    seed: int,
    categories: Iterable[str] | None = None,
    task_data: dict[str, Path] | None = None,
) -> list[PlannedTask]:
    """Which tasks run on which data. A benchsmith split (``samples.jsonl``) runs ``nl2api`` on the
    split itself and the derived benchmarks on cases derived into ``RUN_DIR/data``; a folder written
    by ``benchsmith eval derive`` runs its derived benchmarks; any other folder needs ``--tasks``.
    ``task_data`` gives a task other data (``{"agent": Path("sandbox")}``); ``categories`` keeps only
    cases whose category starts with one of them."""
    split = Path(split)
    if not split.exists() and not ((names or task_data) and str(split) in PACKAGED_DATA):
        raise UserError(
            f"{split} does not exist", fix="pass a split folder (benchsmith nl2api build) or a benchmark folder"
        )
    sources: dict[str, Path] = {}
    if Split(split).has(Split.SAMPLES):
        from .derive import DERIVERS, derive_all

        sources["nl2api"] = split
        derived = out / "data"
        # only what the run's tasks read is derived (an nl2api-only run derives nothing); a resumed
        # run that asks for more derives again, the same cases (derivation is seeded)
        needed = [sub for sub in DERIVERS if (not names or sub in names) and sub not in (task_data or {})]
        have = set(_derive_report(derived)) if (derived / "derive_report.json").is_file() else set()
        if needed and not set(needed) <= have:
            derive_all(split, derived, sorted(have | set(needed), key=list(DERIVERS).index), seed=seed)
        for sub in DERIVERS:  # each derived folder runs the task of the same name
            sources[sub] = derived / sub
    elif (split / "derive_report.json").is_file():
        for sub, info in _derive_report(split).items():
            sources[sub] = split / info["folder"]
    for name, data in (task_data or {}).items():
        sources[name] = Path(data)
    wanted = list(names) if names else list(sources)
    if not wanted:
        raise UserError(
            f"{split}: cannot tell which benchmark this folder holds",
            fix=f"name the task with --tasks ({', '.join(sorted(TASKS))})",
        )
    planned = []
    for name in wanted:
        cls = get_task(name)
        data = sources.get(name, split)
        t = cls(data, options)
        loaded = t.load()
        if categories:
            prefixes = tuple(categories)
            loaded = [c for c in loaded if c.category.startswith(prefixes)]
        cases = expand_trials(t, select_cases(loaded, limit.get(name) if isinstance(limit, dict) else limit, seed))
        if not cases:
            raise UserError(f"task {name}: no runnable case in {data}", fix="check the folder or drop the task")
        planned.append(PlannedTask(t, cases, out / name))
    return planned


@dataclass
class RunResult:
    run_dir: Path
    tasks: dict[str, RunTask]
    status: str


async def _run_async(
    planned: list[PlannedTask],
    client: ChatClient,
    model: dict[str, Any],
    out: Path,
    calling: str,
    concurrency: int,
    split: Path,
    progress: bool,
    max_consecutive_failures: int,
    user_client: ChatClient | None = None,
    user_model: dict[str, Any] | None = None,
    prices: PriceTable | None = None,
    seed: int = 0,
    repeat: tuple[int, int] | None = None,
) -> RunResult:
    from .episode import Journal

    run_json = out / "run.json"
    previous = read_run_manifest(run_json) if run_json.is_file() else RunManifest()
    if previous.model is not None and previous.model.name != model["name"]:
        raise UserError(
            f"{out} holds a run of model {previous.model.name!r}, not {model['name']!r}",
            fix="use another --out folder for another model",
        )
    meta = RunManifest(
        format=RUN_FORMAT,
        run_id=previous.run_id or f"{_now().replace(':', '-')}-{model['name']}".replace("/", "_"),
        model=RunModel.model_validate(model),
        mode=calling,  # run.json keeps its key
        split=str(split.resolve()) if split.exists() else str(split),
        concurrency=concurrency,
        strategy=planned[0].task.options.strategy if planned else "react",
        created_at=previous.created_at or _now(),
        updated_at=_now(),
        status="running",
        tasks={},
    )
    if user_model is not None:
        meta.user_model = RunModel.model_validate(user_model)  # the model that played the user in episodes
    if model.get("local") and concurrency > 1:
        # measured on the local server: 12 T-Eval cases twice at seed 0, temperature 0 gave 12 of 12
        # identical replies one request at a time and 8 of 12 with two in flight
        meta.nondeterminism = (
            f"the local server decodes up to {concurrency} requests in one batch, and which requests share a batch "
            "changes floating-point sums, so replies can differ between runs of the same settings; "
            "--concurrency 1 gives identical replies"
        )
    if repeat is not None:
        meta.repeat, meta.repeats = repeat
    if prices is not None or previous.prices is not None:
        meta.prices = prices or previous.prices  # a resumed run keeps the table it was given
    counters: dict[str, Counter[str]] = {p.task.name: Counter() for p in planned}
    pending: list[tuple[PlannedTask, EvalCase, str]] = []
    done_before: dict[str, int] = {}
    for p in planned:
        p.folder.mkdir(parents=True, exist_ok=True)
        write_cases(p.folder / "cases.jsonl", p.cases)
        version = p.task.prompt_version()
        replies = read_replies(p.folder / "replies.jsonl")
        n_done = 0
        for c in p.cases:
            key = reply_key(c.id, model["name"], version)
            rec = replies.get(key)
            if rec is not None and rec.status in DONE:
                n_done += 1
            else:
                pending.append((p, c, key))
        done_before[p.task.name] = n_done
        meta.tasks[p.task.name] = RunTask(
            benchmark=p.task.benchmark,
            data=str(p.task.data.resolve()) if p.task.data.exists() else str(p.task.data),
            cases=len(p.cases),
            prompt_version=version,
        )
    write_run_manifest(run_json, meta)

    journals = {p.task.name: Journal(p.folder / "episodes.jsonl") for p in planned}
    memo: dict[str, asyncio.Future[Any]] = {}
    last_failure = "?"  # the endpoint's last failure, for the message when the stop rule ends the run
    wall: dict[str, float] = defaultdict(float)
    t_start = time.monotonic()

    bars: dict[str, Bar] = {}  # one per task, from the run's one progress display

    async def work(item: tuple[PlannedTask, EvalCase, str]) -> bool:
        """Play one case and journal its reply; True when the endpoint did not answer."""
        nonlocal last_failure
        p, case, key = item
        started = _now()
        rng = random.Random(key)  # the backoff's jitter
        ctx = CallContext(
            client,
            calling,
            memo,
            counters[p.task.name],
            user_client=user_client,
            journal=journals[p.task.name],
            key=key,
            user_local=bool((user_model or {}).get("local")),
            seed=seed,
        )
        attempt = 0
        while True:
            try:
                outcome = await p.task.solve(case, ctx)
            except TransportError as exc:
                # a request the endpoint refuses (HTTP 4xx: too long for the context, ...) is final for
                # this case; connection, timeout, 429 and 5xx failures are retried by the next run
                status: ReplyStatus = "request_error" if exc.kind == "request" else "transport_error"
                outcome = Outcome(status, None, [], {"type": exc.kind, "message": str(exc)})
                if status == "transport_error":
                    last_failure = str(exc)
            except EnvironmentFault as exc:
                # the tool server, not the model: played again from its journaled turns on a fresh
                # environment; still failing, it is left for the next run and never scored
                attempt += 1
                if attempt <= p.task.options.environment_retries:
                    await asyncio.sleep(backoff_delay(attempt, *ENVIRONMENT_BACKOFF, rng))
                    continue
                outcome = Outcome("environment_error", None, [], {"type": "environment", "message": str(exc)[:1000]})
                last_failure = str(exc)
            break
        outcome = budget_exhausted(outcome)
        append_reply(
            p.folder / "replies.jsonl",
            ReplyLine(
                id=case.id,
                key=key,
                model=model["name"],
                prompt_version=p.task.prompt_version(),
                status=outcome.status,
                result=outcome.result,
                error=ReplyError.model_validate(outcome.error) if outcome.error else None,
                turns=[ReplyTurn.model_validate(t.as_json()) for t in outcome.turns],
                started_at=started,
                finished_at=_now(),
            ),
        )
        wall[p.task.name] = time.monotonic() - t_start
        return outcome.status in ("transport_error", "environment_error")

    stopped: int | None = None
    try:
        with Bars(enabled=progress) as display:
            for p in planned:
                bars[p.task.name] = display.add(p.task.name, total=len(p.cases), done=done_before.get(p.task.name, 0))
            stopped = await run_items(
                pending,
                work,
                concurrency=concurrency,
                stop_after=max_consecutive_failures,
                done=lambda item, _: bars[item[0].task.name].advance(),
            )
    finally:
        summary = finish_run(out, planned, model["name"], meta, counters, wall)
    if stopped is not None:
        raise RuntimeFault(
            f"the model endpoint or a tool environment failed {stopped} cases in a row (last: {last_failure}); "
            f"everything finished so far is kept in {out} — re-run the same command to resume"
        )
    return RunResult(out, summary.tasks, summary.status or "")


def finish_run(
    out: Path,
    planned: list[PlannedTask],
    model_name: str,
    meta: RunManifest,
    counters: dict[str, Counter[str]] | None = None,
    wall: dict[str, float] | None = None,
) -> RunManifest:
    """Rebuild each task's predictions.jsonl from its replies and update run.json."""
    previous = read_run_manifest(out / "run.json") if (out / "run.json").is_file() else RunManifest()
    any_transport = False
    for p in planned:
        version = p.task.prompt_version()
        replies = read_replies(p.folder / "replies.jsonl")
        preds: list[dict[str, Any]] = []
        statuses: Counter[str] = Counter()
        for c in p.cases:
            rec = replies.get(reply_key(c.id, model_name, version))
            if rec is None:
                statuses["pending"] += 1
                continue
            statuses[rec.status] += 1
            if rec.status in ("ok", "format_error"):
                preds.append({"id": c.id, "result": rec.result})
        write_jsonl(p.folder / "predictions.jsonl", preds)
        info = meta.tasks[p.task.name]
        old = previous.tasks.get(p.task.name)
        info.done = sum(statuses[s] for s in DONE)
        info.status_counts = {s: statuses[s] for s in (*STATUSES, "pending")}
        counts = (counters or {}).get(p.task.name, Counter())
        same = old is not None and old.prompt_version == version  # usage adds up over resumed runs
        for k in (
            "model_calls",
            "prompt_tokens",
            "completion_tokens",
            "user_model_calls",
            "user_prompt_tokens",
            "user_completion_tokens",
        ):
            setattr(info, k, ((getattr(old, k) or 0) if same else 0) + int(counts.get(k, 0)))
        before = (old.wall_s if old is not None else None) or 0.0
        info.wall_s = round(before + float((wall or {}).get(p.task.name, 0.0)), 2)
        user_name = meta.user_model.name if meta.user_model is not None else None
        info.usage = run_usage(p.folder, model_name, version, user_name) or None
        if meta.prices is not None and info.usage:
            info.cost = price_usage(info.usage, meta.prices, successes=0)  # correct cases: eval score --run
        any_transport |= bool(statuses["transport_error"] or statuses["environment_error"] or statuses["pending"])
    meta.updated_at = _now()
    meta.status = "partial" if any_transport else "complete"
    write_run_manifest(out / "run.json", meta)
    return meta


def run_eval(
    split: str | Path,
    client: ChatClient,
    model: dict[str, Any],
    out: str | Path,
    *,
    tasks: Iterable[str] | None = None,
    calling: Calling = "prompt",
    concurrency: int = 4,
    limit: int | dict[str, int] | None = None,
    seed: int = 0,
    options: TaskOptions | None = None,
    progress: bool = True,
    max_consecutive_failures: int | None = None,
    user_client: ChatClient | None = None,
    user_model: dict[str, Any] | None = None,
    categories: Iterable[str] | None = None,
    task_data: dict[str, Path] | None = None,
    prices: PriceTable | None = None,
    repeat: tuple[int, int] | None = None,
) -> RunResult:
    """Run the tasks of ``split`` with ``client``; see the module docstring. ``model`` is the JSON-able
    description written to run.json (``name`` is part of every reply key; never put a key in it).
    ``limit`` caps the cases per task: one number for all, or ``{task: n}`` (tasks not named: all).
    ``user_client`` plays the user in episodic tasks (default: ``client``); ``user_model`` describes it
    in run.json (default: ``model``). ``prices`` (``--prices``) are kept in run.json, which then
    gives each task's cost. ``repeat`` ``(n, of)`` marks the run as repeat n of ``eval run --repeats``
    (its client samples with its own seed; ``seed`` still selects the cases)."""
    if calling not in ("prompt", "tools"):
        raise UserError(f"unknown calling {calling!r}", fix="use prompt or tools (auto is resolved by the caller)")
    if concurrency < 1:
        raise UserError(f"concurrency must be at least 1, got {concurrency}", fix="pass --concurrency 1 or more")
    out = Path(out)
    opts = options or TaskOptions(calling=calling)
    if opts.calling != calling:
        opts = dataclasses.replace(opts, calling=calling)
    if (out / "run.json").is_file():
        read_run_manifest(out / "run.json")  # a run.json of the wrong shape: refused before any work
    planned = plan_tasks(Path(split), out, tasks, opts, limit, seed, categories, task_data)
    limit_fail = max_consecutive_failures or failure_limit(concurrency)
    if user_client is None:
        user_client, user_model = client, (user_model or model)
    return asyncio.run(
        _run_async(
            planned,
            client,
            model,
            out,
            calling,
            concurrency,
            Path(split),
            progress,
            limit_fail,
            user_client,
            user_model or model,
            prices,
            int(model.get("seed") or 0) if model.get("seed") is not None else seed,
            repeat,
        )
    )


def score_run(
    run_dir: str | Path,
    mode: str = "strict",
    intervals: IntervalOptions | None = None,
    prices: PriceTable | None = None,
) -> dict[str, dict[str, Any]]:
    """Score every task of a run on the cases the run covers; writes ``<task>/records.jsonl`` and
    ``<task>/scores.json`` (streamed: see :func:`~benchsmith.eval.run_score`) and returns the
    scores per task. A task folder holds the run's other files too, so each file is replaced
    atomically on its own: the old ``scores.json`` is removed just before the new records replace
    the old ones and the new ``scores.json`` is written last. So a ``scores.json`` present (and
    newer than ``records.jsonl``) means a finished scoring of those records; none means the
    scoring was cut short (score the run again). Each scores.json also holds the task's usage per
    role, summed from its replies, and with ``prices`` (else the run's own, from ``eval run
    --prices``) what it cost, per correct case too."""
    import contextlib

    from .core import Predictions
    from .run import check_mode, stream_score

    run_dir = Path(run_dir)
    if not (run_dir / "run.json").is_file():
        raise UserError(f"{run_dir} has no run.json", fix="pass a folder written by `benchsmith eval run`")
    meta = read_run_manifest(run_dir / "run.json")
    m = check_mode(mode)
    out: dict[str, dict[str, Any]] = {}

    for name, info in meta.tasks.items():
        folder = run_dir / name
        if not (folder / "cases.jsonl").is_file():
            read_jsonl(folder / "cases.jsonl", EvalCase)  # its error for a missing file
        bench = get_benchmark(info.benchmark)
        has_preds = (folder / "predictions.jsonl").is_file()
        model_name = meta.model.name if meta.model is not None else None
        # a case whose tool environment failed is left out: the model is never charged for it
        last: dict[str, tuple[str, bool]] = {}  # key: (case id, environment failed), the last line wins
        for _, r in iter_reply_lines(folder / "replies.jsonl"):
            if r is not None and r.model == model_name and r.prompt_version == info.prompt_version:
                last[r.key] = (r.id, r.status == "environment_error")
        env_failed = {case_id for case_id, bad in last.values() if bad}
        with contextlib.ExitStack() as stack:
            preds = stack.enter_context(Predictions(folder / "predictions.jsonl")) if has_preds else None
            tally: Counter[str] = Counter()  # missing predictions and the gold self-test, read by extra()

            def prediction_for(
                case: EvalCase, preds: Predictions | None = preds, tally: Counter[str] = tally
            ) -> str | None:
                pred = preds.get(case.id) if preds is not None else None
                tally["missing"] += pred is None
                return pred

            def with_gold(
                cases: Iterable[EvalCase], bench: Benchmark = bench, tally: Counter[str] = tally
            ) -> Iterator[EvalCase]:
                """The cases, each also scored with its gold answer as the prediction: the run's own
                gold self-test, so a low figure is read beside proof that the gold passes."""
                for case in cases:
                    tally["records"] += 1
                    tally["gold_failing"] += not bench.score(case, bench.gold_prediction(case), m).ok
                    yield case

            def extra(
                records: int,
                info: RunTask = info,
                tally: Counter[str] = tally,
                env_failed: set[str] = env_failed,
                folder: Path = folder,
            ) -> ScoreHead:
                counts = info.status_counts or {}
                user_name = meta.user_model.name if meta.user_model is not None else None
                name = meta.model.name if meta.model is not None else None
                usage = run_usage(folder, name, info.prompt_version, user_name) if name else {}
                table = prices or meta.prices
                cost = price_usage(usage, table, successes=tally["correct"]) if table is not None and usage else None
                return ScoreHead(
                    benchmark=info.benchmark,
                    mode=m,
                    records=records,
                    gold_selftest=GoldSelftest(records=tally["records"], gold_failing=tally["gold_failing"]),
                    missing_predictions=tally["missing"],
                    format_errors=int(counts.get("format_error", 0)),
                    request_errors=int(counts.get("request_error", 0)),
                    transport_errors=int(counts.get("transport_error", 0)),
                    environment_errors=len(env_failed) or None,
                    model=meta.model.name if meta.model is not None else None,
                    prompt_version=info.prompt_version,
                    usage=usage or None,
                    cost=cost,
                )

            def count(record: RecordResult, tally: Counter[str] = tally) -> None:
                tally["correct"] += record.ok

            out[name] = stream_score(
                bench,
                with_gold(c for c in iter_cases(folder / "cases.jsonl") if c.id not in env_failed),
                prediction_for,
                m,
                folder,
                extra,
                count,
                intervals=intervals or IntervalOptions(),
            )
    return out
