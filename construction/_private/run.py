"""Running a construction graph over many items: durable (SQLite checkpoints written before each
next step), resumable after kill -9, concurrent, and honest about what it made.

Layout of a run folder::

    run.json            graph, version, options, seed, role models (ids only), prompt versions
    checkpoints.sqlite  LangGraph's SqliteSaver: one thread per item
    samples.jsonl       accepted samples (rebuilt from the checkpoints at the end of every run)
    error_pool.jsonl    rejected items with every reason (where, code, reason)
    review.jsonl        items whose model reply could not be read, with the raw reply
    summary.json        counts, rejections by reason, model calls per accepted sample

Outputs are derived from the checkpoints, so every item appears exactly once however often the
run was interrupted; an item interrupted mid-way resumes at its last finished node.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from benchsmith.schemas import (
    CallUsage,
    EnvironmentFault,
    PriceTable,
    Sample,
    UserError,
    failure_limit,
    price_usage,
    read_json,
    run_items_in_threads,
    tally_usage,
    write_json,
    write_jsonl,
)

from .engine import ACCEPTED, FINAL, REJECTED, REVIEW, RUNNING, BuildContext, ConstructionGraph, get_graph

RUN_FILE = "run.json"


@dataclass
class ConstructSummary:
    graph: str
    items: int = 0
    accepted_items: int = 0
    samples: int = 0
    rejected: int = 0
    review: int = 0
    unfinished: int = 0
    resumed: int = 0
    skipped_done: int = 0
    rejected_by: dict[str, int] = field(default_factory=dict)
    model_calls: int = 0
    calls_by_node: dict[str, int] = field(default_factory=dict)
    calls_per_accepted: float | None = None
    tokens: dict[str, int] = field(default_factory=dict)
    #: per role (generator, planner, voter, ...): calls, tokens, calls cut by their output budget, latency
    #: percentiles, and cost when a price table was given (``RoleUsage`` fields)
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: money spent, from ``prices``: total and per accepted sample (``CostSummary`` fields)
    cost: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
    #: the endpoint failures in a row after which the run stopped (0: it did not stop early)
    stopped_after: int = 0
    seconds: float = 0.0
    out: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> list[str]:
        """The run in two lines (what came out, what it cost), then its last five errors."""
        rejected = ", ".join(f"{k}={v}" for k, v in self.rejected_by.items()) or "none"
        per = f"{self.calls_per_accepted:.2f}" if self.calls_per_accepted is not None else "n/a (nothing accepted)"
        lines = [
            f"{self.graph} {self.out}: {self.items} items, {self.samples} samples accepted, {self.rejected} rejected, "
            f"{self.review} to review, {self.unfinished} unfinished; rejected by: {rejected}",
            f"  model calls {self.model_calls} ({per} per accepted sample){self._spent()}; "
            f"resumed {self.resumed}, already done {self.skipped_done}; {self.seconds:.1f}s",
            *(f"  {e}" for e in self.errors[-5:]),
        ]
        if self.stopped_after:
            lines.append(f"  stopped after {self.stopped_after} consecutive model errors; re-run to resume")
        return lines

    def _spent(self) -> str:
        if not self.cost:
            return ""
        per = self.cost.get("per_success")
        each = f", {per:.4g} per accepted sample" if per is not None else ""
        return f"; {self.cost['total']:.4g} {self.cost['currency']}{each}"


def _run_record(spec: ConstructionGraph, seed: int, models: Any, source: str) -> dict[str, Any]:
    return {
        "graph": spec.name,
        "version": spec.version,
        "options": spec.options.given(),
        "seed": seed,
        "source": source,
        "models": models.describe(),
    }


def _check_run_folder(out: Path, record: dict[str, Any]) -> None:
    path = out / RUN_FILE
    if not path.is_file():
        return
    old = read_json(
        path,
        dict[str, Any],
        fix="this is not the run.json of a construction run: move it away or choose a new --out folder",
    )
    keys = ("graph", "version", "options", "seed", "source")
    diff = [k for k in keys if old.get(k) != record.get(k)]
    if diff:
        raise UserError(
            f"{out} holds a different construction run ({', '.join(diff)} differ)",
            fix="resume with the same options, or choose a new --out folder",
        )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("benchsmith")
    except PackageNotFoundError:
        return "unknown"


def _provenance(spec: ConstructionGraph, state: dict[str, Any], source: str) -> dict[str, Any]:
    versions = {"graph": f"{spec.name}@{spec.version}", "benchsmith": _version()}
    nodes = []
    for call in state.get("calls") or []:
        versions[f"prompt.{call['node']}"] = call["prompt"]
        versions[f"model.{call['node']}"] = call["model"]
        if call.get("model_file_sha256"):
            versions[f"model_file.{call['node']}"] = call["model_file_sha256"]
        nodes.append(call["node"])
    return {
        "source": source,
        "source_id": state.get("item_id"),
        "method": f"construct.{spec.name}",
        "versions": versions,
        "seed": state.get("seed"),
        "created_at": datetime.now(timezone.utc).isoformat(),
        "params": {
            "graph": spec.name,
            "nodes": nodes,
            "model_calls": len(state.get("calls") or []),
            "options": spec.options.given(),
        },
    }


def _finish_sample(spec: ConstructionGraph, state: dict[str, Any], raw: dict[str, Any], source: str) -> Sample:
    data = dict(raw)
    data.setdefault("provenance", _provenance(spec, state, source))
    return Sample.model_validate(data)


def run_graph(
    graph: str | ConstructionGraph,
    source: Any,
    out: str | Path,
    *,
    models: Any,
    options: dict[str, Any] | None = None,
    seed: int = 0,
    concurrency: int = 4,
    limit: int | None = None,
    env_context: Any = None,
    max_consecutive_errors: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    prices: PriceTable | None = None,
) -> ConstructSummary:
    """Run ``graph`` over the items read from ``source`` into folder ``out``; resumes what is there.
    ``prices`` (``--prices``) give summary.json the cost, per accepted sample too.
    It stops after ``max_consecutive_errors`` items in a row failed because the endpoint did not
    answer (default: :func:`~benchsmith.schemas.failure_limit` of ``concurrency``, as ``eval run``)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from benchsmith.models import TransportError

    for what, value, least in (
        ("limit", limit, 1),
        ("concurrency", concurrency, 1),
        ("max_consecutive_errors", max_consecutive_errors, 1),
    ):
        if value is not None and value < least:  # items[:-1] would quietly drop the last item
            raise UserError(
                f"run_graph {what}={value} is out of range: it must be at least {least}",
                fix=f"pass {what}={least} or more",
            )
    spec = get_graph(graph)(options) if isinstance(graph, str) else graph
    out = Path(out)
    t0 = time.monotonic()
    items = spec.read_items(source)
    if limit is not None:
        items = items[:limit]
    ids = [i for i, _ in items]
    dup = [k for k, n in Counter(ids).items() if n > 1]
    if dup:
        raise UserError(f"{source}: item ids repeat ({', '.join(dup[:5])})", fix="give every input item a unique id")
    source_name = Path(str(source)).name if not isinstance(source, (list, tuple)) else "<items>"
    record = _run_record(spec, seed, models, source_name)
    out.mkdir(parents=True, exist_ok=True)
    _check_run_folder(out, record)
    ctx = BuildContext(models=models, options=spec.options, env_context=env_context)
    ctx.resources = spec.resources(ctx)
    conn = sqlite3.connect(out / "checkpoints.sqlite", check_same_thread=False)
    summary = ConstructSummary(graph=spec.name, items=len(items), out=str(out))
    try:
        saver = SqliteSaver(conn)
        app = spec.build().compile(checkpointer=saver)
        prompt_versions = sorted({s.prompt_version() for s in getattr(spec, "steps", ())})
        write_json(out / RUN_FILE, {**record, "prompts": prompt_versions})

        def config(item_id: str) -> dict[str, Any]:
            return {"configurable": {"thread_id": item_id}, "recursion_limit": 1000}

        todo = []
        for item_id, item in items:
            snap = app.get_state(config(item_id))
            values = snap.values or {}
            if values.get("status") in FINAL:
                summary.skipped_done += 1
                continue
            todo.append((item_id, item, bool(values) and bool(snap.next)))

        def work(todo_item: tuple[str, dict[str, Any], bool]) -> bool:
            """Run one item; True when it failed because the endpoint did not answer."""
            item_id, item, resume = todo_item
            inp = None if resume else spec.initial(item_id, item, seed)
            try:
                app.invoke(inp, config(item_id), context=ctx, durability="sync")
            except TransportError as exc:
                summary.errors.append(f"{item_id}: {exc}")
                return exc.kind != "request"  # a refused request (HTTP 4xx) is the endpoint answering
            except EnvironmentFault as exc:  # a tool server that failed: the item waits for the next run
                summary.errors.append(f"{item_id}: {exc}")
                return True
            finally:
                ctx.kept.release(item_id)  # the environment its nodes kept open (a live server) stops
            return False

        finished = summary.skipped_done

        def advance(*_: Any) -> None:
            nonlocal finished
            finished += 1
            if progress:
                progress(finished, len(items))

        if progress:
            progress(finished, len(items))
        summary.resumed = sum(1 for *_, r in todo if r)
        summary.stopped_after = (
            run_items_in_threads(
                todo,
                work,
                concurrency=concurrency,
                stop_after=max_consecutive_errors or failure_limit(concurrency),
                done=advance,
            )
            or 0
        )
        _write_outputs(spec, app, items, out, source_name, summary, config, prices)
    finally:
        conn.close()
    summary.seconds = round(time.monotonic() - t0, 2)
    write_json(out / "summary.json", summary.to_dict())
    return summary


