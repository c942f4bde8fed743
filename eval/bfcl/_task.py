"""BFCL single-turn AST categories and relevance / irrelevance: one call per case.

``prompt`` mode asks for a JSON list of calls under a schema and renders them as BFCL's
prompt-format text ``[f(a=1)]`` (no call: the empty string, what BFCL's irrelevance check
expects). ``tools`` mode uses native tool calling and keeps the calls as an FC model's BFCL
result: ``[{name: arguments as JSON text}]`` with the names the model called (a function's "."
is "_" in the tools it is given), or the reply's text when it made no call. Each case records
the format in ``meta["format"]``, so ``eval score --run`` decodes it with the right decoder.
"""

from __future__ import annotations

import json
from typing import Any

from benchsmith.eval import EvalCase, SingleCallTask, task
from benchsmith.eval.calls import chat_messages, native_tool_calls, python_calls
from benchsmith.eval.tasks import Request, shallow_reply
from benchsmith.models import ParseError, call_schema, openai_tool, read_json_reply
from benchsmith.prompts import get_prompt

from ._plugin import BFCL


def _conversation(case: EvalCase) -> list[dict[str, str]]:
    q = case.input.get("question") or []
    turn = q[0] if q and isinstance(q[0], list) else q
    return chat_messages([m for m in turn if isinstance(m, dict)])


def fc_result(text: str, tool_calls: list[dict[str, Any]]) -> Any:
    """An FC model's BFCL result: ``[{name: arguments JSON text}]``, or the text without calls.

    >>> fc_result("", [{"id": "1", "name": "math_factorial", "arguments": {"number": 5}}])
    [{'math_factorial': '{"number": 5}'}]
    >>> fc_result("no tool fits", [])
    'no tool fits'
    """
    if not tool_calls:
        return text
    return [
        {
            str(tc.get("name") or ""): tc["arguments"]
            if isinstance(tc.get("arguments"), str)
            else json.dumps(tc.get("arguments") or {}, ensure_ascii=False)
        }
        for tc in tool_calls
    ]


@task(BFCL)
class BFCLTask(SingleCallTask):
    description = "BFCL AST categories and relevance / irrelevance"

    @property
    def output_format(self) -> str:
        return "fc" if self.options.calling == "tools" else "prompt"

    def prompt_version(self) -> str:
        # tools mode stores FC results since v-tools-fc (earlier tools runs hold prompt-format text)
        suffix = "tools-fc" if self.options.calling == "tools" else self.options.calling
        return f"{get_prompt('bfcl/function_call').version}-{suffix}"

    def load(self) -> list[EvalCase]:
        return [c.model_copy(update={"meta": {**c.meta, "format": self.output_format}}) for c in super().load()]

    def request(self, case: EvalCase) -> Request:
        functions = case.input.get("functions") or []
        conv = _conversation(case)
        if self.options.calling == "tools":
            msgs = get_prompt("bfcl/function_call").render(functions=[], native_tools=True, conversation=conv)
            tools = [
                openai_tool(f.get("name", "").replace(".", "_"), f.get("description", ""), f.get("parameters"))
                for f in functions
            ]
            return Request(msgs, tools=tools, max_tokens=self.options.max_tokens)
        schema = {
            "type": "object",
            "properties": {"calls": {"type": "array", "maxItems": 6, "items": call_schema(functions)}},
            "required": ["calls"],
        }
        msgs = get_prompt("bfcl/function_call").render(functions=functions, native_tools=False, conversation=conv)
        return Request(msgs, json_schema=schema, max_tokens=self.options.max_tokens)

    def parse(self, case: EvalCase, text: str, tool_calls: list[dict[str, Any]]) -> tuple[Any, Any]:
        if self.options.calling == "tools":
            # the result is what BFCL stores for an FC model; the scorer's FC decoder judges it
            try:
                parsed: Any = native_tool_calls(tool_calls)
            except ParseError:
                parsed = None
            return fc_result(text, tool_calls), parsed
        value = shallow_reply(read_json_reply(text))  # rendered as Python calls below: MAX_DEPTH
        calls = value.get("calls") if isinstance(value, dict) else None
        if not isinstance(calls, list):
            raise ParseError("bad_shape", 'expected {"calls": [...]}')
        for c in calls:
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                raise ParseError("bad_shape", "a call needs a name and arguments")
        return (python_calls(calls) if calls else ""), value
