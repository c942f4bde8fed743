"""A benchsmith split written in ACEBench's own layout (``benchsmith eval export --format acebench``;
docs/eval/export.md)."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

from benchsmith.eval._private.export import (
    _load_split, _prepare, _python_syntax, _Report, _sid, _Skip, _with_notes, _write_with_answers, schema_dialect,
)
from benchsmith.schemas import Tool, ToolCall

acebench_schema = schema_dialect(
    {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean", "array": "array",
     "object": "object", "null": "any"}, "any", "object",
    "A JSON-Schema property in ACEBench's dialect (JSON Schema; unions become ``any``).")


def acebench_function(tool: Tool) -> dict[str, Any]:
    """A tool in ACEBench's layout; a tool without parameters gets ``"parameters": {}`` (the only
    form ACEBench's official checker accepts for a call without arguments)."""
    params = tool.parameters
    if not params.properties:
        return {"name": tool.name, "description": tool.description, "parameters": {}}
    return {"name": tool.name, "description": tool.description,
            "parameters": {"type": "object",
                           "properties": {k: acebench_schema(v) for k, v in params.properties.items()},
                           "required": list(params.required)}}


def acebench_order(tools: list[Tool]) -> list[Tool]:
    """The tools, stably reordered so that a name containing another tool's name comes first
    (ACEBench's official checker takes the first function whose name is a substring of the
    answer key).

    >>> [t.name for t in acebench_order([Tool(name=n, description="d") for n in ("get", "get_all", "put")])]
    ['get_all', 'get', 'put']
    """
    names = [t.name for t in tools]
    inside = {n: sum(1 for m in names if m != n and m in n) for n in names}
    return sorted(tools, key=lambda t: -inside[t.name])


def acebench_answer(calls: list[ToolCall], tool_names: set[str]) -> dict[str, dict[str, Any]]:
    """``{key: arguments}`` in call order; a tool called n > 1 times gets keys ``<name>_1`` ..
    ``<name>_n`` (ACEBench's convention). Raises ``_Skip`` if such a key is a tool name."""
    counts = Counter(c.name for c in calls)
    seen: Counter[str] = Counter()
    out: dict[str, dict[str, Any]] = {}
    for c in calls:
        if counts[c.name] == 1:
            key = c.name
        else:
            seen[c.name] += 1
            key = f"{c.name}_{seen[c.name]}"
            if key in tool_names or key in counts:
                raise _Skip("ambiguous_duplicate_name", f"answer key {key!r} is also a tool name")
        out[key] = copy.deepcopy(c.arguments)
    return out


def export_acebench(split_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write ``data_<category>.json`` + ``possible_answer/`` (ACEBench normal family).

    One call: ``normal_single_turn_single_function``; several (chains included, outputs passed
    as ``$call_K$``): ``normal_single_turn_parallel_function``."""
    split, samples = _load_split(split_dir)
    out = Path(out_dir)
    rep = _Report("acebench", split, len(samples))
    by_cat: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for i, sample in enumerate(samples):
        try:
            p = _prepare(sample, i)
            _python_syntax(p.calls)
            cat = "normal_single_turn_single_function" if len(p.calls) == 1 else "normal_single_turn_parallel_function"
            gold = acebench_answer(p.calls, set(p.tools))
            rid = f"{cat}_{len(by_cat.get(cat, []))}"
            msgs = _with_notes(p, positional=True)
            # ACEBench reads "system:" lines as the assistant's replies: system text joins the first user line
            system = "\n".join(m["content"] for m in msgs if m["role"] == "system")
            users = [m["content"] for m in msgs if m["role"] == "user"]
            if system:
                users[0] = f"{system}\n{users[0]}"
            question = "\n".join(f"user: {u}" for u in users)
            record = {"id": rid, "question": question + "\n",
                      "function": [acebench_function(t) for t in acebench_order(p.sample.tools)]}
            by_cat.setdefault(cat, []).append((record, {"id": rid, "ground_truth": gold}))
            rep.records[cat] += 1
            rep.id_map[rid] = p.sid
        except _Skip as exc:
            rep.skip(_sid(sample, i), exc)
    return rep.done(out, _write_with_answers(out, by_cat, "data_"))
