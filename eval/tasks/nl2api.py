"""NL2API end to end: a ReAct loop in which the split's tools really execute on its read-only
database. Each step the model either calls one tool (its output is kept as ``$out_N$`` and a
preview comes back as the observation) or finishes; the prediction is the sequence of calls that
ran, which the ``nl2api`` scorer executes again and compares with the gold answer.

``prompt`` mode decodes each step under a JSON schema (one branch per tool, with that tool's own
parameter schema); ``tools`` mode uses native tool calling with tool messages. A reply that
cannot be read is fed back as an error observation and costs a step; the step budget bounds the
loop.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from benchsmith.construction.nl2api import (
    SLOT_TOOLS, Database, Runtime, ToolError, observation, read_endpoints, read_toolset, run_endpoint,
)
from benchsmith.eval import EvalCase
from benchsmith.eval._private.derive import setup_note
from benchsmith.eval._private.runner import CallContext, FormatError, Outcome, Request, Task, Turn, read_json_reply, task
from benchsmith.prompts import get_prompt
from benchsmith.schemas import ToolCall, UnresolvedReference, resolve_references

from ._common import THOUGHT, native_tool_calls, reference_choices

MAX_OBSERVATION = 1500


def _type_text(schema: Any, columns: set[str]) -> str:
    if not isinstance(schema, dict):
        return "any"
    enum = schema.get("enum")
    if isinstance(enum, list):
        if columns and set(map(str, enum)) <= columns:
            return "column"
        return "one of " + "|".join(map(str, enum))
    t = schema.get("type")
    if t == "array":
        return f"list of {_type_text(schema.get('items'), columns)}"
    if t == "object" and isinstance(schema.get("properties"), dict):
        req = set(schema.get("required") or [])
        inner = ", ".join(f"{k}{'' if k in req else '?'}: {_type_text(v, columns)}" for k, v in schema["properties"].items())
        return "{" + inner + "}"
    if isinstance(t, list):
        return "|".join(map(str, t))
    return str(t or "any")


def compact_tools(tools: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The tools as short text for a prompt: the column list once (it is repeated in every
    column parameter's description), each parameter as ``name (type): first part of its description``.

    >>> cols, ts = compact_tools([{"name": "f", "description": "Keep rows.", "parameters": {"type": "object",
    ...     "properties": {"key_name": {"type": "string", "enum": ["t.a", "t.b"], "description": "A column. Columns: t.a: id; t.b: name"}},
    ...     "required": ["key_name"]}}])
    >>> cols, ts[0]["params"]
    ('t.a: id; t.b: name', ['key_name (column, required): A column.'])
    """
    columns_text = ""
    names: set[str] = set()
    for t in tools:
        for prop in ((t.get("parameters") or {}).get("properties") or {}).values():
            desc = str(prop.get("description", "")) if isinstance(prop, dict) else ""
            if " Columns: " in desc:
                tail = desc.split(" Columns: ", 1)[1]
                if len(tail) > len(columns_text):
                    columns_text = tail
                if isinstance(prop.get("enum"), list):
                    names |= set(map(str, prop["enum"]))
    out = []
    for t in tools:
        params = (t.get("parameters") or {})
        req = set(params.get("required") or [])
        lines = []
        for name, prop in (params.get("properties") or {}).items():
            desc = str(prop.get("description", "")) if isinstance(prop, dict) else ""
            desc = desc.split(" Columns: ", 1)[0]
            lines.append(f"{name} ({_type_text(prop, names)}{', required' if name in req else ''}): {desc}".rstrip(": "))
        out.append({"name": t["name"], "description": t.get("description", ""), "params": lines})
    return columns_text, out


