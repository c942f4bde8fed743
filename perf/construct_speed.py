"""The construction framework's speed, in one run: its overhead per model call, its throughput
against the local model, and the model calls it spends per accepted sample.

1. overhead   ``queries`` (``--overhead-n`` items) and ``chains`` (``--chains-n`` of those queries,
              real NL2API tool execution on a SLOT split) with a zero-latency role model (its reply
              is a pure function of the messages), each timed three ways on the same items:

              * run_graph      LangGraph + SqliteSaver checkpoints (durability "sync"), outputs rebuilt
              * LangGraph      the same compiled graph without a checkpointer, one invoke per item
              * plain loop     the same node functions and routing in a Python loop, no LangGraph

              so that run_graph wall / model calls is the framework's cost per model call, split into
              the model steps themselves (prompt rendering, JSON schema, reply parsing: each timed
              directly on the states the loop saw), the other nodes (real tool calls, pure checks),
              the LangGraph engine, and the durable checkpoints.
2. local      ``queries`` (``--n-local`` items) against the local model server (Gemma 3 270M via
              xllamacpp) at concurrency 1, 4 and 16: model calls/s, items/s, wall and the ratio
              to concurrency 1. Every level draws the same tools (the same work) under its own run
              seed (the tool docs shuffled differently), so the server's slot cache cannot replay
              an earlier level. A running local server is reused (and left running); otherwise one is
              started with ``--threads`` 2 and ``--parallel`` 4 and stopped at the end.
3. per run    model calls per accepted sample, accepted / rejected-by-reason counts (ConstructSummary).

    python perf/construct_speed.py [--quick] [--skip-local] [--n-local 16] [--json PATH]

Every run writes to a fresh folder under a temp dir. Measure on an idle machine: on 2 cores
llama.cpp's threads and Python's GIL share the same CPUs with anything else running.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import platform
import re
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

TESTS_DIR = Path(__file__).resolve().parents[1] / "tests"
LOCAL_CONCURRENCY = (1, 4, 16)

from benchsmith.construction import EnvContext, RoleModels, get_graph, run_graph  # noqa: E402
from benchsmith.construction._private import run as run_module  # noqa: E402
from benchsmith.construction._private.engine import RUNNING, BuildContext, ModelStep, ParseError  # noqa: E402
from benchsmith.construction.graphs import chains as chains_graph  # noqa: E402
from benchsmith.construction.graphs import queries as queries_graph  # noqa: E402
from benchsmith.models import (  # noqa: E402
    DEFAULT_LOCAL_MODEL,
    ModelClient,
    Reply,
    local_server_status,
    resolve_model,
    start_local_server,
    stop_local_server,
)
from benchsmith.schemas import UserError  # noqa: E402

# ---- the zero-latency role model ------------------------------------------------------------------
# Lower-case words only: a capitalised name or a number in a query is a value the chain must use.
WORDS = (
    "quiet",
    "bright",
    "early",
    "recent",
    "listed",
    "stored",
    "known",
    "usual",
    "plain",
    "full",
    "small",
    "large",
    "older",
    "newer",
    "visible",
    "regular",
    "common",
    "rare",
    "main",
    "other",
    "whole",
    "current",
    "simple",
    "proper",
    "single",
    "spare",
    "local",
    "total",
    "basic",
    "extra",
    "final",
    "standard",
)
COUNT_CALL = json.dumps(
    {
        "action": "aggregate_data",
        "arguments": {"data_source": "$data_1$", "aggregation": "count"},
        "thought": "Count the rows of the loaded data.",
    }
)


def zero_reply(messages: list[dict[str, Any]]) -> str:
    """The scripted reply: a pure function of the messages, valid JSON for every step of queries and
    chains (about 1 in 20 drafts judged unsolvable, so that rejections happen too)."""
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    last = str(messages[-1]["content"])
    digest = hashlib.sha256("\x1f".join(str(m["content"]) for m in messages).encode("utf-8")).digest()
    if system.startswith("You write realistic requests"):
        m = re.search(r"\$data_1\$ = ([a-z_]+)", system)
        table = m.group(1).replace("_", " ") if m else "records"
        w1, w2 = WORDS[digest[0] % len(WORDS)], WORDS[digest[1] % len(WORDS)]
        return json.dumps({"query": f"How many {table} are there among the {w1} {w2} entries?"})
    if system.startswith("You improve a draft user request"):
        draft = last.split("Draft:", 1)[-1].strip().rstrip("?")
        return json.dumps({"solvable": digest[0] % 20 != 0, "query": f"{draft}, all together?"})
    if system.startswith("You plan how to solve"):
        if last.startswith("Step "):
            return json.dumps({"done": True, "thought": "That count is the answer."})
        return json.dumps({"done": False, "thought": "Count the rows of the loaded data."})
    if system.startswith("You turn one planned step"):
        return COUNT_CALL
    if system.startswith("You review one step"):
        return json.dumps({"verdict": "success", "decision": "continue"})
    if system.startswith("You play a tool"):
        return json.dumps({"ok": True, "observation": "42"})
    raise RuntimeError(f"no scripted reply for the system prompt {system[:60]!r}")


class ZeroModel:
    """A role model without langchain or HTTP: ``complete`` returns :func:`zero_reply` at once and
    accounts its own time (so that it can be taken out of the overhead)."""

    name = "zero-latency"

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0
        self._lock = threading.Lock()

    def complete(
        self, messages: list[dict[str, Any]], *, json_schema: dict | None = None, max_tokens: int | None = None
    ) -> Reply:
        t0 = time.perf_counter()
        text = zero_reply(messages)
        dt = time.perf_counter() - t0
        with self._lock:
            self.calls += 1
            self.seconds += dt
        return Reply(text=text, finish_reason="stop")


# ---- the same graphs as plain loops ---------------------------------------------------------------
END = "__end__"


def _running(next_node: str) -> Callable[[dict[str, Any]], str]:
    return lambda s: next_node if s.get("status") == RUNNING else END


# node name -> (function, model step or None); node name -> router (state -> next node). Mirrors
# the graphs' build(); the results are compared with run_graph's below so a drift shows.
PLAIN_GRAPHS: dict[
    str, tuple[str, dict[str, tuple[Callable[..., Any], ModelStep | None]], dict[str, Callable[[dict[str, Any]], str]]]
] = {
    "queries": (
        "generate",
        {
            "generate": (None, queries_graph.GENERATE),
            "refine": (None, queries_graph.REFINE),
            "finalize": (queries_graph.finalize, None),
        },
        {"generate": _running("refine"), "refine": _running("finalize"), "finalize": lambda s: END},
    ),
    "chains": (
        "plan",
        {
            "plan": (None, chains_graph.PLAN),
            "act": (None, chains_graph.ACT),
            "execute": (chains_graph.execute, None),
            "review": (None, chains_graph.REVIEW_STEP),
            "finalize": (chains_graph.finalize, None),
            "give_up": (chains_graph.give_up, None),
        },
        {
            "plan": chains_graph.after_plan,
            "act": _running("execute"),
            "execute": _running("review"),
            "review": chains_graph.after_review,
            "finalize": lambda s: END,
            "give_up": lambda s: END,
        },
    ),
}
ADD_KEYS, MERGE_KEYS = ("reasons", "calls"), ("raw",)


class _Runtime:
    def __init__(self, context: BuildContext) -> None:
        self.context = context


def _apply(state: dict[str, Any], update: dict[str, Any]) -> None:
    """LangGraph's state update with BaseState's reducers (lists added, raw merged, the rest replaced)."""
    for k, v in update.items():
        if k in ADD_KEYS:
            state[k] = list(state.get(k) or []) + list(v or [])
        elif k in MERGE_KEYS:
            state[k] = {**(state.get(k) or {}), **(v or {})}
        else:
            state[k] = v


class PlainResult:
    def __init__(self) -> None:
        self.wall = 0.0
        self.node_seconds: dict[str, float] = {}
        self.model_states: list[tuple[ModelStep, dict[str, Any]]] = []  # (step, state before the call)
        self.finals: dict[str, tuple[str | None, int]] = {}  # item -> (status, model calls)


def plain_loop(
    graph_name: str, items: list[tuple[str, dict[str, Any]]], ctx: BuildContext, seed: int, keep_states: bool
) -> PlainResult:
    from benchsmith.construction._private.engine import apply_step

    spec = get_graph(graph_name)(ctx.options)
    start, nodes, routes = PLAIN_GRAPHS[graph_name]
    takes_runtime = {n: fn is not None and len(inspect.signature(fn).parameters) == 2 for n, (fn, _) in nodes.items()}
    runtime = _Runtime(ctx)
    res = PlainResult()
    t0 = time.perf_counter()
    for item_id, item in items:
        state = spec.initial(item_id, item, seed)
        node = start
        while node != END:
            fn, step = nodes[node]
            t1 = time.perf_counter()
            if step is not None:
                if keep_states:
                    res.model_states.append((step, dict(state)))
                update = apply_step(step, state, ctx)
            elif takes_runtime[node]:
                update = fn(state, runtime)
            else:
                update = fn(state)
            res.node_seconds[node] = res.node_seconds.get(node, 0.0) + time.perf_counter() - t1
            _apply(state, update)
            node = routes[node](state)
        res.finals[item_id] = (state.get("status"), len(state.get("calls") or []))
    res.wall = time.perf_counter() - t0
    return res


def step_costs(model_states: list[tuple[ModelStep, dict[str, Any]]]) -> dict[str, float]:
    """Seconds spent in each pure part of the model steps, timed directly on the states the plain loop
    saw: prompt rendering (+ the template version lookup of the call record), the closed/bounded JSON
    schema, and parsing the scripted reply."""
    from benchsmith.models import bounded_strings, closed_schema

    replies = [zero_reply(step.messages(state)) for step, state in model_states]
    out = {"render": 0.0, "schema": 0.0, "parse": 0.0, "n": len(model_states)}
    t0 = time.perf_counter()
    for step, state in model_states:
        step.messages(state)
        step.prompt_version()
    out["render"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for step, state in model_states:
        schema = step.schema(state) if step.schema else None
        if schema is not None:
            bounded_strings(closed_schema(schema))
    out["schema"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for (step, state), text in zip(model_states, replies):
        try:
            step.parse(state, text)
        except ParseError:
            pass
    out["parse"] = time.perf_counter() - t0
    return out


def langgraph_loop(
    graph_name: str, items: list[tuple[str, dict[str, Any]]], ctx: BuildContext, seed: int
) -> tuple[float, dict[str, tuple[str | None, int]]]:
    """The compiled graph without a checkpointer, one invoke per item, one at a time."""
    spec = get_graph(graph_name)(ctx.options)
    app = spec.build().compile()
    finals = {}
    t0 = time.perf_counter()
    for item_id, item in items:
        state = app.invoke(spec.initial(item_id, item, seed), {"recursion_limit": 1000}, context=ctx)
        finals[item_id] = (state.get("status"), len(state.get("calls") or []))
    return time.perf_counter() - t0, finals


class _TimedOutputs:
    """Wraps run.py's ``_write_outputs`` to time the outputs rebuild of run_graph (this process only)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.probe_seconds = 0.0
        self.finals: dict[str, tuple[str | None, int]] = {}

    def __enter__(self) -> _TimedOutputs:
        self._orig = run_module._write_outputs

        def wrapped(spec: Any, app: Any, items: Any, out: Any, source: Any, summary: Any, config: Any) -> None:
            t0 = time.perf_counter()
            self._orig(spec, app, items, out, source, summary, config)
            self.seconds += time.perf_counter() - t0
            t1 = time.perf_counter()
            for item_id, _ in items:  # for the cross-check only: its time is taken out of the wall
                values = app.get_state(config(item_id)).values or {}
                self.finals[item_id] = (values.get("status"), len(values.get("calls") or []))
            self.probe_seconds += time.perf_counter() - t1

        run_module._write_outputs = wrapped
        return self

    def __exit__(self, *exc: Any) -> None:
        run_module._write_outputs = self._orig