_BASE_KEYS = frozenset({"item_id", "item", "seed", "status", "reasons", "calls", "raw", "outputs"})


def _candidate(state: dict[str, Any]) -> dict[str, Any]:
    """What the graph had made of the item when it stopped (everything but the bookkeeping)."""
    return {k: v for k, v in state.items() if k not in _BASE_KEYS}


def _write_outputs(
    spec: ConstructionGraph,
    app: Any,
    items: list[tuple[str, dict[str, Any]]],
    out: Path,
    source: str,
    summary: ConstructSummary,
    config: Callable[[str], dict[str, Any]],
    prices: PriceTable | None = None,
) -> None:
    samples, pool, review = [], [], []
    seen: dict[str, str] = {}
    rejected_by: Counter[str] = Counter()
    by_node: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    calls: list[CallUsage] = []
    for item_id, item in items:
        state = app.get_state(config(item_id)).values or {}
        for call in state.get("calls") or []:
            by_node[call["node"]] += 1
            for k, v in (call.get("tokens") or {}).items():
                tokens[k] += int(v)
            calls.append(
                CallUsage(
                    role=str(call.get("role") or call["node"]),
                    model=call.get("model"),
                    usage={k: int(v) for k, v in (call.get("tokens") or {}).items() if isinstance(v, int)},
                    latency_s=float(call.get("latency_s") or 0.0),
                    finish_reason=call.get("finish"),
                )
            )
        status = state.get("status")
        reasons = list(state.get("reasons") or [])
        if status == ACCEPTED:
            made, bad = [], []
            for raw in spec.outputs(state):
                try:
                    made.append(_finish_sample(spec, state, raw, source))
                except ValueError as exc:
                    bad.append(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            for sample in made:
                if sample.id in seen:
                    bad.append(f"duplicate of the sample {sample.id} made from item {seen[sample.id]}")
            if made and not bad:
                seen.update({sample.id: item_id for sample in made})
                summary.accepted_items += 1
                samples.extend(made)
                continue
            status = REJECTED
            dup = any(b.startswith("duplicate of") for b in bad)
            reasons.append(
                {
                    "where": "sample",
                    "code": "duplicate" if dup else "invalid_sample",
                    "reason": "; ".join(bad) or "the graph produced no sample",
                }
            )
        if status == REJECTED:
            summary.rejected += 1
            first = reasons[0] if reasons else {"where": "?", "code": "unknown", "reason": ""}
            rejected_by[f"{first['where']}:{first['code']}"] += 1
            pool.append(
                {
                    "item_id": item_id,
                    "item": item,
                    "rejected_by": first,
                    "reasons": reasons,
                    "candidate": _candidate(state),
                    "calls": len(state.get("calls") or []),
                }
            )
        elif status == REVIEW:
            summary.review += 1
            rejected_by[f"review:{reasons[0]['code'] if reasons else 'unreadable'}"] += 1
            review.append(
                {
                    "item_id": item_id,
                    "item": item,
                    "reasons": reasons,
                    "raw": state.get("raw") or {},
                    "candidate": _candidate(state),
                }
            )
        elif status in (None, RUNNING):
            summary.unfinished += 1
    write_jsonl(out / "samples.jsonl", samples)
    write_jsonl(out / "error_pool.jsonl", pool)
    write_jsonl(out / "review.jsonl", review)
    summary.samples = len(samples)
    summary.rejected_by = dict(rejected_by.most_common())
    summary.model_calls = sum(by_node.values())
    summary.calls_by_node = dict(by_node.most_common())
    summary.tokens = dict(tokens)
    summary.calls_per_accepted = round(summary.model_calls / summary.samples, 2) if summary.samples else None
    usage = tally_usage(calls)
    if prices is not None and usage:
        summary.cost = price_usage(usage, prices, successes=summary.samples).model_dump()
    summary.usage = {role: u.model_dump() for role, u in usage.items()}