def step_schema(tools: list[dict[str, Any]], labels: list[str] | None = None) -> dict[str, Any]:
    """One ``anyOf`` branch per tool (its name as a constant, its parameters as the arguments
    schema, parameters that take an earlier output limited to the ``labels`` that exist) plus
    ``finish``. The action comes first and the thought last, so a rambling thought cannot cost
    the step."""
    branches = []
    for t in tools:
        params = reference_choices(t.get("parameters") or {"type": "object"}, labels or [])
        branches.append({"type": "object", "properties": {"action": {"const": t["name"]}, "arguments": params,
                                                          "thought": THOUGHT},
                         "required": ["action", "arguments", "thought"]})
    branches.append({"type": "object", "properties": {"action": {"const": "finish"},
                                                      "arguments": {"type": "object", "maxProperties": 0},
                                                      "thought": THOUGHT},
                     "required": ["action", "arguments", "thought"]})
    return {"anyOf": branches}


def parse_step(text: str, names: set[str]) -> dict[str, Any]:
    """``{"thought", "action", "arguments"}`` from a prompt-mode reply (pure).

    >>> parse_step('{"thought": "t", "action": "finish", "arguments": {}}', {"f"})["action"]
    'finish'
    """
    value = read_json_reply(text)
    if not isinstance(value, dict):
        raise FormatError("bad_shape", "expected a JSON object with thought, action and arguments")
    action = value.get("action")
    if not isinstance(action, str) or not action:
        raise FormatError("no_action", "the reply names no action")
    if action != "finish" and action not in names:
        raise FormatError("unknown_tool", f"there is no tool {action!r}")
    args = value.get("arguments") if value.get("arguments") is not None else {}
    if not isinstance(args, dict):
        raise FormatError("bad_arguments", "arguments must be a JSON object")
    return {"thought": str(value.get("thought") or ""), "action": action, "arguments": args}


class ToolEnv:
    """The split's tools for one case, executing on the split's read-only database.

    The case's hidden set-up calls (``setup``) run here, through the runtime's set-up entry
    point. When none are given, set-up calls may instead come one by one through :meth:`call`,
    until the first other call (a sample replayed call by call); ``setup_phase=False`` closes
    that door, as the ReAct task does: the model's calls never reach a hidden tool."""

    def __init__(self, split: Path, db: Database, style: str, setup: list[dict[str, Any]], *,
                 setup_phase: bool | None = None) -> None:
        self.style = style
        self.db = db
        self._setup_phase = not setup if setup_phase is None else setup_phase
        if style == "rest":
            self.endpoints = read_endpoints(split / "endpoints.json")
            self.outputs: dict[str, Any] = {}
        else:
            toolset = split / "toolset.json"
            self.runtime = Runtime(db, read_toolset(toolset) if toolset.is_file() else None)
            self.runtime.setup(ToolCall.model_validate(c) for c in setup)

    def call(self, name: str, arguments: dict[str, Any], label: str) -> Any:
        """Run one call; its JSON-able observation. Raises ToolError for anything the model got wrong."""
        try:
            if self.style == "rest":
                endpoint = self.endpoints.get(name)
                if endpoint is None:
                    raise ToolError(f"unknown endpoint {name!r}", code="unknown_tool")
                args = resolve_references(arguments, self.outputs)
                extra = sorted(set(args) - set(endpoint["parameters"]))
                if extra:
                    raise ToolError(f"{name} has no parameter {extra[0]!r}", code="unknown_argument")
                result = run_endpoint(self.db, endpoint, args)
                self.outputs[label] = result
                return {"columns": result.get("columns"), "rows": (result.get("rows") or [])[:5],
                        "truncated": len(result.get("rows") or []) > 5}
            call = ToolCall(name=name, arguments=arguments, label=label)
            if self._setup_phase and name in SLOT_TOOLS and SLOT_TOOLS[name].hidden:
                value = self.runtime.setup([call])
            else:
                self._setup_phase = False
                value = self.runtime.call(call)
            return observation(value, self.db)
        except ToolError:
            raise
        except UnresolvedReference as exc:
            raise ToolError(str(exc), code="bad_reference") from None
        except (ValueError, TypeError, KeyError, sqlite3.Error) as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}", code="tool_error") from None
        except Exception as exc:  # noqa: BLE001 - a crash on model input is an observation, not a run failure
            raise ToolError(f"{type(exc).__name__}: {exc}", code="tool_error") from None


