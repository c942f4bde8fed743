"""GTA step-by-step: from the gold dialogue prefix, the model makes the next step — one tool call
(``step:tool``) or the final answer (``step:answer``). End-to-end cases (``e2e``) of GTA cases
derived from a split run as solo episodes with the split's executable tools (``_episode.py``)."""

from __future__ import annotations

import json
from typing import Any

from benchsmith.construction.nl2api import hoist_columns
from benchsmith.eval import EvalCase, SingleCallTask, task
from benchsmith.eval.calls import THOUGHT
from benchsmith.eval.episodes import Episode, EpisodeSpec, EpisodeTask
from benchsmith.eval.tasks import CallContext, Outcome, Request, shallow_reply
from benchsmith.models import ParseError, call_schema, read_json_reply
from benchsmith.prompts import get_prompt

from . import _episode
from ._derive import derive_gta
from ._plugin import GTA


def plain_dialogs(dialogs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GTA dialogue entries in the simple shape the step template renders."""
    out = []
    for m in dialogs or []:
        role = m.get("role")
        if role == "assistant":
            calls = []
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function", tc) if isinstance(tc, dict) else {}
                calls.append({"name": fn.get("name"), "arguments": fn.get("arguments")})
            out.append(
                {
                    "role": "assistant",
                    "thought": m.get("thought") or "",
                    "tool_calls_plain": calls,
                    "content": m.get("content") or "",
                }
            )
        elif role == "tool":
            content = m.get("content")
            if isinstance(content, dict):
                content = content.get("content", content)
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
            out.append({"role": "tool", "name": m.get("name") or "", "result_text": text[:2000]})
        else:
            out.append({"role": "user", "content": m.get("content") or ""})
    return out


def gta_parameters(tool: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema for a GTA tool: the JSON Schema the entry carries (``parameters`` from
    benchsmith's derive, an input's ``schema`` from export), else one built from the AgentLego
    input types (text -> string, int -> integer, float -> number, bool -> boolean; files are
    paths, strings)."""
    if isinstance(tool.get("parameters"), dict) and tool["parameters"].get("properties") is not None:
        return {"type": "object", **tool["parameters"]}
    types = {
        "text": "string",
        "number": "number",
        "float": "number",
        "int": "integer",
        "bool": "boolean",
        "image": "string",
        "audio": "string",
        "video": "string",
        "file": "string",
    }
    props, required = {}, []
    for i in tool.get("inputs") or []:
        name = i.get("name")
        if not name:
            continue
        if isinstance(i.get("schema"), dict):
            props[name] = i["schema"]
        else:
            t = types.get(str(i.get("type")))
            props[name] = {"type": t} if t else {}
        if not i.get("optional"):
            required.append(name)
    return {"type": "object", "properties": props, "required": required}


@task(GTA)
class GTATask(EpisodeTask, SingleCallTask):
    deriver = staticmethod(derive_gta)
    description = "GTA step by step from gold prefixes; end to end (derived cases) with the split's tools"

    def runnable(self, case: EvalCase) -> bool:
        return case.category.startswith("step") or (case.category == "e2e" and _episode.runnable(case))

    def is_episode(self, case: EvalCase) -> bool:
        return case.category == "e2e"

    def episode_spec(self, case: EvalCase) -> EpisodeSpec:
        return _episode.episode_spec(case, gta_parameters)

    def prediction(self, case: EvalCase, episode: Episode) -> str:
        return _episode.prediction(case, episode)

    async def solve_single(self, case: EvalCase, ctx: CallContext) -> Outcome:
        return await SingleCallTask.solve(self, case, ctx)

    def prompt_version(self) -> str:
        return f"{get_prompt('gta/step').version}-{self.options.calling}+{EpisodeTask.prompt_version(self)}"

    def request(self, case: EvalCase) -> Request:
        tools = case.input.get("tools") or []
        schema = {
            "type": "object",
            "properties": {
                "tool_calls": {
                    "type": "array",
                    "maxItems": 1,
                    "items": call_schema([{"name": t.get("name"), "parameters": gta_parameters(t)} for t in tools]),
                },
                "content": {"type": "string", "maxLength": 600},
                "thought": THOUGHT,
            },
            "required": ["tool_calls", "content", "thought"],
        }
        columns, shown = hoist_columns(tools)  # the column list once, after the tools (a prefix cases share)
        msgs = get_prompt("gta/step").render(
            tools=shown, columns=columns, dialogs=plain_dialogs(case.input.get("dialogs") or [])
        )
        return Request(msgs, json_schema=schema, max_tokens=self.options.max_tokens)

    def parse(self, case: EvalCase, text: str, tool_calls: list[dict[str, Any]]) -> tuple[Any, Any]:
        value = shallow_reply(read_json_reply(text))  # serialised below: MAX_DEPTH
        if not isinstance(value, dict):
            raise ParseError("bad_shape", "expected a JSON object")
        thought = str(value.get("thought") or "")
        calls = value.get("tool_calls") or []
        if not isinstance(calls, list):
            raise ParseError("bad_shape", "tool_calls must be a list")
        if calls:
            return json.dumps({"thought": thought, "tool_calls": calls}, ensure_ascii=False), value
        return json.dumps({"thought": thought, "content": str(value.get("content") or "")}, ensure_ascii=False), value
