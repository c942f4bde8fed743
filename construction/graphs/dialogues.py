"""Dialogue simulation (ACEBench style): a user agent driven by a goal and a persona, the
assistant agent, and a tool agent (real execution or a tool simulator) talk until the user's
goal is met, within a turn budget.

The user agent writes one message per turn and says when its goal is met; the assistant agent
either calls tools (one or more calls per reply, constrained by a JSON schema built from the
tools' parameter schemas) or writes a message to the user; the tool agent runs each call in the
item's real environment (a sandbox, NL2API tools on a read-only database, ...; earlier successful
calls are replayed first, environments being deterministic) or, where none exists, asks the
tool-simulator model (the ``simulate`` step of the ``chains`` graph). A finished dialogue becomes a
sample with ``dialogue`` (user / assistant with tool calls / tool messages), the executed calls as
gold steps, and, for sandbox items, the final sandbox state checked against the expected one.

Items come from a samples JSONL file (``query`` is the user's goal; ``metadata.environment`` and
``metadata.persona`` are used when present), a sandbox scenarios JSONL file, or ``sandbox`` (the
packaged sandbox scenarios). See ``docs/construction/dialogues.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field

from benchsmith.construction import (
    ACCEPTED,
    REVIEW,
    RUNNING,
    BaseState,
    ConstructionGraph,
    GraphOptions,
    ModelStep,
    ParseError,
    apply_step,
    graph,
    json_object,
    model_node,
    nonempty_text,
    reject,
)

from ..turns import next_speaker, step_budget_spent, turn_budget_spent, user_message
from ._tools import environment_of, query_sample_items, setup_text, tool_view
from .chains import INTERNAL_CODES, SIMULATE

DEFAULT_PERSONA = "You are a busy person. You write short, plain messages."
MAX_CALLS_PER_REPLY = 4
MAX_TEXT = 1200
MAX_MESSAGE = 600


class DialogueState(BaseState, total=False):
    candidate: dict[str, Any]
    dialogue: list[dict[str, Any]]
    executed: list[dict[str, Any]]
    pending: list[dict[str, Any]]
    goal_met: bool
    closing: str
    env_state: dict[str, Any]
    max_turns: int
    max_steps: int
    state_diff: list[str]


# -- small pure helpers -----------------------------------------------------------------------
def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " …(cut)"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _maybe_json(value: Any) -> Any:
    """A simulated observation written as JSON text becomes the JSON value it spells."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _user_messages(dialogue: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in dialogue if m["role"] == "user"]


