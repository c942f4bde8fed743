"""``dialogue_consistency``: a dialogue sample is a well-formed conversation whose tool calls fit
the sample's tools and its gold trajectory. Samples with a query instead pass (code
``not_applicable``).

Rules, in the order they are checked (the first broken one is the code):

* ``first_not_user``: the first message that is not a system message is from the user;
* ``consecutive_user``: no two user messages follow each other;
* ``unknown_tool`` / ``missing_argument`` / ``unknown_argument`` / ``not_in_enum`` /
  ``wrong_type``: every assistant tool call names one of the sample's tools and its arguments fit
  the tool's parameters (as for ``gold_signature``);
* ``orphan_tool_message``: every tool message answers an earlier, not yet answered assistant call
  (its ``name`` is the call's label or, failing that, the call's tool name; a tool message without a
  name answers the oldest open call);
* ``unanswered_call``: every call is answered before the next user or assistant message;
* ``no_final_answer``: the dialogue ends with an assistant message without tool calls;
* ``gold_mismatch``: when the sample has gold calls (hidden ones aside), they are the dialogue's
  calls in order (same tool and arguments; labels compared when both sides have one).
"""

from __future__ import annotations

from benchsmith.schemas import CheckResult, Sample, ToolCall

from ._engine import check, failed, passed
from .signature import argument_problem

NAME = "dialogue_consistency"


@check(NAME)
def dialogue_consistency(sample: Sample) -> CheckResult:
    dialogue = sample.dialogue
    if dialogue is None:
        return passed(NAME, "not a dialogue sample", "not_applicable")
    first = next((m for m in dialogue if m.role != "system"), None)
    if first is None or first.role != "user":
        return failed(
            NAME,
            "first_not_user",
            "the first non-system message is "
            + (f"from the {first.role}" if first else "missing")
            + ", not from the user",
        )
    tools = {t.name: t for t in sample.tools}
    open_calls: list[ToolCall] = []
    calls: list[ToolCall] = []
    previous = None
    for i, m in enumerate(dialogue, 1):
        if m.role == "user" and previous == "user":
            return failed(NAME, "consecutive_user", f"messages {i - 1} and {i} are both from the user")
        if m.role in ("user", "assistant") and open_calls:
            names = ", ".join(c.label or c.name for c in open_calls)
            return failed(NAME, "unanswered_call", f"message {i} ({m.role}) comes before the result of {names}")
        if m.role == "assistant":
            for call in m.tool_calls:
                tool = tools.get(call.name)
                if tool is None:
                    return failed(
                        NAME, "unknown_tool", f"message {i} calls {call.name!r}, not one of the sample's tools"
                    )
                problem = argument_problem(tool, call.arguments, f"message {i} ({call.name})")
                if problem:
                    return failed(NAME, *problem)
            open_calls.extend(m.tool_calls)
            calls.extend(m.tool_calls)
        elif m.role == "tool":
            match = _answered(open_calls, m.name)
            if match is None:
                what = f"named {m.name!r} " if m.name else ""
                return failed(NAME, "orphan_tool_message", f"tool message {i} {what}answers no open assistant call")
            open_calls.remove(match)
        previous = m.role
    if open_calls:
        names = ", ".join(c.label or c.name for c in open_calls)
        return failed(NAME, "unanswered_call", f"the dialogue ends before the result of {names}")
    last = dialogue[-1]
    if last.role != "assistant" or last.tool_calls:
        return failed(
            NAME,
            "no_final_answer",
            f"the dialogue ends with a {last.role} message"
            + (" that calls tools" if last.tool_calls else "")
            + ", not an assistant answer",
        )
    gold = [s.call for s in sample.gold if s.call is not None and not s.hidden]
    if gold:
        for k, (g, c) in enumerate(zip(gold, calls), 1):
            if g.name != c.name or g.arguments != c.arguments or (g.label and c.label and g.label != c.label):
                return failed(
                    NAME,
                    "gold_mismatch",
                    f"gold call {k} is {g.name}({g.arguments}) but the dialogue's call {k} is {c.name}({c.arguments})",
                )
        if len(gold) != len(calls):
            return failed(NAME, "gold_mismatch", f"{len(gold)} gold call(s) but {len(calls)} in the dialogue")
    return passed(NAME)


def _answered(open_calls: list[ToolCall], name: str | None) -> ToolCall | None:
    if not open_calls:
        return None
    if name is None:
        return open_calls[0]
    return next((c for c in open_calls if c.label == name), None) or next(
        (c for c in open_calls if c.name == name), None
    )