def summary_facts(s: Any, wall: float) -> dict[str, Any]:
    return {
        "items": s.items,
        "wall_s": round(wall, 3),
        "model_calls": s.model_calls,
        "items_per_s": round(s.items / wall, 2) if wall else None,
        "calls_per_s": round(s.model_calls / wall, 2) if wall else None,
        "accepted_items": s.accepted_items,
        "samples": s.samples,
        "rejected": s.rejected,
        "review": s.review,
        "unfinished": s.unfinished,
        "rejected_by": dict(s.rejected_by),
        "calls_by_node": dict(s.calls_by_node),
        "calls_per_accepted": s.calls_per_accepted,
        "tokens": dict(s.tokens),
        "errors": list(s.errors)[:5],
        "n_errors": len(s.errors),
    }


def overhead_graph(
    graph_name: str,
    source: Path,
    items: list[tuple[str, dict[str, Any]]],
    split: Path,
    tmp: Path,
    options: dict[str, Any],
    repeats: int,
    concurrency_extra: int,
) -> dict[str, Any]:
    """One graph's overhead figures (the best of ``repeats`` for each way of running it)."""
    seed = 0
    n = len(items)
    limit = n

    def ctx() -> BuildContext:
        return BuildContext(
            models=RoleModels(default=ZeroModel()), options=dict(options), env_context=EnvContext(split=split)
        )

    def rg(tag: str, concurrency: int, limit: int = limit) -> tuple[float, Any, _TimedOutputs, ZeroModel]:
        model = ZeroModel()
        with _TimedOutputs() as timed:
            t0 = time.perf_counter()
            s = run_graph(
                graph_name,
                source,
                tmp / f"{graph_name}-{tag}",
                models=RoleModels(default=model),
                options=dict(options),
                seed=seed,
                concurrency=concurrency,
                limit=limit,
                env_context=EnvContext(split=split),
            )
            wall = time.perf_counter() - t0 - timed.probe_seconds
        if s.errors:
            raise RuntimeError(f"run_graph {graph_name} reported errors: {s.errors[:3]}")
        return wall, s, timed, model

    # warm-up: imports, template compilation, the database, SQLite
    warm = items[: min(5, n)]
    rg("warm", 1, limit=len(warm))
    plain_loop(graph_name, warm, ctx(), seed, keep_states=False)
    langgraph_loop(graph_name, warm, ctx(), seed)

    runs, lgs, plains = [], [], []
    for r in range(repeats):
        runs.append(rg(f"c1-{r}", 1))
        c = ctx()
        lg_wall, lg_finals = langgraph_loop(graph_name, items, c, seed)
        lgs.append((lg_wall, lg_finals, c.models.default))
        c = ctx()
        plains.append((plain_loop(graph_name, items, c, seed, keep_states=(r == 0)), c.models.default))
    wall, s, timed, model = min(runs, key=lambda x: x[0])
    lg_wall, lg_finals, lg_model = min(lgs, key=lambda x: x[0])
    plain, plain_model = min(plains, key=lambda x: x[0].wall)
    costs = step_costs(plains[0][0].model_states)
    t0 = time.perf_counter()
    get_graph(graph_name)(options).read_items(source)
    read_s = time.perf_counter() - t0

    agree = plain.finals == lg_finals == timed.finals
    mismatch = (
        0 if agree else sum(1 for k in timed.finals if not (plain.finals.get(k) == lg_finals.get(k) == timed.finals[k]))
    )
    calls = s.model_calls
    per = (lambda sec: round(sec / calls * 1000, 4)) if calls else (lambda sec: None)
    model_nodes = {name for name, (_, step) in PLAIN_GRAPHS[graph_name][1].items() if step is not None}
    model_node_s = sum(v for k, v in plain.node_seconds.items() if k in model_nodes)
    other_node_s = sum(v for k, v in plain.node_seconds.items() if k not in model_nodes)
    pure_s = costs["render"] + costs["schema"] + costs["parse"]
    # the plain loop's model time; run_graph's own zero-model time is reported too
    breakdown = {
        "zero_model": per(plain_model.seconds),
        "prompt_render": per(costs["render"]),
        "json_schema": per(costs["schema"]),
        "reply_parse": per(costs["parse"]),
        "apply_step_rest": per(max(0.0, model_node_s - plain_model.seconds - pure_s)),
        "other_nodes": per(other_node_s),
        "loop_rest": per(max(0.0, plain.wall - model_node_s - other_node_s)),
        "plain_loop_total": per(plain.wall),
        "langgraph_engine": per(lg_wall - plain.wall),
        "durable_checkpoints": per(wall - timed.seconds - read_s - lg_wall),
        "outputs_rebuild": per(timed.seconds),
        "read_items": per(read_s),
        "run_graph_total": per(wall),
    }
    other_nodes = {k: per(v) for k, v in sorted(plain.node_seconds.items()) if k not in model_nodes}
    result = {
        "graph": graph_name,
        "items": n,
        "concurrency": 1,
        "repeats": repeats,
        "run_graph": summary_facts(s, wall),
        "run_graph_zero_model_ms_per_call": per(model.seconds),
        "langgraph_no_checkpointer": {"wall_s": round(lg_wall, 3), "items_per_s": round(n / lg_wall, 2)},
        "plain_loop": {"wall_s": round(plain.wall, 3), "items_per_s": round(n / plain.wall, 2)},
        "ms_per_model_call": breakdown,
        "other_nodes_ms_per_model_call": other_nodes,
        "framework_ms_per_call": per(wall - plain.wall),
        "same_results_all_three": agree,
        "result_mismatches": mismatch,
        "all_walls_s": {
            "run_graph": [round(x[0], 3) for x in runs],
            "langgraph": [round(x[0], 3) for x in lgs],
            "plain_loop": [round(x[0].wall, 3) for x in plains],
        },
    }
    if concurrency_extra > 1:
        cw, cs, _, _ = rg(f"c{concurrency_extra}", concurrency_extra)
        result["run_graph_concurrent"] = {"concurrency": concurrency_extra, **summary_facts(cs, cw)}
    return result


