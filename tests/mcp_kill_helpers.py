"""Scripted models playing agent episodes on an MCP split (``mcp-server-sqlite`` on a copy of the
shop template), for the kill -9 test of evaluation. Each reply is a pure function of the messages.

Run as a script (``python tests/mcp_kill_helpers.py OUT SPLIT DELAY``) it evaluates SPLIT's agent
cases with two trials each, concurrency 2, the models sleeping DELAY seconds per reply.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from episode_helpers import Reply, Scripted, call, say

ITEMS = ("cup", "mug", "lamp", "desk")


def shop_user(messages: list[dict[str, Any]], kw: dict[str, Any]) -> Reply:
    """Asks for the item its goal names (the user model sees its own turns as the assistant's),
    then ends the conversation."""
    if any(m["role"] == "assistant" for m in messages):
        return say("Thanks. finish conversation")
    item = re.search(r"Add a (\w+)", messages[0]["content"])
    return say(f"Please add a {item.group(1) if item else 'thing'} to the shop's items.")


def shop_assistant(messages: list[dict[str, Any]], kw: dict[str, Any]) -> Reply:
    """Inserts the item the user asked for, then says so."""
    if messages[-1]["role"] == "tool":
        return say("Added.")
    asked = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    item = re.search(r"add a (\w+)", asked)
    return call(("write_query", {"query": f"INSERT INTO item (name) VALUES ('{item.group(1) if item else 'x'}')"}))


def play(out: Path, split: Path, delay: float, log: Path | None = None) -> Any:
    from benchsmith.eval import TaskOptions, run_eval

    return run_eval(
        split,
        Scripted(shop_assistant, delay, log=log),
        {"name": "scripted"},
        out,
        tasks=["agent"],
        calling="tools",
        concurrency=2,
        progress=False,
        user_client=Scripted(shop_user, delay, log=log),
        user_model={"name": "scripted-user"},
        options=TaskOptions(calling="tools", trials=2),
    )


if __name__ == "__main__":
    play(Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]))
