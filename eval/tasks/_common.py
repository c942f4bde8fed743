"""Pieces the built-in tasks share: call rendering and JSON-schema builders (all pure)."""

from __future__ import annotations

import json
from typing import Any, Iterable

from benchsmith.eval._private.runner import FormatError

THOUGHT = {"type": "string", "maxLength": 300}


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
            raise FormatError("bad_arguments", f"arguments of {c.get('name')!r} are not an object")
        parts.append(f"{c['name']}(" + ", ".join(f"{k}={python_value(v)}" for k, v in args.items()) + ")")
    return "[" + ", ".join(parts) + "]"


def native_tool_calls(tool_calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A client's tool calls as ``[{"name", "arguments"}]``; arguments that are not a JSON object
    are a format error."""
    out = []
    for tc in tool_calls:
        args = tc.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                raise FormatError("bad_arguments", f"arguments of {tc.get('name')!r} are not JSON") from None
        if not isinstance(args, dict):
            raise FormatError("bad_arguments", f"arguments of {tc.get('name')!r} are not an object")
        out.append({"name": str(tc.get("name") or ""), "arguments": args})
    return out


def openai_tool(name: str, description: str, parameters: Any) -> dict[str, Any]:
    """An OpenAI ``tools`` entry; non-standard type names of BFCL / ACEBench schemas are mapped."""
    return {"type": "function", "function": {"name": name, "description": description or "",
                                             "parameters": json_schema_types(parameters or {"type": "object"})}}


_TYPES = {"dict": "object", "float": "number", "int": "integer", "bool": "boolean", "list": "array",
          "tuple": "array", "str": "string", "any": None, "String": "string"}


def json_schema_types(schema: Any) -> Any:
    """Map Python-style type names (dict, float, tuple, any) found in BFCL / ACEBench to JSON Schema.

    >>> json_schema_types({"type": "dict", "properties": {"x": {"type": "float"}, "y": {"type": "any"}}})
    {'type': 'object', 'properties': {'x': {'type': 'number'}, 'y': {}}}
    """
    if isinstance(schema, list):
        return [json_schema_types(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k == "type" and isinstance(v, str) and v in _TYPES:
            if _TYPES[v] is not None:
                out[k] = _TYPES[v]
        elif k in ("properties",) and isinstance(v, dict):
            out[k] = {pk: json_schema_types(pv) for pk, pv in v.items()}
        elif k in ("items", "additionalProperties", "anyOf", "oneOf", "allOf"):
            out[k] = json_schema_types(v)
        else:
            out[k] = v
    return out


def enum_or_string(values: list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": values} if values else {"type": "string"}
