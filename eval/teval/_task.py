"""T-Eval: the benchmark's own prompt per case (``origin_prompt``), one model call per case.

In ``prompt`` mode (weak or local models) the json-format abilities are decoded under a JSON
schema of the shape T-Eval's prompt asks for; in ``tools`` mode the reply is free text, as in
T-Eval's own runner. reason/retrieve/understand json cases share one prompt, hence one call.
"""

from __future__ import annotations

from typing import Any

from benchsmith.eval import EvalCase, SingleCallTask, task
from benchsmith.eval.calls import THOUGHT, chat_messages
from benchsmith.eval.tasks import Request, shallow_reply
from benchsmith.models import ParseError, read_json_reply

from ._derive import derive_teval_seeded
from ._plugin import TEval

_STEP = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "args": {"type": "object"}, "thought": THOUGHT},
    "required": ["name", "args", "thought"],
}
SCHEMAS: dict[str, dict[str, Any]] = {
    "instruct": _STEP,
    "reason": _STEP,
    "retrieve": _STEP,
    "understand": _STEP,
    "plan": {
        "type": "array",
        "minItems": 1,
        "maxItems": 8,
        "items": {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "args": {"type": "object"}},
            "required": ["id", "name", "args"],
        },
    },
    "review": {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "enum": ["A", "B", "C", "D", "E"]},
            "is_finished": {"type": "boolean"},
        },
        "required": ["answer", "is_finished"],
    },
}
VERSION = "teval/origin@v2"


@task(TEval)
class TEvalTask(SingleCallTask):
    deriver = staticmethod(derive_teval_seeded)
    min_cases = 12  # one case per category: the overall needs both formats of every ability
    description = "T-Eval's six abilities, json and str formats, from the benchmark's own prompts"

    def prompt_version(self) -> str:
        return f"{VERSION}-{self.options.calling}"

    def request(self, case: EvalCase) -> Request:
        messages = chat_messages(case.input["origin_prompt"])
        ability, fmt = case.meta.get("ability"), case.meta.get("format")
        schema = SCHEMAS.get(ability or "") if fmt == "json" and self.options.calling == "prompt" else None
        return Request(messages, json_schema=schema, max_tokens=self.options.max_tokens)

    def parse(self, case: EvalCase, text: str, tool_calls: list[dict[str, Any]]) -> tuple[Any, Any]:
        if not text.strip():
            raise ParseError("empty_reply", "the model returned an empty reply")
        if case.meta.get("format") == "json":
            return text, shallow_reply(read_json_reply(text))
        return text, None
