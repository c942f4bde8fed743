"""Pieces the benchmarks' run tasks share: call rendering (all pure); the JSON-schema builders live
in :mod:`benchsmith.models`."""

from __future__ import annotations

from typing import Any, Iterable

from benchsmith.eval._private.depth import shallow_reply
from benchsmith.models import THOUGHT_SCHEMA, ParseError
from benchsmith.schemas import loads_json

THOUGHT = THOUGHT_SCHEMA


def python_value(value: Any) -> str:
    """A JSON value as a Python literal (what BFCL and ACEBench expect inside calls).

    >>> python_value({"a": [1, True, None, "x"]})
    "{'a': [1, True, None, 'x']}"
    """
    return repr(value)


def python_calls(calls: Iterable[dict[str, Any]]) -> str:
    """``[f(a=1, b='x'), g()]`` from ``[{"name", "arguments"}]``.

    >>> python_calls([{"name": "spotify.play", "arguments": {"artist": "Taylor Swift", "duration": 20}}])
    "[spotify.play(artist='Taylor Swift', duration=20)]"
    """
    parts = []
    for c in calls:
        args = c.get("arguments") or {}
        if not isinstance(args, dict):
            raise ParseError("bad_arguments", f"arguments of {c.get('name')!r} are not an object")
        shallow_reply(args, f"the arguments of {c.get('name')!r}")  # repr recurses
        parts.append(f"{c['name']}(" + ", ".join(f"{k}={python_value(v)}" for k, v in args.items()) + ")")
    return "[" + ", ".join(parts) + "]"


def native_tool_calls(tool_calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A client's tool calls as ``[{"name", "arguments"}]``; arguments that are not a JSON object
    (or nest deeper than :data:`~benchsmith.eval.budget.MAX_DEPTH`: ``too_deep``) are a format error."""
    out = []
    for tc in tool_calls:
        args = tc.get("arguments")
        if isinstance(args, str):
            try:
                args = loads_json(args) if args.strip() else {}
            except ValueError:  # JSONDecodeError: also a 4,300+-digit number or nesting past the recursion limit
                raise ParseError("bad_arguments", f"arguments of {tc.get('name')!r} are not JSON") from None
        if not isinstance(args, dict):
            raise ParseError("bad_arguments", f"arguments of {tc.get('name')!r} are not an object")
        shallow_reply(args, f"the arguments of {tc.get('name')!r}")
        out.append({"name": str(tc.get("name") or ""), "arguments": args})
    return out


def chat_messages(prompt: list[dict[str, Any]]) -> list[dict[str, str]]:
    """A benchmark's prompt turns as chat messages: ``function`` / ``tool`` turns (tool responses
    without a call id, as T-Eval writes them) become user turns that say so; other unknown roles
    become user turns too.

    >>> chat_messages([{"role": "user", "content": "q"}, {"role": "function", "content": "42"}])
    [{'role': 'user', 'content': 'q'}, {'role': 'user', 'content': 'Response: 42'}]
    """
    out = []
    for m in prompt:
        role, content = m.get("role") or "user", m.get("content") or ""
        if role in ("function", "tool"):
            out.append({"role": "user", "content": f"Response: {content}"})
        elif role in ("system", "user", "assistant"):
            out.append({"role": role, "content": content})
        else:
            out.append({"role": "user", "content": f"{role}: {content}"})
    return out