# ---- the local model ------------------------------------------------------------------------------
def busy_slots(base_url: str | None) -> int | None:
    """How many of the server's slots are working for someone else right now (llama.cpp's GET /slots;
    read-only), or None when the server does not say."""
    import httpx

    try:
        slots = httpx.get(str(base_url).rstrip("/").removesuffix("/v1") + "/slots", timeout=5.0).json()
        return sum(1 for x in slots if x.get("is_processing")) if isinstance(slots, list) else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None


def local_runs(split: Path, tmp: Path, n: int, timeout: float, warm_n: int) -> dict[str, Any]:
    cfg = resolve_model(DEFAULT_LOCAL_MODEL, None, start_local=False, timeout=timeout)
    info = local_server_status()
    server = {"url": cfg.base_url, "model": cfg.name}
    if info is not None:
        server.update(pid=info.pid, slots=info.parallel, threads=info.threads, ctx_per_slot=info.ctx_per_slot)

    def go(tag: str, options: dict[str, Any], concurrency: int, seed: int) -> tuple[float, Any]:
        models = RoleModels(default=ModelClient(cfg))
        t0 = time.perf_counter()
        s = run_graph(
            "queries", split, tmp / f"local-{tag}", models=models, options=options, seed=seed, concurrency=concurrency
        )
        return time.perf_counter() - t0, s

    if warm_n:
        print(f"  warm-up: {warm_n} other items at concurrency {min(4, warm_n)} ...", flush=True)
        go("warm", {"n": warm_n, "draw_seed": 99}, min(4, warm_n), 99)
    rows = []
    for i, c in enumerate(LOCAL_CONCURRENCY):
        # The same tool draws (the same work) at every level, but a different run seed, so the
        # generator's tool docs are shuffled differently and the server's slots (llama.cpp keeps the
        # last prompt of each slot and reuses the longest common prefix) cannot replay an earlier run.
        print(f"  queries n={n} at concurrency {c} ...", flush=True)
        load, busy = os.getloadavg()[0], busy_slots(cfg.base_url)
        wall, s = go(f"c{c}", {"n": n}, c, i + 1)
        row = {
            "concurrency": c,
            "seed": i + 1,
            "load_1min_before": round(load, 2),
            "load_1min_after": round(os.getloadavg()[0], 2),
            "busy_slots_before": busy,
            **summary_facts(s, wall),
        }
        rows.append(row)
        print(f"    {wall:.1f} s, {s.model_calls} calls, {s.samples} accepted", flush=True)
    base = rows[0]
    for row in rows:
        row["items_per_s_vs_c1"] = round(row["items_per_s"] / base["items_per_s"], 2) if base["items_per_s"] else None
        row["calls_per_s_vs_c1"] = round(row["calls_per_s"] / base["calls_per_s"], 2) if base["calls_per_s"] else None
        tok = row["tokens"]
        row["prompt_tokens_per_call"] = (
            round(tok.get("prompt_tokens", 0) / row["model_calls"]) if row["model_calls"] else None
        )
        row["completion_tokens_per_call"] = (
            round(tok.get("completion_tokens", 0) / row["model_calls"], 1) if row["model_calls"] else None
        )
    return {"server": server, "n": n, "runs": rows}


