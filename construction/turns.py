"""The turn rules of a conversation between a simulated user, an assistant and its tools: who speaks
next, when a budget is spent, and what a simulated user may say. Pure functions over a list of events
(dicts with ``who``: ``user``, ``assistant``, ``tool`` or ``end``; an assistant event's ``calls`` and
``error``; a user event's ``stop``), the shape of ``benchsmith.schemas.EpisodeEvent``.

The dialogues graph (``construct dialogues``, which builds conversations) and evaluation episodes
(``eval run`` on ACEBench's agent data, the sandbox and tau-style tasks, which play them) both follow
these rules, so the two count turns and steps the same way and end a conversation for the same reasons.
"""

from __future__ import annotations

from typing import Any, Iterable, Literal, Sequence

from benchsmith.models import ParseError

Speaker = Literal["user", "assistant", "tool", "end"]
Event = dict[str, Any]


def next_speaker(events: Sequence[Event], solo: bool = False) -> Speaker:
    """Who speaks after ``events``: the user first; the assistant after the user and after the
    tools; the tools after an assistant reply with calls; the user (or, ``solo``, nobody) after a
    reply without calls; the assistant again after a reply it could not make readable; nobody
    after the user stopped or an ``end`` event.

    >>> next_speaker([]), next_speaker([{"who": "user", "text": "hi"}])
    ('user', 'assistant')
    >>> next_speaker([{"who": "assistant", "text": "", "calls": [{"name": "f"}]}])
    'tool'
    >>> next_speaker([{"who": "assistant", "text": "done", "calls": []}], solo=True)
    'end'
    >>> next_speaker([{"who": "user", "text": "thanks", "stop": True}])
    'end'
    """
    if not events:
        return "user"
    last = events[-1]
    who = last["who"]
    if who == "end" or (who == "user" and last.get("stop")):
        return "end"
    if who in ("user", "tool"):
        return "assistant"
    if last.get("error"):  # an unreadable reply: the assistant tries again (it costs a step)
        return "assistant"
    if last.get("calls"):
        return "tool"
    return "end" if solo else "user"


def user_turns(events: Iterable[Event]) -> int:
    """The user's messages so far."""
    return sum(1 for ev in events if ev["who"] == "user")


def steps_since_user(events: Sequence[Event]) -> int:
    """The assistant's replies since the user's last message (readable or not)."""
    n = 0
    for ev in reversed(events):
        if ev["who"] == "user":
            break
        if ev["who"] == "assistant":
            n += 1
    return n


def turn_budget_spent(events: Sequence[Event], max_turns: int) -> bool:
    """The user has sent ``max_turns`` messages: it is still asked (it may say its goal is met), but
    a reply that does not end the conversation ends it by the turn budget instead.

    >>> turn_budget_spent([{"who": "user"}, {"who": "assistant"}], 1)
    True
    """
    return user_turns(events) >= max_turns


def step_budget_spent(events: Sequence[Event], max_steps: int) -> bool:
    """The assistant has replied ``max_steps`` times since the user last spoke: it is not asked again.

    >>> step_budget_spent([{"who": "user"}, {"who": "assistant", "calls": [{"name": "f"}]}, {"who": "tool"}], 1)
    True
    """
    return steps_since_user(events) >= max_steps


def user_message(text: str | None, tool_names: Iterable[str] = ()) -> str:
    """The simulated user's message with its whitespace collapsed; a ``ParseError`` when it broke its
    role: nothing said, speaking as the assistant or the system, or writing a call of a tool.

    >>> user_message("  Please   text Ana. ")
    'Please text Ana.'
    >>> user_message("Assistant: done")
    Traceback (most recent call last):
    ...
    benchsmith.models._private.replies.ParseError: the user simulator spoke as assistant
    """
    message = " ".join((text or "").split())
    if not message:
        raise ParseError("empty_user_message", "the user simulator sent nothing")
    low = message.lower()
    for prefix in ("assistant:", "agent:", "system:"):
        if low.startswith(prefix):
            raise ParseError("user_broke_role", f"the user simulator spoke as {prefix[:-1]}")
    for name in tool_names:
        if name and f"{name}(".lower() in low:
            raise ParseError("user_broke_role", f"the user simulator wrote a call of {name}")
    return message


__all__ = [
    "Event",
    "Speaker",
    "next_speaker",
    "step_budget_spent",
    "steps_since_user",
    "turn_budget_spent",
    "user_message",
    "user_turns",
]
