"""How an episode ended and what that means for the model: the end reasons, the error type of a
failed episode and the summary read back from a prediction. Pure, and light to import: scorers read
these without loading the episode engine (``episode.py``) or the runner.
"""

from __future__ import annotations

from typing import Any

STOP_PHRASE = "finish conversation"
NORMAL_ENDS = ("user_stop", "assistant_done")
USER_FAILURES = ("user_failure",)
BUDGET_ENDS = ("user_turn_budget", "step_budget", "call_budget", "token_budget", "wall_budget")
END_REASONS = NORMAL_ENDS + USER_FAILURES + BUDGET_ENDS
#: sandbox and ACEBench error codes that mean "the call was fine, the world was not ready for it"
PRECONDITION_CODES = frozenset(
    {
        "offline",
        "not_logged_in",
        "device_locked",
        "pin_required",
        "storage_full",
        "insufficient_balance",
        "restaurant_closed",
        "already_done",
        "no_messages",
        "time_in_past",
    }
)


# ---- verdicts on an episode ----------------------------------------------------------------------------
def error_type(
    summary: dict[str, Any], calls: list[dict[str, Any]], gold_calls: list[dict[str, Any]] | None = None
) -> str:
    """Why a failed episode failed, one of ``user_simulator_failure``, ``budget_exhausted``,
    ``wrong_call``, ``wrong_argument``, ``precondition_violated``, ``gave_up`` (pure).

    The end reason decides first (a user failure is never the model's; a cut by any budget, the
    user's turn budget included, is ``budget_exhausted``); then the
    first failed call's code (unknown tool: wrong call; a precondition code: precondition violated;
    anything else: wrong argument); then, with no failed call, the calls against the gold calls
    (a gold tool never called: gave up if the model made fewer calls, else wrong call; all gold
    tools called: wrong argument).

    >>> error_type({"end": "user_stop"}, [{"name": "f", "ok": False, "code": "offline"}])
    'precondition_violated'
    >>> error_type({"end": "user_stop"}, [], [{"name": "f", "arguments": {}}])
    'gave_up'
    """
    end = summary.get("end")
    if end in USER_FAILURES:
        return "user_simulator_failure"
    if end in BUDGET_ENDS:
        return "budget_exhausted"
    failed = [c for c in calls if not c.get("ok")]
    if failed:
        code = failed[0].get("code") or ""
        if code == "unknown_tool":
            return "wrong_call"
        if code in PRECONDITION_CODES:
            return "precondition_violated"
        return "wrong_argument"
    if gold_calls:
        made = [c["name"] for c in calls]
        missing = [g["name"] for g in gold_calls if g.get("name") not in made]
        if missing:
            return "gave_up" if len(calls) < len(gold_calls) else "wrong_call"
        return "wrong_argument"
    return "gave_up" if not calls else "wrong_argument"


def clean_summary(raw: Any) -> dict[str, Any]:
    """An episode summary read from a prediction (untrusted): the end reason when it is a known one
    and the counts that are integers; nothing else (pure).

    >>> clean_summary({"end": ["x"], "user_turns": 2, "tool_calls": "3"})
    {'end': None, 'user_turns': 2}
    """
    raw = raw if isinstance(raw, dict) else {}
    end = raw.get("end")
    out: dict[str, Any] = {"end": end if isinstance(end, str) and end in END_REASONS else None}
    for k in ("user_turns", "tool_calls", "failed_calls", "format_errors"):
        v = raw.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            out[k] = v
    return out