# ---- report ---------------------------------------------------------------------------------------
def fmt(v: Any, spec: str = ".2f") -> str:
    if v is None:
        return "-"
    return format(v, spec) if isinstance(v, (int, float)) else str(v)


def print_overhead(o: dict[str, Any]) -> None:
    rg, lg, pl, b = o["run_graph"], o["langgraph_no_checkpointer"], o["plain_loop"], o["ms_per_model_call"]
    calls = rg["model_calls"]
    print(
        f"\n{o['graph']}: {o['items']} items, {calls} model calls ({calls / o['items']:.2f} per item), concurrency 1, "
        f"best of {o['repeats']}"
    )
    print(f"  {'way':<44}{'wall s':>9}{'items/s':>9}{'calls/s':>9}{'ms/call':>9}")
    for name, wall in (
        ("run_graph (LangGraph + SqliteSaver, sync)", rg["wall_s"]),
        ("LangGraph, no checkpointer", lg["wall_s"]),
        ("plain loop (node functions, no LangGraph)", pl["wall_s"]),
    ):
        print(f"  {name:<44}{wall:>9.3f}{o['items'] / wall:>9.1f}{calls / wall:>9.1f}{wall / calls * 1000:>9.3f}")
    cc = o.get("run_graph_concurrent")
    if cc:
        print(
            f"  {'run_graph at concurrency ' + str(cc['concurrency']):<44}{cc['wall_s']:>9.3f}{cc['items_per_s']:>9.1f}"
            f"{cc['calls_per_s']:>9.1f}{cc['wall_s'] / cc['model_calls'] * 1000:>9.3f}"
        )
    print("  per model call (ms):")
    rows = [
        ("zero-latency model itself", "zero_model"),
        ("prompt rendering (+ version lookup)", "prompt_render"),
        ("JSON schema (closed, bounded strings)", "json_schema"),
        ("reply parsing", "reply_parse"),
        ("rest of apply_step (call record, update)", "apply_step_rest"),
        (
            "other nodes: " + ", ".join(f"{k} {fmt(v, '.3f')}" for k, v in o["other_nodes_ms_per_model_call"].items()),
            "other_nodes",
        ),
        ("loop bookkeeping (state merge, routing)", "loop_rest"),
        ("= plain loop", "plain_loop_total"),
        ("+ LangGraph engine (no checkpointer)", "langgraph_engine"),
        ("+ durable SQLite checkpoints (sync; + resume lookups, run.json)", "durable_checkpoints"),
        ("+ run_graph: reading items", "read_items"),
        ("+ run_graph: outputs rebuild", "outputs_rebuild"),
        ("= run_graph", "run_graph_total"),
    ]
    for label, key in rows:
        print(f"    {label:<62}{fmt(b[key], '.3f'):>9}")
    print(
        f"  framework (LangGraph + checkpoints + run_graph bookkeeping) = run_graph - plain loop = "
        f"{fmt(o['framework_ms_per_call'], '.3f')} ms/call"
    )
    agree = "yes" if o["same_results_all_three"] else f"NO ({o['result_mismatches']} items differ)"
    print(
        f"  same status and model calls per item in all three ways: {agree}; walls of every repeat: "
        + ", ".join(f"{k} {v}" for k, v in o["all_walls_s"].items())
    )


