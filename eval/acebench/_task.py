"""ACEBench single-turn function calling (normal and special categories) with the standard,
condensed or minimal prompt variant.

``tools`` mode sends the functions as native tools: tool calls are rendered as ACEBench's
``[f(a=1)]`` string, a text reply is kept as it is (ACEBench's own convention for special cases).
``prompt`` mode asks for a JSON decision (call / missing_parameters / incorrect_value /
cannot_solve) under a JSON schema and renders it to the phrases ACEBench's checker looks for.
Agent categories run as episodes (``_episode.py``): a simulated user, the sandbox, budgets.
"""

from __future__ import annotations

from typing import Any

from benchsmith.eval import EvalCase, SingleCallTask, task
from benchsmith.eval.calls import native_tool_calls, python_calls
from benchsmith.eval.episodes import Episode, EpisodeSpec, EpisodeTask
from benchsmith.eval.tasks import CallContext, Outcome, Request, shallow_reply
from benchsmith.models import ParseError, call_schema, enum_or_string, openai_tool, read_json_reply
from benchsmith.prompts import get_prompt

from . import _episode
from ._derive import derive_acebench_special
from ._plugin import AceBench

DECISIONS = ["call", "missing_parameters", "incorrect_value", "cannot_solve"]
VARIANTS = ("standard", "condensed", "minimal")


def render_decision(value: dict[str, Any]) -> str:
    """ACEBench's expected output for a JSON decision.

    >>> render_decision({"decision": "missing_parameters", "api": "book", "parameters": ["date", "city"]})
    'Missing necessary parameters (date, city) for the api (book)'
    >>> render_decision({"decision": "call", "calls": [{"name": "f", "arguments": {"x": 1}}]})
    '[f(x=1)]'
    """
    decision = value.get("decision")
    params = ", ".join(str(p) for p in value.get("parameters") or [])
    if decision == "call":
        calls = value.get("calls")
        if not isinstance(calls, list) or not calls:
            raise ParseError("no_calls", "decision is call but no call was given")
        for c in calls:
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                raise ParseError("bad_shape", "a call needs a name and arguments")
        return python_calls(calls)
    if decision == "missing_parameters":
        return f"Missing necessary parameters ({params}) for the api ({value.get('api') or ''})"
    if decision == "incorrect_value":
        values = ", ".join(str(v) for v in value.get("values") or [])
        return f"There is incorrect value ({values}) for the parameters ({params}) in the conversation history."
    if decision == "cannot_solve":
        return "Due to the limitations of the function, I cannot solve this problem."
    raise ParseError("bad_decision", f"unknown decision {decision!r}")


@task(AceBench)
class ACEBenchTask(EpisodeTask, SingleCallTask):
    description = "ACEBench: normal and special function calling (one call), agent categories as episodes"

    def is_episode(self, case: EvalCase) -> bool:
        return case.category.startswith("agent")

    def episode_spec(self, case: EvalCase) -> EpisodeSpec:
        return _episode.episode_spec(case)

    def prediction(self, case: EvalCase, episode: Episode) -> str:
        return _episode.prediction(case, episode)

    async def solve_single(self, case: EvalCase, ctx: CallContext) -> Outcome:
        return await SingleCallTask.solve(self, case, ctx)

    def _template(self) -> Any:
        variant = self.options.variant if self.options.variant in VARIANTS else "standard"
        return get_prompt(f"acebench/{variant}")

    def prompt_version(self) -> str:
        return f"{self._template().version}-{self.options.calling}+{EpisodeTask.prompt_version(self)}"

    def request(self, case: EvalCase) -> Request:
        inp = case.input
        functions = inp.get("function") or []
        if self.options.calling == "tools":
            msgs = self._template().render(
                functions=[],
                columns="",
                native_tools=True,
                time=inp.get("time"),
                profile=inp.get("profile"),
                question=inp.get("question", ""),
            )
            tools = [openai_tool(f.get("name", ""), f.get("description", ""), f.get("parameters")) for f in functions]
            return Request(msgs, tools=tools, max_tokens=self.options.max_tokens)
        names = [str(f.get("name")) for f in functions if f.get("name")]
        schema = {
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": DECISIONS},
                "calls": {"type": "array", "maxItems": 6, "items": call_schema(functions)},
                "api": enum_or_string([*names, ""]) if names else {"type": "string"},
                "parameters": {"type": "array", "maxItems": 6, "items": {"type": "string", "maxLength": 64}},
                "values": {"type": "array", "maxItems": 6, "items": {"type": "string", "maxLength": 120}},
            },
            "required": ["decision", "calls", "api", "parameters", "values"],
        }
        # the column list said once after the functions: the functions' text is then the same for every
        # case of a split, a prefix the server reuses from one case to the next
        from benchsmith.construction.nl2api import hoist_columns  # the NL2API stack loads for a run, not for scoring

        columns, shown = hoist_columns(functions)
        msgs = self._template().render(
            functions=shown,
            columns=columns,
            native_tools=False,
            time=inp.get("time"),
            profile=inp.get("profile"),
            question=inp.get("question", ""),
        )
        return Request(msgs, json_schema=schema, max_tokens=self.options.max_tokens)

    def parse(self, case: EvalCase, text: str, tool_calls: list[dict[str, Any]]) -> tuple[Any, Any]:
        if self.options.calling == "tools":
            if tool_calls:
                calls = native_tool_calls(tool_calls)
                return python_calls(calls), calls
            if not text.strip():
                raise ParseError("empty_reply", "no tool call and no text")
            return text, None
        value = shallow_reply(read_json_reply(text))  # rendered as Python calls below: MAX_DEPTH
        if not isinstance(value, dict):
            raise ParseError("bad_shape", "expected a JSON object")
        return render_decision(value), value


@task(AceBench, name="acebench_special")
class ACEBenchSpecialTask(ACEBenchTask):
    """The same task on ACEBench special cases derived from a split (``benchsmith eval derive``)."""

    deriver = staticmethod(derive_acebench_special)

    description = "ACEBench special variants derived from a split"

    def prompt_version(self) -> str:
        return f"{self._template().version}-{self.options.calling}"
