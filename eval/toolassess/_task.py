"""ToolAssess: awareness (requires_tool / no_tool / cannot_complete), selection (the first tool to
call, or ``none`` when no candidate fits) and multi-task scenarios, each one JSON-constrained call
rendered to ToolAssess's labels."""

from __future__ import annotations

import json
from typing import Any

from benchsmith.eval import EvalCase, SingleCallTask, task
from benchsmith.eval.tasks import Request, shallow_reply
from benchsmith.models import ParseError, read_json_reply
from benchsmith.prompts import get_prompt

from ._derive import derive_toolassess
from ._plugin import ToolAssess
from ._scorers import AWARENESS_CLASSES

NONE = "none"  # the selection answer when no candidate tool fits


def _names(tools: list[dict[str, Any]]) -> list[str]:
    return [str(t.get("name")) for t in tools or [] if t.get("name")]


def _chosen(answer: str) -> list[str]:
    return [] if answer == NONE else [answer]


@task(ToolAssess)
class ToolAssessTask(SingleCallTask):
    deriver = staticmethod(derive_toolassess)
    description = "ToolAssess awareness and selection, single and multi-task"

    def prompt_version(self) -> str:
        return "+".join(
            get_prompt(p).version for p in ("toolassess/awareness", "toolassess/selection", "toolassess/multi")
        )

    @staticmethod
    def _kind(case: EvalCase) -> tuple[bool, str]:
        multi = case.category.startswith("multi:")
        return multi, case.category.split(":", 1)[1] if multi else case.category

    def request(self, case: EvalCase) -> Request:
        multi, kind = self._kind(case)
        inp = case.input
        if multi:
            subs = inp.get("subtasks") or []
            n = len(subs)
            if kind == "awareness":
                item: dict[str, Any] = {"type": "string", "enum": list(AWARENESS_CLASSES)}
            else:
                names = sorted({nm for s in subs for nm in _names(s.get("tools") or [])} | {NONE})
                item = {"type": "string", "enum": names}
            schema = {
                "type": "object",
                "properties": {"answers": {"type": "array", "items": item, "minItems": n, "maxItems": n}},
                "required": ["answers"],
            }
            msgs = get_prompt("toolassess/multi").render(scenario=inp.get("scenario", ""), kind=kind, subtasks=subs)
            return Request(msgs, json_schema=schema, max_tokens=32 + 24 * n)
        if kind == "awareness":
            schema = {
                "type": "object",
                "properties": {"decision": {"type": "string", "enum": list(AWARENESS_CLASSES)}},
                "required": ["decision"],
            }
            msgs = get_prompt("toolassess/awareness").render(query=inp.get("query", ""), tools=inp.get("tools") or [])
            return Request(msgs, json_schema=schema, max_tokens=32)
        names = [*_names(inp.get("tools") or []), NONE]
        schema = {"type": "object", "properties": {"tool": {"type": "string", "enum": names}}, "required": ["tool"]}
        msgs = get_prompt("toolassess/selection").render(query=inp.get("query", ""), tools=inp.get("tools") or [])
        return Request(msgs, json_schema=schema, max_tokens=32)

    def parse(self, case: EvalCase, text: str, tool_calls: list[dict[str, Any]]) -> tuple[Any, Any]:
        multi, kind = self._kind(case)
        value = shallow_reply(read_json_reply(text))
        if not isinstance(value, dict):
            raise ParseError("bad_shape", "expected a JSON object")
        if multi:
            answers = value.get("answers")
            if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
                raise ParseError("bad_shape", "expected answers: a list of strings")
            result = answers if kind == "awareness" else [_chosen(a) for a in answers]
            return json.dumps(result, ensure_ascii=False), value
        key = "decision" if kind == "awareness" else "tool"
        got = value.get(key)
        if not isinstance(got, str) or not got:
            raise ParseError("bad_shape", f"expected {key}: a string")
        return json.dumps(got if kind == "awareness" else _chosen(got), ensure_ascii=False), value