def print_local(loc: dict[str, Any]) -> None:
    srv = loc["server"]
    print(
        f"\nlocal model: {srv.get('model')} at {srv.get('url')} (slots {srv.get('slots')}, threads {srv.get('threads')}"
        f"{', started by this script' if srv.get('started_by_script') else ', already running, left running'})"
    )
    print(f"  queries n={loc['n']}, one fresh out folder per run")
    print(
        f"  {'conc':>5}{'wall s':>9}{'calls':>7}{'calls/s':>9}{'items/s':>9}{'x c=1':>7}{'prompt tok':>11}"
        f"{'compl tok':>10}{'load':>11}{'busy':>5}"
    )
    for r in loc["runs"]:
        print(
            f"  {r['concurrency']:>5}{r['wall_s']:>9.1f}{r['model_calls']:>7}{fmt(r['calls_per_s'], '.3f'):>9}"
            f"{fmt(r['items_per_s'], '.3f'):>9}{fmt(r['items_per_s_vs_c1']):>7}{fmt(r['prompt_tokens_per_call'], 'd'):>11}"
            f"{fmt(r['completion_tokens_per_call'], '.1f'):>10}{r['load_1min_before']:>6.2f}/{r['load_1min_after']:<4.2f}{fmt(r['busy_slots_before'], 'd'):>5}"
        )
    print(
        "  (load: 1-min load average before/after the run; a busy local server of 2 threads adds up to 2 itself; busy: server slots already working for someone else then)"
    )


