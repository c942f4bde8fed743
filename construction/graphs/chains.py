"""Gold-chain annotation: a planner -> executor -> reviewer loop with a step budget in the state.

The planner proposes one call (or finishes); the executor runs it in the sample's real tool
environment (NL2API tools on a read-only database, a sandbox, ...) or, where no environment
exists, asks the tool-simulator model for a response consistent with the tool's schema; the
reviewer labels the step (success / internal_error / input_error / irrelevant_response /
unable_to_accomplish) and decides to continue, retry or finish. The gold chain keeps the steps
judged successful (thought, call, observation, verdict); retried and failed steps are kept in
``metadata.attempts``. On an environment that keeps state (a sandbox, an MCP server, an HTTP
service) the sample records where the chain starts and where the gold chain leaves it
(``metadata.start_state`` / ``metadata.expected_state``): review shows the change, the
``executability`` replay must reach it again, and the agent benchmark scores episodes against it.
Items come from a samples JSONL file (e.g. the output of ``queries``).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from benchsmith.construction import (
    ACCEPTED,
    BaseState,
    ConstructionGraph,
    GraphOptions,
    ModelStep,
    ParseError,
    apply_step,
    graph,
    json_object,
    model_node,
    reject,
)

from ._tools import environment_of, query_sample_items, query_values, setup_text, tool_view

VERDICTS = ("success", "internal_error", "input_error", "irrelevant_response", "unable_to_accomplish")
DECISIONS = ("continue", "retry", "finish")
# an environment raises ToolError for what the caller got wrong; only these codes are the tool's own fault
INTERNAL_CODES = {"timeout", "internal_error", "query_timeout"}
MAX_TEXT = 1200


class ChainState(BaseState, total=False):
    candidate: dict[str, Any]
    steps: list[dict[str, Any]]
    attempts: list[dict[str, Any]]
    pending: dict[str, Any]
    budget: int
    retries_left: int
    final_thought: str
    overrides: list[str]


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " …(cut)"


def _call_text(call: dict[str, Any]) -> str:
    return f"{call['name']}({json.dumps(call.get('arguments') or {}, ensure_ascii=False)})"


def _result_text(step: dict[str, Any]) -> str:
    if step.get("error"):
        return f"Error ({step['error']['code']}): {step['error']['message']}"
    return f"Output ${step['call']['label']}$: {_text(step.get('observation'))}"


def _labels(state: dict[str, Any]) -> list[str]:
    setup = state["candidate"].get("setup") or []
    return [f"${c['label']}$" for c in setup if c.get("label")] + [
        f"${s['call']['label']}$" for s in state.get("steps") or []
    ]


# -- planner (what to do next, in words) and executor (the call that does it) -----------------------
def _plan_vars(state: dict[str, Any]) -> dict[str, Any]:
    cand = state["candidate"]
    _, tools = tool_view(cand["tools"])
    shown = [
        {
            "plan": json.dumps({"done": False, "thought": s.get("thought") or ""}, ensure_ascii=False),
            "call": _call_text(s["call"]),
            "observation": _result_text(s),
        }
        for s in state.get("steps") or []
    ]
    return {
        "tools": tools,
        "query": cand["query"],
        "context": cand.get("context"),
        "setup_note": setup_text(cand.get("setup") or []),
        "steps": shown,
    }


def _parse_plan(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("done", "thought"))
    if not isinstance(value["done"], bool):
        raise ParseError("bad_field", "done must be true or false")
    thought = str(value["thought"] or "").strip()
    if not thought:
        raise ParseError("empty_field", "the planner wrote no thought")
    if value["done"]:
        return {"pending": {"finish": True, "thought": thought}}
    return {"pending": {"thought": thought}}


PLAN = ModelStep(
    "plan",
    "planner",
    "construction/chain_plan",
    _plan_vars,
    _parse_plan,
    schema=lambda s: {
        "type": "object",
        "properties": {"done": {"type": "boolean"}, "thought": {"type": "string", "maxLength": 300}},
        "required": ["done", "thought"],
    },
    max_tokens=160,
)


def _act_vars(state: dict[str, Any]) -> dict[str, Any]:
    cand = state["candidate"]
    columns, tools = tool_view(cand["tools"])
    return {
        "tools": tools,
        "columns": columns,
        "query": cand["query"],
        "setup_note": setup_text(cand.get("setup") or []),
        "labels": _labels(state),
        "thought": state["pending"]["thought"],
    }


def _act_schema(state: dict[str, Any]) -> dict[str, Any]:
    from benchsmith.construction.nl2api import step_schema

    schema = step_schema([t for t in state["candidate"]["tools"] if not t.get("hidden")], _labels(state))
    return {"anyOf": schema["anyOf"][:-1]}  # no finish branch: the planner decides when to stop


def _parse_act(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("action", "arguments"))
    action = value.get("action")
    names = {t["name"] for t in state["candidate"]["tools"]}
    if not isinstance(action, str) or action not in names:
        raise ParseError("unknown_tool", f"the executor named no known tool: {action!r}")
    args = value["arguments"] if value["arguments"] is not None else {}
    if not isinstance(args, dict):
        raise ParseError("bad_arguments", "arguments must be a JSON object")
    label = f"out_{len(state.get('steps') or []) + len(state.get('attempts') or []) + 1}"
    return {"pending": {**state["pending"], "call": {"name": action, "arguments": args, "label": label}}}


ACT = ModelStep("act", "executor", "construction/chain_act", _act_vars, _parse_act, schema=_act_schema, max_tokens=256)


# -- executor -------------------------------------------------------------------------------------
def _sim_vars(state: dict[str, Any]) -> dict[str, Any]:
    call = state["pending"]["call"]
    tool = next(t for t in state["candidate"]["tools"] if t["name"] == call["name"])
    _, (view,) = tool_view([tool])
    previous = [f"{_call_text(s['call'])} -> {_text(s.get('observation'))}" for s in state.get("steps") or []]
    return {"tool": view, "call": _call_text(call), "previous": previous}


def _parse_sim(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("ok", "observation"))
    if not isinstance(value["ok"], bool):
        raise ParseError("bad_field", "ok must be true or false")
    obs = value["observation"]
    pending = dict(state["pending"], simulated=True)
    if value["ok"]:
        pending["observation"] = obs
    else:
        pending["error"] = {"code": "simulated_error", "message": _text(obs)}
    return {"pending": pending}


SIMULATE = ModelStep(
    "simulate",
    "tool_simulator",
    "construction/tool_simulate",
    _sim_vars,
    _parse_sim,
    schema=lambda s: {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "observation": {"type": "string", "maxLength": 400}},
        "required": ["ok", "observation"],
    },
    max_tokens=200,
)


def _kept_calls(state: dict[str, Any]) -> list[Any]:
    return [
        [step["call"]["name"], step["call"]["arguments"], step["call"]["label"]] for step in state.get("steps") or []
    ]


def _environment(state: dict[str, Any], ctx: Any) -> Any:
    """The item's environment having run exactly the kept steps: the one kept open since the last
    step when it has (:class:`~benchsmith.construction.KeptEnvironments`), else a fresh opening
    that replays them (environments are deterministic), or None (no environment: simulate)."""
    from benchsmith.construction import close_environment, open_environment

    descriptor = state["candidate"].get("metadata", {}).get("environment")
    if not descriptor:
        return None
    calls = _kept_calls(state)
    kept = ctx.kept.take(state.get("item_id", ""), calls) if ctx.options.keep_environment else None
    if kept is not None:
        return kept
    env = open_environment(descriptor, ctx.env_context)
    try:
        for name, arguments, label in calls:
            env.call(name, arguments, label)
    except BaseException:
        close_environment(env)
        raise
    return env


def execute(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    """Run the pending call for real when the sample has an environment, else simulate it."""
    from benchsmith.construction import close_environment, state_of
    from benchsmith.construction.nl2api import ToolError

    ctx = runtime.context
    env = _environment(state, ctx)
    if env is None:
        update = apply_step(SIMULATE, state, ctx)
        update["budget"] = state["budget"] - 1
        return update
    call = state["pending"]["call"]
    pending = dict(state["pending"])
    try:
        if not state.get("steps"):  # the state the chain starts from (None: the environment keeps none)
            pending["start_state"] = state_of(env)
        try:
            pending["observation"] = env.call(call["name"], call["arguments"], call["label"])
        except ToolError as exc:
            pending["error"] = {"code": getattr(exc, "code", "tool_error"), "message": str(exc)[:500]}
        answer = getattr(env, "answer", None)
        if answer is not None and "error" not in pending:
            try:
                pending["answer"] = answer(call["label"])
            except ToolError:
                pass
        pending["end_state"] = state_of(env)
    except BaseException:
        close_environment(env)
        raise
    if ctx.options.keep_environment:  # for the next step, if the reviewer keeps this one
        ctx.kept.keep(
            state.get("item_id", ""), env, [*_kept_calls(state), [call["name"], call["arguments"], call["label"]]]
        )
    else:
        close_environment(env)
    return {"pending": pending, "budget": state["budget"] - 1}


# -- reviewer ---------------------------------------------------------------------------------------
def _review_vars(state: dict[str, Any]) -> dict[str, Any]:
    p = state["pending"]
    return {
        "query": state["candidate"]["query"],
        "previous": [f"{_call_text(s['call'])} -> {_text(s.get('observation'))}" for s in state.get("steps") or []],
        "step": _call_text(p["call"]),
        "result": _result_text(p),
    }


def _parse_review(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("verdict", "decision"))
    verdict, decision = value["verdict"], value["decision"]
    if verdict not in VERDICTS:
        raise ParseError("bad_verdict", f"unknown verdict {verdict!r}")
    if decision not in DECISIONS:
        raise ParseError("bad_decision", f"unknown decision {decision!r}")
    pending = dict(state["pending"])
    overrides = list(state.get("overrides") or [])
    if pending.get("error") and verdict == "success":  # a failed call is never a success
        verdict = "internal_error" if pending["error"]["code"] in INTERNAL_CODES else "input_error"
        overrides.append(f"{pending['call']['label']}: reviewer said success on an error; set {verdict}")
    pending["verdict"] = verdict
    steps, attempts = list(state.get("steps") or []), list(state.get("attempts") or [])
    retries = state["retries_left"]
    if verdict == "success" and decision != "retry":
        steps.append(pending)
    else:
        attempts.append(pending)
        if decision == "retry":
            retries -= 1
    update: dict[str, Any] = {
        "steps": steps,
        "attempts": attempts,
        "retries_left": retries,
        "pending": {},
        "overrides": overrides,
        "decision": decision,
    }
    return update


REVIEW_STEP = ModelStep(
    "review",
    "reviewer",
    "construction/chain_review",
    _review_vars,
    _parse_review,
    schema=lambda s: {
        "type": "object",
        "properties": {"verdict": {"enum": list(VERDICTS)}, "decision": {"enum": list(DECISIONS)}},
        "required": ["verdict", "decision"],
    },
    max_tokens=48,
)


class _ChainState(ChainState, total=False):
    decision: str


def after_plan(state: dict[str, Any]) -> str:
    if state.get("status") != "running":
        return "__end__"
    return "finalize" if state["pending"].get("finish") else "act"


def after_review(state: dict[str, Any]) -> str:
    if state.get("status") != "running":
        return "__end__"
    if state.get("decision") == "finish":
        return "finalize"
    if state["retries_left"] < 0:
        return "give_up"
    if state["budget"] <= 0:
        return "give_up"
    return "plan"


def give_up(state: dict[str, Any]) -> dict[str, Any]:
    if state["retries_left"] < 0:
        return reject("review", "retries_exhausted", "the reviewer asked for more retries than allowed")
    return reject(
        "budget",
        "step_budget",
        f"no finish within the step budget ({len(state.get('attempts') or []) + len(state.get('steps') or [])} steps)",
    )


_STATES = ("start_state", "end_state")  # kept on the sample's metadata once, not on every attempt


def finalize(state: dict[str, Any]) -> dict[str, Any]:
    """Pure: the accepted chain as a sample, or a rejection."""
    cand, steps = state["candidate"], state.get("steps") or []
    if not steps:
        return reject("finalize", "no_successful_step", "the chain ended without a step judged successful")
    used = json.dumps([s["call"]["arguments"] for s in steps] + [cand.get("setup") or []], ensure_ascii=False).lower()
    unused = [v for v in query_values(cand["query"]) if v.lower() not in used]
    if unused:
        return reject(
            "finalize",
            "query_value_unused",
            f"the request states {', '.join(repr(v) for v in unused)} but no call uses it",
        )
    gold = [
        {
            "thought": s.get("thought") or None,
            "call": s["call"],
            "observation": s.get("observation"),
            "verdict": s["verdict"],
        }
        for s in steps
    ]
    last = steps[-1]
    final_thought = (state.get("pending") or {}).get("thought") or ""
    if "answer" in last:
        answer = {"kind": "exact", "value": last["answer"]}
    elif final_thought:
        answer = {"kind": "reference", "references": [final_thought]}
    else:
        answer = {"kind": "none"}
    metadata = dict(cand.get("metadata") or {})
    metadata.update(
        {
            "attempts": [{k: v for k, v in a.items() if k not in _STATES} for a in state.get("attempts") or []],
            "final_thought": final_thought,
            "simulated_steps": sum(1 for s in steps if s.get("simulated")),
            "reviewer_overrides": state.get("overrides") or [],
            "query_sample_id": cand.get("id"),
        }
    )
    if steps[-1].get("end_state") is not None:  # a stateful environment: where the gold chain leaves it
        metadata["start_state"] = steps[0].get("start_state")
        metadata["expected_state"] = steps[-1]["end_state"]
    sample = {
        "query": cand["query"],
        "context": cand.get("context"),
        "tools": cand["tools"],
        "setup": cand.get("setup") or [],
        "gold": gold,
        "answer": answer,
        "categories": sorted(set(cand.get("categories") or []) - {"generated_query"} | {"generated_chain"}),
        "metadata": metadata,
    }
    return {"status": ACCEPTED, "outputs": [sample]}


class ChainsOptions(GraphOptions):
    step_budget: int = Field(6, ge=0, description="tool calls an item may make before it is rejected")
    max_retries: int = Field(2, ge=0, description="times the reviewer may send a chain back to the planner")
    environment: dict[str, Any] | None = Field(
        None, description="tool environment for samples without their own (metadata.environment), as JSON"
    )
    keep_environment: bool = Field(
        True,
        description="keep an item's environment open between its steps (False: a fresh opening replays the "
        "kept steps before every call)",
    )


@graph("chains")
class ChainsGraph(ConstructionGraph):
    description = "planner -> executor (real tools or a tool simulator) -> reviewer, looped within a step budget"
    roles = ("planner", "executor", "reviewer", "tool_simulator")
    steps = (PLAN, ACT, SIMULATE, REVIEW_STEP)
    Options = ChainsOptions

    def read_items(self, source: Any) -> list[tuple[str, dict[str, Any]]]:
        return query_sample_items(source, "pass a samples JSONL file (e.g. the output of construct queries)")

    def initial(self, item_id: str, item: dict[str, Any], seed: int) -> dict[str, Any]:
        state = super().initial(item_id, item, seed)
        candidate = dict(item)
        env = environment_of(candidate, self.options.environment)
        if env is not None:
            candidate["metadata"] = {**candidate.get("metadata", {}), "environment": env}
        state.update(
            {
                "candidate": candidate,
                "steps": [],
                "attempts": [],
                "pending": {},
                "budget": self.options.step_budget,
                "retries_left": self.options.max_retries,
                "overrides": [],
            }
        )
        return state

    def build(self) -> Any:
        from langgraph.graph import END, START, StateGraph

        g = StateGraph(_ChainState)
        g.add_node("plan", model_node(PLAN))
        g.add_node("act", model_node(ACT))
        g.add_node("execute", execute)
        g.add_node("review", model_node(REVIEW_STEP))
        g.add_node("finalize", finalize)
        g.add_node("give_up", give_up)
        g.add_edge(START, "plan")
        g.add_conditional_edges("plan", after_plan, ["act", "finalize", END])
        g.add_conditional_edges("act", lambda s: "execute" if s.get("status") == "running" else END, ["execute", END])
        g.add_conditional_edges("execute", lambda s: "review" if s.get("status") == "running" else END, ["review", END])
        g.add_conditional_edges("review", after_review, ["plan", "finalize", "give_up", END])
        g.add_edge("finalize", END)
        g.add_edge("give_up", END)
        return g


__all__ = ["ChainsGraph"]
