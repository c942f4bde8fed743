"""Prompt views of tools shared by the graphs (pure)."""

from __future__ import annotations

import random
import re
from typing import Any

from benchsmith.schemas import ToolCall


def tool_view(tools: list[dict[str, Any]], rng: random.Random | None = None) -> tuple[str, list[dict[str, Any]]]:
    """(column list, compact tool docs), the tools shuffled by ``rng`` when given (T-Eval shuffles
    the docs so that position carries no hint)."""
    from benchsmith.eval.tasks.nl2api import compact_tools

    tools = [t for t in tools if not t.get("hidden")]
    if rng is not None:
        tools = list(tools)
        rng.shuffle(tools)
    return compact_tools(tools)


def setup_text(setup: list[dict[str, Any]]) -> str:
    from benchsmith.eval._private.derive import setup_note

    return setup_note([ToolCall.model_validate(c) for c in setup or []])


def names_tool(text: str, tools: list[dict[str, Any]]) -> str | None:
    """The first tool name written in ``text`` (case-insensitive, whole words; names of three
    characters or fewer are ignored), else None."""
    low = text.lower()
    for t in tools:
        name = str(t.get("name", ""))
        if len(name) > 3 and re.search(rf"(?<![a-z0-9_]){re.escape(name.lower())}(?![a-z0-9_])", low):
            return name
    return None
