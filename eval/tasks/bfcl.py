"""BFCL single-turn AST categories and relevance / irrelevance: one call per case.

``tools`` mode uses native tool calling; ``prompt`` mode a JSON list of calls under a schema.
Either way the calls are rendered as BFCL's ``[f(a=1)]`` string; no call gives an empty string
(what BFCL's irrelevance check expects).
"""

from __future__ import annotations

from typing import Any

from benchsmith.eval import EvalCase
from benchsmith.eval._private.runner import FormatError, Request, SingleCallTask, read_json_reply, task
from benchsmith.prompts import get_prompt

from ._common import call_schema, chat_messages, native_tool_calls, openai_tool, python_calls


def _conversation(case: EvalCase) -> list[dict[str, str]]:
    q = case.input.get("question") or []
    turn = q[0] if q and isinstance(q[0], list) else q
    return chat_messages([m for m in turn if isinstance(m, dict)])


@task("bfcl")
class BFCLTask(SingleCallTask):
    benchmark = "bfcl"
    description = "BFCL AST categories and relevance / irrelevance"

    def prompt_version(self) -> str:
        return f"{get_prompt('bfcl/function_call').version}-{self.options.mode}"

    def request(self, case: EvalCase) -> Request:
        functions = case.input.get("functions") or []
        conv = _conversation(case)
        if self.options.mode == "tools":
            msgs = get_prompt("bfcl/function_call").render(functions=[], native_tools=True, conversation=conv)
            tools = [openai_tool(f.get("name", "").replace(".", "_"), f.get("description", ""), f.get("parameters"))
                     for f in functions]
            return Request(msgs, tools=tools, max_tokens=self.options.max_tokens)
        schema = {"type": "object", "properties": {"calls": {"type": "array", "maxItems": 6, "items": call_schema(functions)}},
                  "required": ["calls"]}
        msgs = get_prompt("bfcl/function_call").render(functions=functions, native_tools=False, conversation=conv)
        return Request(msgs, json_schema=schema, max_tokens=self.options.max_tokens)

    def parse(self, case: EvalCase, text: str, tool_calls: list[dict[str, Any]]) -> tuple[Any, Any]:
        if self.options.mode == "tools":
            dotted = {f.get("name", "").replace(".", "_"): f.get("name", "") for f in case.input.get("functions") or []}
            calls = native_tool_calls(tool_calls)
            for c in calls:
                c["name"] = dotted.get(c["name"], c["name"])
            return (python_calls(calls) if calls else ""), calls
        value = read_json_reply(text)
        calls = value.get("calls") if isinstance(value, dict) else None
        if not isinstance(calls, list):
            raise FormatError("bad_shape", "expected {\"calls\": [...]}")
        for c in calls:
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                raise FormatError("bad_shape", "a call needs a name and arguments")
        return (python_calls(calls) if calls else ""), value
