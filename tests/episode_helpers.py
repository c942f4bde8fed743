"""Scripted models for episode tests: each reply is a pure function of the request's messages.

Run as a script (``python tests/episode_helpers.py OUT N``) it plays the packaged sandbox scenarios
with slow scripted models (``N`` cases, concurrency 2), for the kill -9 test.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0


def say(text: str, **usage: int) -> Reply:
    return Reply(text=text, usage=dict(usage))


def call(*calls: tuple[str, dict[str, Any]], **usage: int) -> Reply:
    return Reply(
        tool_calls=[{"id": f"x{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)], usage=dict(usage)
    )


class Scripted:
    """A chat client whose reply is ``fn(messages, kwargs)``; counts its calls; may sleep or fail."""

    def __init__(
        self,
        fn: Callable[[list[dict[str, Any]], dict[str, Any]], Reply],
        delay: float = 0.0,
        fail_on: set[int] | None = None,
        log: Path | None = None,
    ) -> None:
        self.fn, self.delay, self.fail_on, self.log = fn, delay, fail_on or set(), log
        self.calls = 0
        self.requests: list[dict[str, Any]] = []

    async def acomplete(self, messages: list[dict[str, Any]], **kw: Any) -> Reply:
        self.calls += 1
        self.requests.append({"messages": messages, **kw})
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.calls in self.fail_on:
            raise ConnectionError("scripted endpoint down")
        reply = self.fn(messages, kw)
        if self.log is not None:
            with self.log.open("a") as fh:
                fh.write("x\n")
        return reply


def tool_messages_since_user(messages: list[dict[str, Any]]) -> int:
    n = 0
    for m in reversed(messages):
        if m["role"] == "user":
            break
        if m["role"] == "tool":
            n += 1
    return n


def busy_assistant(messages: list[dict[str, Any]], kw: dict[str, Any]) -> Reply:
    """Calls the first tool twice after each user message (native tools mode), then talks."""
    if tool_messages_since_user(messages) < 2:
        first = kw["tools"][0]["function"]["name"]
        return call((first, {}))
    return say("Done. Anything else?")


def chatty_user(messages: list[dict[str, Any]], kw: dict[str, Any]) -> Reply:
    """Asks twice, then stops."""
    own = sum(1 for m in messages if m["role"] == "assistant")
    return say(["Hi, I need help.", "One more thing, please.", "finish conversation"][min(own, 2)])


def play(out: Path, n: int, delay: float, log: Path | None = None) -> Any:
    from benchsmith.eval import run_eval

    return run_eval(
        "sandbox",
        Scripted(busy_assistant, delay, log=log),
        {"name": "scripted"},
        out,
        tasks=["agent"],
        calling="tools",
        concurrency=2,
        limit=n,
        progress=False,
        user_client=Scripted(chatty_user, delay, log=log),
        user_model={"name": "scripted-user"},
    )


if __name__ == "__main__":
    play(Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
    time.sleep(0)