def _observation_text(label: str, value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_OBSERVATION:
        text = text[:MAX_OBSERVATION] + " …(cut)"
    return f"Output ${label}$: {text}"


@task("nl2api")
class NL2APITask(Task):
    benchmark = "nl2api"
    description = "NL2API end to end: ReAct with the split's tools really executing"

    def __init__(self, data: Path, options: Any) -> None:
        super().__init__(data, options)
        self._dbs: dict[str, Database] = {}

    def runnable(self, case: EvalCase) -> bool:
        return case.meta.get("source") == "split"

    def prompt_version(self) -> str:
        return f"{get_prompt('nl2api/react').version}-{self.options.mode}-budget{self.options.step_budget}"

    def _env(self, case: EvalCase) -> ToolEnv:
        split = Path(case.meta["split"])
        key = str(split)
        if key not in self._dbs:
            self._dbs[key] = Database(split / "database.sqlite", check=True)
        return ToolEnv(split, self._dbs[key], case.meta.get("style", "slot"), case.meta.get("setup") or [],
                       setup_phase=False)

    def _base(self, case: EvalCase, steps: list[dict[str, str]], native: bool) -> list[dict[str, Any]]:
        setup = [ToolCall.model_validate(c) for c in case.meta.get("setup") or []]
        columns, tools = compact_tools([] if native else case.input["tools"])
        return get_prompt("nl2api/react").render(
            native_tools=native, tools=tools, columns=columns, query=case.input.get("query") or "",
            context=case.input.get("context"), setup_note=setup_note(setup), steps=steps)

    async def solve(self, case: EvalCase, ctx: CallContext) -> Outcome:
        tools = case.input["tools"]
        names = {t["name"] for t in tools}
        env = self._env(case)
        native = self.options.mode == "tools"
        labels = [f"${c['label']}$" for c in case.meta.get("setup") or [] if c.get("label")]
        oa_tools = [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                      "parameters": t.get("parameters") or {"type": "object"}}}
                    for t in tools] if native else None
        steps: list[dict[str, str]] = []           # prompt mode: rendered (reply, observation) pairs
        history: list[dict[str, Any]] = []         # tools mode: assistant + tool messages
        calls: list[dict[str, Any]] = []
        turns: list[Turn] = []
        unreadable = 0
        stopped = "budget"
        for _ in range(max(1, self.options.step_budget)):
            if native:
                msgs = self._native_messages(case) + history
                req = Request(msgs, tools=oa_tools, max_tokens=self.options.max_tokens)
            else:
                req = Request(self._base(case, steps, False), json_schema=step_schema(tools, labels),
                              max_tokens=self.options.max_tokens)
            _, turn = await ctx.call(req)
            turns.append(turn)
            try:
                step = self._read(turn, names, native)
            except FormatError as exc:
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
                history += [{"role": "assistant", "content": turn.raw or "", "tool_calls": [
                    {"id": call_id, "type": "function",
                     "function": {"name": step["action"], "arguments": json.dumps(step["arguments"], ensure_ascii=False)}}]},
                    {"role": "tool", "tool_call_id": call_id, "content": obs}]
            else:
                steps.append({"reply": json.dumps({"action": step["action"], "arguments": step["arguments"],
                                                   "thought": step["thought"]}, ensure_ascii=False),
                              "observation": obs})
        result = json.dumps(calls, ensure_ascii=False)
        if not calls and unreadable == len(turns):
            return Outcome("format_error", result, turns,
                           {"type": "no_readable_step", "message": f"none of {len(turns)} replies could be read"})
        if turns and isinstance(turns[-1].parsed, dict):
            turns[-1].parsed = {**turns[-1].parsed, "stopped": stopped, "unreadable_replies": unreadable}
        return Outcome("ok", result, turns)

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
            raise FormatError("unknown_tool", f"there is no tool {call['name']!r}")
        return {"thought": turn.raw, "action": call["name"], "arguments": call["arguments"]}