def print_outcomes(rows: list[tuple[str, dict[str, Any]]]) -> None:
    print("\nmodel calls per accepted sample, and outcomes:")
    print(
        f"  {'run':<30}{'items':>6}{'calls':>7}{'accepted':>9}{'rejected':>9}{'review':>7}{'calls/acc':>10}  rejected by"
    )
    for name, f in rows:
        by = ", ".join(f"{k} {v}" for k, v in f["rejected_by"].items()) or "-"
        err = f"; {f['n_errors']} transport errors" if f.get("n_errors") else ""
        print(
            f"  {name:<30}{f['items']:>6}{f['model_calls']:>7}{f['samples']:>9}{f['rejected']:>9}{f['review']:>7}"
            f"{fmt(f['calls_per_accepted']):>10}  {by}{err}"
        )


# ---- main -----------------------------------------------------------------------------------------
def build_split(root: Path, pairs: int) -> Path:
    if not (TESTS_DIR / "helpers.py").is_file():
        raise UserError(f"{TESTS_DIR / 'helpers.py'} is missing", fix="run the script from a benchsmith checkout")
    sys.path.insert(0, str(TESTS_DIR))
    try:
        from helpers import build_slot_split, pair_lines
    finally:
        sys.path.remove(str(TESTS_DIR))
    root.mkdir(parents=True, exist_ok=True)
    return build_slot_split(root, pair_lines()[:pairs])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes for a smoke run (~1 minute)")
    ap.add_argument("--skip-local", action="store_true", help="leave out the runs against the local model")
    ap.add_argument(
        "--n-local", type=int, default=None, help="queries items per local run (default 16; 4 with --quick)"
    )
    ap.add_argument(
        "--overhead-n", type=int, default=None, help="queries items for the overhead (default 200; 30 quick)"
    )
    ap.add_argument("--chains-n", type=int, default=None, help="chains items for the overhead (default 100; 15 quick)")
    ap.add_argument(
        "--repeats", type=int, default=None, help="repeats of each overhead way, the best counts (default 5; 1 quick)"
    )
    ap.add_argument("--pairs", type=int, default=60, help="NL2SQL pairs of the SLOT split (default 60)")
    ap.add_argument("--threads", type=int, default=2, help="threads of a local server this script starts (default 2)")
    ap.add_argument("--parallel", type=int, default=4, help="slots of a local server this script starts (default 4)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per local model request (default 600)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON to this file")
    args = ap.parse_args()
    q = args.quick
    args.n_local = args.n_local if args.n_local is not None else (4 if q else 16)
    args.overhead_n = args.overhead_n if args.overhead_n is not None else (30 if q else 200)
    args.chains_n = args.chains_n if args.chains_n is not None else (15 if q else 100)
    args.repeats = args.repeats if args.repeats is not None else (1 if q else 5)
    for flag in ("n_local", "overhead_n", "chains_n", "repeats", "pairs"):
        if getattr(args, flag) < 1:
            ap.error(f"--{flag.replace('_', '-')} must be at least 1")
    try:
        return run(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    load_before = os.getloadavg()
    started = datetime.now(timezone.utc)
    t_start = time.perf_counter()
    report: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": started.isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "usable_cpus": len(os.sched_getaffinity(0)),
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "platform": platform.platform(),
            "load_avg_start": [round(x, 2) for x in load_before],
        },
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    print("== construct speed: framework overhead, local throughput, calls per accepted sample ==")
    print(
        f"machine: {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), {report['machine']['python']}, "
        f"load average {load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f} (1/5/15 min) at start"
    )
    started_pid: int | None = None
    with tempfile.TemporaryDirectory(prefix="benchsmith-construct-speed-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            t0 = time.perf_counter()
            split = build_split(tmp / "split", args.pairs)
            print(f"SLOT split of {args.pairs} pairs built in {time.perf_counter() - t0:.1f} s")

            # ---- 1. overhead
            print(
                f"\n[1] overhead against a zero-latency scripted role model (queries n={args.overhead_n}, "
                f"chains on {args.chains_n} of its queries) ...",
                flush=True,
            )
            qopts = {"n": args.overhead_n}
            q_items = get_graph("queries")(qopts).read_items(split)
            oq = overhead_graph("queries", split, q_items, split, tmp / "overhead", qopts, args.repeats, 4)
            q_samples = tmp / "overhead" / "queries-c1-0" / "samples.jsonl"
            c_items = get_graph("chains")({}).read_items(q_samples)[: args.chains_n]
            if len(c_items) < args.chains_n:
                print(f"  note: only {len(c_items)} accepted queries for chains (asked {args.chains_n})")
            oc = overhead_graph("chains", q_samples, c_items, split, tmp / "overhead", {}, args.repeats, 4)
            report["overhead"] = {"queries": oq, "chains": oc}
            for o in (oq, oc):
                print_overhead(o)
            outcomes = [("queries zero-latency c=1", oq["run_graph"]), ("chains zero-latency c=1", oc["run_graph"])]

            # ---- 2. local model
            if not args.skip_local:
                print(
                    f"\n[2] throughput against the local model (queries n={args.n_local}, concurrency "
                    f"{', '.join(map(str, LOCAL_CONCURRENCY))}) ...",
                    flush=True,
                )
                if local_server_status() is None:
                    print(
                        f"  starting the local model server (threads {args.threads}, parallel {args.parallel}) ...",
                        flush=True,
                    )
                    started_pid = start_local_server(threads=args.threads, parallel=args.parallel).pid
                loc = local_runs(split, tmp, args.n_local, args.timeout, warm_n=2 if args.quick else 4)
                loc["server"]["started_by_script"] = started_pid is not None
                report["local"] = loc
                print_local(loc)
                outcomes += [(f"queries local c={r['concurrency']}", r) for r in loc["runs"]]

            # ---- 3. calls per accepted sample
            print_outcomes(outcomes)
            load_after = os.getloadavg()
            report["machine"]["load_avg_end"] = [round(x, 2) for x in load_after]
            report["total_s"] = round(time.perf_counter() - t_start, 1)
            busy = "  -- the machine was busy: figures are noisy" if max(load_before[0], load_after[0]) > 0.5 else ""
            print(
                f"\nload average {load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end (1 min); "
                f"total {report['total_s']:.0f} s{busy}"
            )
            if args.json:
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
                print(f"figures written to {args.json}")
            return 0
        finally:
            if started_pid is not None:
                info = local_server_status()
                if info is not None and info.pid == started_pid:
                    stop_local_server()
                    print("stopped the local model server this script started")


if __name__ == "__main__":
    sys.exit(main())
