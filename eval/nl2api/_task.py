"""NL2API end to end: a ReAct loop in which the split's tools really execute on its read-only
database. Each step the model either calls one tool (its output is kept as ``$out_N$`` and a
preview comes back as the observation) or finishes; the prediction is the sequence of calls that
ran, which the ``nl2api`` scorer executes again and compares with the gold answer.

``prompt`` mode decodes each step under a JSON schema (one branch per tool, with that tool's own
parameter schema); ``tools`` mode uses native tool calling with tool messages. A reply that
cannot be read is fed back as an error observation and costs a step; the step budget bounds the
loop.

Strategy ``direct`` (``TaskOptions.strategy``) asks once for the whole sequence instead: one reply
holds every call (``{"calls": [...]}`` under a schema in ``prompt`` mode, all the reply's native tool
calls in ``tools`` mode), outputs named ``$out_1$``, ``$out_2$``, ... in call order. Nothing is fed
back; the calls are executed once afterwards only to record, per call, whether it ran. An
unreadable reply is a format error (one shot, no retry).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchsmith.construction.nl2api import Database, ToolEnv, ToolError, compact_tools, setup_note, step_schema
from benchsmith.eval import EvalCase, Task, task
from benchsmith.eval.calls import native_tool_calls
from benchsmith.eval.tasks import CallContext, Outcome, Request, Turn, shallow_reply
from benchsmith.models import ParseError, read_json_reply
from benchsmith.prompts import get_prompt
from benchsmith.schemas import Split, ToolCall

from ._plugin import NL2API

MAX_OBSERVATION = 1500
#: direct strategy: the preview of each call's output kept in the trace
MAX_TRACE_OUTPUT = 300
#: direct strategy: the reply length cap (max_tokens x step budget, at most this)
DIRECT_MAX_TOKENS = 4096


def parse_step(text: str, names: set[str]) -> dict[str, Any]:
    """``{"thought", "action", "arguments"}`` from a prompt-mode reply (pure).

    >>> parse_step('{"thought": "t", "action": "finish", "arguments": {}}', {"f"})["action"]
    'finish'
    """
    value = shallow_reply(read_json_reply(text))  # the arguments run, and the reply is journaled
    if not isinstance(value, dict):
        raise ParseError("bad_shape", "expected a JSON object with thought, action and arguments")
    action = value.get("action")
    if not isinstance(action, str) or not action:
        raise ParseError("no_action", "the reply names no action")
    if action != "finish" and action not in names:
        raise ParseError("unknown_tool", f"there is no tool {action!r}")
    args = value.get("arguments") if value.get("arguments") is not None else {}
    if not isinstance(args, dict):
        raise ParseError("bad_arguments", "arguments must be a JSON object")
    return {"thought": str(value.get("thought") or ""), "action": action, "arguments": args}


def parse_direct(text: str) -> list[dict[str, Any]]:
    """``[{"name", "arguments"}]`` from a direct prompt-mode reply ``{"calls": [...]}`` (a bare list
    of calls is accepted too); raises :class:`ParseError` (pure). Tool names are not checked here:
    a call to a tool that does not exist is a wrong call, which the scorer judges.

    >>> parse_direct('{"calls": [{"name": "f", "arguments": {"x": 1}}, {"name": "g"}]}')
    [{'name': 'f', 'arguments': {'x': 1}}, {'name': 'g', 'arguments': {}}]
    """
    value = shallow_reply(read_json_reply(text))  # the calls run, and the reply is journaled
    calls = value.get("calls") if isinstance(value, dict) else value
    if not isinstance(calls, list):
        raise ParseError("bad_shape", 'expected a JSON object {"calls": [{"name", "arguments"}, ...]}')
    if not calls:
        raise ParseError("no_calls", "the reply lists no call")
    out = []
    for n, item in enumerate(calls, 1):
        if not isinstance(item, dict):
            raise ParseError("bad_call", f"call {n} is not a JSON object")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ParseError("no_name", f"call {n} names no tool")
        args = item.get("arguments") if item.get("arguments") is not None else {}
        if not isinstance(args, dict):
            raise ParseError("bad_arguments", f"arguments of call {n} ({name}) must be a JSON object")
        out.append({"name": name, "arguments": args})
    return out


def direct_schema(tools: list[dict[str, Any]], labels: list[str], max_calls: int) -> dict[str, Any]:
    """``{"calls": [...]}``: each item one branch per tool (the branches of :func:`step_schema`, its
    name as a constant and its own parameter schema), between 1 and ``max_calls`` items; parameters
    that take an earlier output are limited to ``labels``."""
    items = []
    for branch in step_schema(tools, labels)["anyOf"]:
        props = branch["properties"]
        if props["action"].get("const") == "finish":
            continue
        items.append(
            {
                "type": "object",
                "properties": {"name": props["action"], "arguments": props["arguments"]},
                "required": ["name", "arguments"],
            }
        )
    return {
        "type": "object",
        "required": ["calls"],
        "properties": {
            "calls": {"type": "array", "items": {"anyOf": items}, "minItems": 1, "maxItems": max(1, max_calls)}
        },
    }


def _observation_text(label: str, value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_OBSERVATION:
        text = text[:MAX_OBSERVATION] + " …(cut)"
    return f"Output ${label}$: {text}"


class _RestEnv(ToolEnv):
    """The REST tools of a merged split: each endpoint runs on the database its entry names."""

    def __init__(self, *args: Any, db_for: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._db_for = db_for

    def call(self, name: str, arguments: dict[str, Any], label: str) -> Any:
        endpoint = self.endpoints.get(name)
        own = self.db
        if endpoint is not None and endpoint.get("db_id"):
            self.db = self._db_for(endpoint["db_id"])
        try:
            return super().call(name, arguments, label)
        finally:
            self.db = own


@task(NL2API)
class NL2APITask(Task):
    description = "NL2API end to end: ReAct (or --strategy direct: one shot) with the split's tools really executing"

    def __init__(self, data: Path, options: Any) -> None:
        super().__init__(data, options)
        # one read-only database per (split, db_id): a merged split runs each case on its sample's own
        self._dbs: dict[tuple[str, str | None], Database] = {}

    def runnable(self, case: EvalCase) -> bool:
        return case.meta.get("source") == "split"

    def prompt_version(self) -> str:
        name = "direct" if self._direct else "react"
        return f"{get_prompt(f'nl2api/{name}').version}-{self.options.calling}-budget{self.options.step_budget}"

    @property
    def _direct(self) -> bool:
        return getattr(self.options, "strategy", "react") == "direct"

    def _db(self, split: Path, db_id: str | None) -> Database:
        """The split's database for ``db_id``: database.sqlite, or a merged split's
        databases/<db_id>.sqlite (a missing one is a UserError); opened and checked once."""
        key = (str(split), db_id)
        if key not in self._dbs:
            self._dbs[key] = Database(Split(split).database_for(db_id), check=True)
        return self._dbs[key]

    def _env(self, case: EvalCase) -> ToolEnv:
        split = Path(case.meta["split"])
        db = self._db(split, case.meta.get("db_id"))
        style = case.meta.get("style", "slot")
        if style == "rest" and Split(split).has_databases():
            return _RestEnv(
                split,
                db,
                style,
                case.meta.get("setup") or [],
                setup_phase=False,
                db_for=lambda db_id: self._db(split, db_id),
            )
        return ToolEnv(split, db, style, case.meta.get("setup") or [], setup_phase=False)

    def _base(
        self, case: EvalCase, steps: list[dict[str, str]], native: bool, prompt: str = "nl2api/react"
    ) -> list[dict[str, Any]]:
        setup = [ToolCall.model_validate(c) for c in case.meta.get("setup") or []]
        columns, tools = compact_tools([] if native else case.input["tools"])
        return get_prompt(prompt).render(
            native_tools=native,
            tools=tools,
            columns=columns,
            query=case.input.get("query") or "",
            context=case.input.get("context"),
            setup_note=setup_note(setup),
            steps=steps,
        )

    @staticmethod
    def _oa_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "parameters": t.get("parameters") or {"type": "object"},
                },
            }
            for t in tools
        ]

    async def solve(self, case: EvalCase, ctx: CallContext) -> Outcome:
        if self._direct:
            return await self._solve_direct(case, ctx)
        tools = case.input["tools"]
        names = {t["name"] for t in tools}
        env = self._env(case)
        native = self.options.calling == "tools"
        labels = [f"${c['label']}$" for c in case.meta.get("setup") or [] if c.get("label")]
        oa_tools = self._oa_tools(tools) if native else None
        steps: list[dict[str, str]] = []  # prompt mode: rendered (reply, observation) pairs
        history: list[dict[str, Any]] = []  # tools mode: assistant + tool messages
        calls: list[dict[str, Any]] = []
        turns: list[Turn] = []
        unreadable = 0
        stopped = "budget"
        for _ in range(max(1, self.options.step_budget)):
            if native:
                msgs = self._native_messages(case) + history
                req = Request(msgs, tools=oa_tools, max_tokens=self.options.max_tokens)
            else:
                req = Request(
                    self._base(case, steps, False),
                    json_schema=step_schema(tools, labels),
                    max_tokens=self.options.max_tokens,
                )
            _, turn = await ctx.call(req)
            turns.append(turn)
            try:
                step = self._read(turn, names, native)
            except ParseError as exc:
                unreadable += 1
                turn.parsed = {"error": exc.code, "message": str(exc)}
                note = f"Error: your reply could not be used ({exc}). Reply with one JSON object as described."
                if native:
                    history += [{"role": "assistant", "content": turn.raw}, {"role": "user", "content": note}]
                else:
                    steps.append({"reply": turn.raw[:2000], "observation": note})
                continue
            turn.parsed = step
            if step["action"] == "finish":
                stopped = "finish"
                break
            label = f"out_{len(calls) + 1}"
            try:
                obs = _observation_text(label, env.call(step["action"], step["arguments"], label))
                calls.append({"name": step["action"], "arguments": step["arguments"], "label": label})
                labels.append(f"${label}$")
            except ToolError as exc:
                obs = f"Error from {step['action']}: {exc}"
            step["observation"] = obs
            if native:
                call_id = (turn.tool_calls[0].get("id") if turn.tool_calls else None) or f"call_{len(turns)}"
                history += [
                    {
                        "role": "assistant",
                        "content": turn.raw or "",
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {
                                    "name": step["action"],
                                    "arguments": json.dumps(step["arguments"], ensure_ascii=False),
                                },
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": call_id, "content": obs},
                ]
            else:
                steps.append(
                    {
                        "reply": json.dumps(
                            {"action": step["action"], "arguments": step["arguments"], "thought": step["thought"]},
                            ensure_ascii=False,
                        ),
                        "observation": obs,
                    }
                )
        result = json.dumps(calls, ensure_ascii=False)
        if not calls and unreadable == len(turns):
            return Outcome(
                "format_error",
                result,
                turns,
                {"type": "no_readable_step", "message": f"none of {len(turns)} replies could be read"},
            )
        if turns and isinstance(turns[-1].parsed, dict):
            turns[-1].parsed = {**turns[-1].parsed, "stopped": stopped, "unreadable_replies": unreadable}
        return Outcome("ok", result, turns)

    async def _solve_direct(self, case: EvalCase, ctx: CallContext) -> Outcome:
        """One request for the whole sequence; its calls are the prediction (labels ``out_1..N``)."""
        tools = case.input["tools"]
        native = self.options.calling == "tools"
        budget = max(1, self.options.step_budget)
        messages = self._base(case, [], native, "nl2api/direct")
        # the one reply holds what ReAct writes over all its steps: the same total length, within
        # DIRECT_MAX_TOKENS (10 calls fit easily) unless --max-tokens alone asks for more
        max_tokens = min(self.options.max_tokens * budget, max(self.options.max_tokens, DIRECT_MAX_TOKENS))
        if native:
            req = Request(messages, tools=self._oa_tools(tools), max_tokens=max_tokens)
        else:
            labels = [f"${c['label']}$" for c in case.meta.get("setup") or [] if c.get("label")]
            labels += [f"$out_{i}$" for i in range(1, budget)]
            req = Request(messages, json_schema=direct_schema(tools, labels, budget), max_tokens=max_tokens)
        _, turn = await ctx.call(req)
        try:
            if native:
                if not turn.tool_calls:
                    raise ParseError("no_calls", "the reply makes no tool call")
                read = native_tool_calls(turn.tool_calls)
            else:
                read = parse_direct(turn.raw)
        except ParseError as exc:
            turn.parsed = {"error": exc.code, "message": str(exc)}
            return Outcome("format_error", turn.raw, [turn], {"type": exc.code, "message": str(exc)[:500]})
        calls = [{"name": c["name"], "arguments": c["arguments"], "label": f"out_{i}"} for i, c in enumerate(read, 1)]
        turn.parsed = {"strategy": "direct", "calls": self._trace(case, calls)}
        return Outcome("ok", json.dumps(calls, ensure_ascii=False), [turn])

    def _trace(self, case: EvalCase, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each call run once, in order, in a fresh environment: ``ok`` with a preview of its output,
        or the tool error (later calls still run; scoring executes the sequence again on its own)."""
        env = self._env(case)
        out = []
        for call in calls:
            entry: dict[str, Any] = {"name": call["name"], "label": call["label"]}
            try:
                value = env.call(call["name"], call["arguments"], call["label"])
            except ToolError as exc:
                entry.update(ok=False, error=exc.code, message=str(exc)[:500])
            else:
                text = json.dumps(value, ensure_ascii=False, default=str)
                entry.update(
                    ok=True, output=text if len(text) <= MAX_TRACE_OUTPUT else text[:MAX_TRACE_OUTPUT] + " …(cut)"
                )
            out.append(entry)
        return out

    def _native_messages(self, case: EvalCase) -> list[dict[str, Any]]:
        return self._base(case, [], True)

    @staticmethod
    def _read(turn: Turn, names: set[str], native: bool) -> dict[str, Any]:
        if not native:
            return parse_step(turn.raw, names)
        if not turn.tool_calls:
            return {"thought": turn.raw, "action": "finish", "arguments": {}}
        call = native_tool_calls(turn.tool_calls[:1])[0]
        if call["name"] not in names:
            raise ParseError("unknown_tool", f"there is no tool {call['name']!r}")
        return {"thought": turn.raw, "action": call["name"], "arguments": call["arguments"]}