def _runs(dialogue: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The assistant/tool messages between one user message and the next (one run per user turn)."""
    runs: list[list[dict[str, Any]]] = []
    for m in dialogue:
        if m["role"] == "user":
            runs.append([])
        elif runs:
            runs[-1].append(m)
    return runs


def turn_events(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The dialogue so far as the events the turn rules read (``benchsmith.construction.turns``): a
    user message, an assistant reply with its calls, the tools' results once every call of the
    reply has run (one by one, in ``tool_turn``), and the user's closing when its goal is met."""
    events: list[dict[str, Any]] = []
    for m in state.get("dialogue") or []:
        if m["role"] == "user":
            events.append({"who": "user"})
        elif m["role"] == "assistant":
            events.append({"who": "assistant", "calls": m.get("tool_calls") or []})
        elif events[-1]["who"] != "tool":
            events.append({"who": "tool"})
    if state.get("pending") and events and events[-1]["who"] == "tool":
        events.pop()  # calls of the reply still to run: the tools have not finished their turn
    if state.get("goal_met"):
        events.append({"who": "user", "stop": True})
    return events


def _reply_json(message: dict[str, Any]) -> str:
    """An assistant message as the JSON reply the assistant model wrote."""
    if message.get("tool_calls"):
        return _dumps(
            {"tool_calls": [{"name": c["name"], "arguments": c.get("arguments") or {}} for c in message["tool_calls"]]}
        )
    return _dumps({"message": message.get("content", "")})


def _ok(record: dict[str, Any]) -> bool:
    return "error" not in record


def _labels(state: dict[str, Any]) -> list[str]:
    """Every output an argument may refer to: set-up outputs and successful calls so far."""
    setup = state["candidate"].get("setup") or []
    return [f"${c['label']}$" for c in setup if c.get("label")] + [
        f"${e['call']['label']}$" for e in state.get("executed") or [] if _ok(e)
    ]


def _visible_tools(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in state["candidate"]["tools"] if not t.get("hidden")]


# -- user agent ---------------------------------------------------------------------------------
def _user_vars(state: dict[str, Any]) -> dict[str, Any]:
    cand = state["candidate"]
    turns = []  # (assistant text shown to the user, the user's own reply) pairs after the first message
    dialogue = state.get("dialogue") or []
    users = _user_messages(dialogue)
    replies = [m for m in dialogue if m["role"] == "assistant" and not m.get("tool_calls")]
    for i, said in enumerate(users):
        turns.append(
            {
                "said": _dumps({"message": said["content"], "goal_met": False}),
                "answer": replies[i]["content"] if i < len(replies) else None,
            }
        )
    return {"goal": cand["goal"], "persona": cand.get("persona") or DEFAULT_PERSONA, "turns": turns}


def _parse_user(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("message", "goal_met"))
    if not isinstance(value["goal_met"], bool):
        raise ParseError("bad_field", "goal_met must be true or false")
    dialogue = list(state.get("dialogue") or [])
    users = _user_messages(dialogue)
    if value["goal_met"]:
        if not users:
            raise ParseError("bad_field", "the user said its goal was met before saying anything")
        closing = value["message"].strip() if isinstance(value["message"], str) else ""
        return {"goal_met": True, "closing": closing}
    message = user_message(nonempty_text(value["message"], "message"), (t["name"] for t in _visible_tools(state)))
    if turn_budget_spent(turn_events(state), state["max_turns"]):
        return reject("budget", "turn_budget", f"the user's goal was not met within {state['max_turns']} turn(s)")
    dialogue.append({"role": "user", "content": message})
    return {"dialogue": dialogue, "goal_met": False}


USER = ModelStep(
    "user_turn",
    "user",
    "construction/dialogue_user",
    _user_vars,
    _parse_user,
    schema=lambda s: {
        "type": "object",
        "properties": {"message": {"type": "string", "maxLength": 400}, "goal_met": {"type": "boolean"}},
        "required": ["message", "goal_met"],
    },
    max_tokens=160,
)


# -- assistant agent ------------------------------------------------------------------------------
def _assistant_vars(state: dict[str, Any]) -> dict[str, Any]:
    cand = state["candidate"]
    columns, tools = tool_view(cand["tools"])
    sections: list[dict[str, str]] = []
    by_label = {e["call"]["label"]: e for e in state.get("executed") or []}
    results: list[str] = []
    for m in state.get("dialogue") or []:
        if m["role"] == "tool":
            e = by_label.get(m.get("name"))
            name = e["call"]["name"] if e else "tool"
            results.append(f"${m.get('name')}$ {name}: {_text(m['content'])}")
            continue
        if results:
            sections.append({"role": "user", "content": "Results:\n" + "\n".join(results)})
            results = []
        if m["role"] == "user":
            sections.append({"role": "user", "content": f"User: {m['content']}"})
        elif m["role"] == "assistant":
            sections.append({"role": "assistant", "content": _reply_json(m)})
    if results:
        sections.append({"role": "user", "content": "Results:\n" + "\n".join(results)})
    return {
        "tools": tools,
        "columns": columns,
        "setup_note": setup_text(cand.get("setup") or []),
        "labels": _labels(state),
        "sections": sections,
    }


def _assistant_schema(state: dict[str, Any]) -> dict[str, Any]:
    from benchsmith.models import reference_choices

    labels = _labels(state)
    calls = [
        {
            "type": "object",
            "properties": {
                "name": {"const": t["name"]},
                "arguments": reference_choices(t.get("parameters") or {"type": "object"}, labels),
            },
            "required": ["name", "arguments"],
        }
        for t in _visible_tools(state)
    ]
    message = {
        "type": "object",
        "properties": {"message": {"type": "string", "maxLength": MAX_MESSAGE}},
        "required": ["message"],
    }
    if not calls:
        return message
    act = {
        "type": "object",
        "properties": {
            "tool_calls": {"type": "array", "minItems": 1, "maxItems": MAX_CALLS_PER_REPLY, "items": {"anyOf": calls}}
        },
        "required": ["tool_calls"],
    }
    return {"anyOf": [act, message]}


def _parse_assistant(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text)
    dialogue = list(state.get("dialogue") or [])
    raw_calls = value.get("tool_calls")
    if raw_calls:
        if not isinstance(raw_calls, list):
            raise ParseError("bad_field", "tool_calls must be a list")
        names = {t["name"] for t in state["candidate"]["tools"]}
        taken = {c.get("label") for c in state["candidate"].get("setup") or []}
        n = len(state.get("executed") or []) + len(state.get("pending") or [])
        calls = []
        for raw in raw_calls[:MAX_CALLS_PER_REPLY]:
            if not isinstance(raw, dict) or raw.get("name") not in names:
                what = raw.get("name") if isinstance(raw, dict) else raw
                raise ParseError("unknown_tool", f"the assistant called no known tool: {what!r}")
            args = raw.get("arguments") if raw.get("arguments") is not None else {}
            if not isinstance(args, dict):
                raise ParseError("bad_arguments", "arguments must be a JSON object")
            n += 1
            label = f"out_{n}"
            while label in taken:
                n += 1
                label = f"out_{n}"
            calls.append({"name": raw["name"], "arguments": args, "label": label})
        content = value["message"].strip() if isinstance(value.get("message"), str) else ""
        dialogue.append({"role": "assistant", "content": content, "tool_calls": calls})
        return {"dialogue": dialogue, "pending": calls}
    if "message" not in value:
        raise ParseError("missing_field", "the reply has neither tool_calls nor message")
    message = nonempty_text(value["message"], "message")
    dialogue.append({"role": "assistant", "content": message})
    return {"dialogue": dialogue, "pending": []}


ASSISTANT = ModelStep(
    "assistant_turn",
    "assistant",
    "construction/dialogue_assistant",
    _assistant_vars,
    _parse_assistant,
    schema=_assistant_schema,
    max_tokens=320,
)


# -- tool agent -----------------------------------------------------------------------------------
def _environment(state: dict[str, Any], ctx: Any) -> Any:
    """The item's environment with every earlier successful call replayed, or None (simulate)."""
    from benchsmith.construction import close_environment, open_environment

    descriptor = state["candidate"].get("environment")
    if not descriptor:
        return None
    env = open_environment(descriptor, ctx.env_context)
    try:
        for e in state.get("executed") or []:
            if _ok(e) and not e.get("simulated"):
                env.call(e["call"]["name"], e["call"]["arguments"], e["call"]["label"])
    except BaseException:
        close_environment(env)
        raise
    return env


def tool_turn(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    """Run the first pending call for real when the item has an environment, else simulate it."""
    from benchsmith.construction.nl2api import ToolError

    ctx = runtime.context
    pending = list(state.get("pending") or [])
    call = pending[0]
    update: dict[str, Any] = {}
    try:
        env = _environment(state, ctx)
    except ToolError as exc:
        return reject("tool_turn", "replay_failed", f"an earlier call failed when replayed: {exc}")
    if env is None:
        steps = [
            {"call": e["call"], "observation": e.get("observation")} for e in state.get("executed") or [] if _ok(e)
        ]
        sim = apply_step(SIMULATE, {"candidate": state["candidate"], "pending": {"call": call}, "steps": steps}, ctx)
        if sim.get("status") == REVIEW:
            return sim
        record = {"call": call, "simulated": True}
        if "error" in sim["pending"]:
            record["error"] = sim["pending"]["error"]
        else:
            record["observation"] = _maybe_json(sim["pending"].get("observation"))
        update["calls"] = sim["calls"]
    else:
        from benchsmith.construction import close_environment

        record = {"call": call}
        try:
            try:
                record["observation"] = env.call(call["name"], call["arguments"], call["label"])
            except ToolError as exc:
                record["error"] = {"code": getattr(exc, "code", None) or "tool_error", "message": str(exc)[:500]}
            snapshot = getattr(env, "state", None)
            if callable(snapshot):
                update["env_state"] = snapshot()
        finally:
            close_environment(env)  # a fresh one (the earlier calls replayed) for the next turn
    content = (
        _dumps(record["observation"])
        if _ok(record)
        else _dumps({"error": record["error"]["code"], "message": record["error"]["message"]})
    )
    update.update(
        {
            "pending": pending[1:],
            "executed": [*(state.get("executed") or []), record],
            "dialogue": [*(state.get("dialogue") or []), {"role": "tool", "name": call["label"], "content": content}],
        }
    )
    return update


# -- finalize (pure) ----------------------------------------------------------------------------------
def _differing_keys(lines: list[str]) -> list[str]:
    return [line.split(":", 1)[0] for line in lines]


def finalize(state: dict[str, Any]) -> dict[str, Any]:
    """Pure: the finished dialogue as a sample, or a rejection."""
    cand = state["candidate"]
    dialogue = state.get("dialogue") or []
    executed = state.get("executed") or []
    if not state.get("goal_met"):
        return reject("finalize", "goal_not_met", "the conversation ended before the user said its goal was met")
    last = dialogue[-1] if dialogue else None
    if last is None or last["role"] != "assistant" or last.get("tool_calls"):
        return reject("finalize", "no_final_answer", "the dialogue does not end with an assistant message")
    calls = [c for m in dialogue if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    if not calls:
        return reject("finalize", "no_tool_call", "the assistant never called a tool")
    done = {e["call"]["label"] for e in executed}
    missing = [c["label"] for c in calls if c["label"] not in done]
    if missing or state.get("pending"):
        return reject("finalize", "unexecuted_call", f"call(s) {', '.join(missing)} never ran")
    failed = [e for e in executed if not _ok(e)]
    if failed and not cand.get("allow_failed_calls", True):
        return reject("finalize", "failed_call", f"{len(failed)} call(s) failed, e.g. {failed[0]['error']['code']}")
    final_state = state.get("env_state")
    expected = cand.get("expected_state")
    if expected is not None:
        from benchsmith.construction.sandbox import state_mismatches

        if final_state is None:
            return reject(
                "finalize", "no_final_state", "the environment gave no state to compare with the expected one"
            )
        diff = state_mismatches(final_state, expected)
        if diff:
            keys = _differing_keys(diff)
            return {
                **reject(
                    "finalize", "end_state_mismatch", f"differing keys: {', '.join(keys)} ({'; '.join(diff[:3])})"
                ),
                "state_diff": diff,
            }
    gold = []
    for e in executed:
        if _ok(e):
            gold.append({"call": e["call"], "observation": e.get("observation"), "verdict": "success"})
        else:
            verdict = "internal_error" if e["error"]["code"] in INTERNAL_CODES else "input_error"
            gold.append(
                {
                    "call": e["call"],
                    "observation": {"error": e["error"]["code"], "message": e["error"]["message"]},
                    "verdict": verdict,
                }
            )
    messages = []
    for m in dialogue:
        msg = {"role": m["role"], "content": m.get("content", "")}
        if m.get("tool_calls"):
            msg["tool_calls"] = m["tool_calls"]
        if m.get("name"):
            msg["name"] = m["name"]
        messages.append(msg)
    categories = ["dialogue"]
    if len(_user_messages(dialogue)) > 1:
        categories.append("multi_turn")
    if any(sum(len(m.get("tool_calls") or []) for m in run) > 1 for run in _runs(dialogue)):
        categories.append("multi_step")
    metadata: dict[str, Any] = {
        "goal": cand["goal"],
        "persona": cand.get("persona") or DEFAULT_PERSONA,
        "turns": len(_user_messages(dialogue)),
        "closing_message": state.get("closing") or "",
        "simulated_calls": sum(1 for e in executed if e.get("simulated")),
        "failed_calls": len(failed),
    }
    if cand.get("environment"):
        metadata["environment"] = cand["environment"]
    if final_state is not None:
        metadata["final_state"] = final_state
    if expected is not None:
        metadata["expected_state"] = expected
    for key in ("scenario_id", "source_sample_id"):
        if cand.get(key):
            metadata[key] = cand[key]
    sample = {
        "dialogue": messages,
        "tools": cand["tools"],
        "setup": cand.get("setup") or [],
        "gold": gold,
        "answer": {"kind": "none"},
        "categories": categories,
        "metadata": metadata,
    }
    return {"status": ACCEPTED, "outputs": [sample]}


# -- routing: the turn rules -------------------------------------------------------------------------
NODES = {"user": "user_turn", "assistant": "assistant_turn", "tool": "tool_turn", "end": "finalize"}


def next_node(state: dict[str, Any]) -> str:
    """The node of whoever speaks next (:func:`~benchsmith.construction.turns.next_speaker`); the
    step budget before the assistant is asked again; the end once the item is no longer running."""
    if state.get("status") != RUNNING:
        return "__end__"
    events = turn_events(state)
    who = next_speaker(events)
    if who == "assistant" and step_budget_spent(events, state["max_steps"]):
        return "step_budget"
    return NODES[who]


def step_budget(state: dict[str, Any]) -> dict[str, Any]:
    return reject(
        "budget", "step_budget", f"the assistant has not answered the user after {state['max_steps']} replies"
    )


# -- items ----------------------------------------------------------------------------------------------------
def _scenario_items(path: Path | None) -> list[tuple[str, dict[str, Any]]]:
    from benchsmith.construction.sandbox import load_scenarios, scenario_to_sample

    items = []
    for s in load_scenarios(path):
        sample = scenario_to_sample(s)
        item = sample.model_dump(mode="json", exclude_none=True, exclude={"provenance", "verification"})
        item["metadata"] = {**item.get("metadata", {}), "scenario_id": s.id}
        items.append((s.id, item))
    return items


class DialoguesOptions(GraphOptions):
    max_turns: int = Field(8, ge=1, description="user messages before the dialogue ends unfinished")
    max_steps: int = Field(5, ge=1, description="assistant replies after one user message (tool calls and answer)")
    persona: str | None = Field(None, description="the simulated user's persona when the item has none")
    allow_failed_calls: bool = Field(True, description="accept dialogues in which a tool call failed")
    environment: dict[str, Any] | None = Field(
        None, description="tool environment for samples without their own (metadata.environment), as JSON"
    )


@graph("dialogues")
class DialoguesGraph(ConstructionGraph):
    description = "user agent (goal + persona) <-> assistant agent <-> tools (real or simulated), until the goal is met"
    version = "v2"  # v2: the shared turn rules (turns.py): user role checks, max_steps counts every reply
    roles = ("user", "assistant", "tool_simulator")
    steps = (USER, ASSISTANT, SIMULATE)
    Options = DialoguesOptions

    def read_items(self, source: Any) -> list[tuple[str, dict[str, Any]]]:

        if str(source) == "sandbox":
            return _scenario_items(None)
        path = Path(source)
        from benchsmith.construction.sandbox import is_scenarios_file

        if path.is_file() and is_scenarios_file(path):
            return _scenario_items(path)
        return query_sample_items(source, "pass a samples JSONL file, a sandbox scenarios JSONL file, or 'sandbox'")

    def initial(self, item_id: str, item: dict[str, Any], seed: int) -> dict[str, Any]:
        state = super().initial(item_id, item, seed)
        meta = item.get("metadata") or {}
        env = environment_of(item, self.options.environment)
        candidate: dict[str, Any] = {
            "goal": item["query"],
            "persona": meta.get("persona") or self.options.persona or DEFAULT_PERSONA,
            "tools": item.get("tools") or [],
            "setup": item.get("setup") or [],
            "allow_failed_calls": self.options.allow_failed_calls,
        }
        if env:
            candidate["environment"] = env
        if meta.get("expected_state") is not None:
            candidate["expected_state"] = meta["expected_state"]
        if meta.get("scenario_id"):
            candidate["scenario_id"] = meta["scenario_id"]
        else:
            candidate["source_sample_id"] = item.get("id")
        state.update(
            {
                "candidate": candidate,
                "dialogue": [],
                "executed": [],
                "pending": [],
                "goal_met": False,
                "max_turns": self.options.max_turns,
                "max_steps": self.options.max_steps,
            }
        )
        return state

    def build(self) -> Any:
        from langgraph.graph import END, START, StateGraph

        g = StateGraph(DialogueState)
        g.add_node("user_turn", model_node(USER))
        g.add_node("assistant_turn", model_node(ASSISTANT))
        g.add_node("tool_turn", tool_turn)
        g.add_node("step_budget", step_budget)
        g.add_node("finalize", finalize)
        g.add_edge(START, "user_turn")
        for node in ("user_turn", "assistant_turn", "tool_turn"):
            g.add_conditional_edges(node, next_node, [*NODES.values(), "step_budget", END])
        g.add_edge("step_budget", END)
        g.add_edge("finalize", END)
        return g


__all__ = ["DialoguesGraph"]
