"""JSON-schema builders for constrained decoding and tool lists (all pure): OpenAI ``tools``
entries, Python-style type names mapped to JSON Schema, one-call schemas, bounded strings,
closed objects and reference choices. Used by the evaluator's tasks and construction's nodes."""

from __future__ import annotations

from typing import Any

# a model's thought before a call: short, so a rambling one cannot cost the step
THOUGHT_SCHEMA = {"type": "string", "maxLength": 120}


def openai_tool(name: str, description: str, parameters: Any) -> dict[str, Any]:
    """An OpenAI ``tools`` entry; non-standard type names of BFCL / ACEBench schemas are mapped."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description or "",
            "parameters": json_schema_types(parameters or {"type": "object"}),
        },
    }


_TYPES = {
    "dict": "object",
    "float": "number",
    "int": "integer",
    "bool": "boolean",
    "list": "array",
    "tuple": "array",
    "str": "string",
    "any": None,
    "String": "string",
}


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


def call_schema(functions: list[dict[str, Any]], parameters_key: str = "parameters") -> dict[str, Any]:
    """One call ``{"name", "arguments"}``: an ``anyOf`` branch per function, its arguments decoded
    under that function's own parameter schema (Python-style type names mapped).

    >>> call_schema([{"name": "f", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}}}])["anyOf"][0]
    {'type': 'object', 'properties': {'name': {'const': 'f'}, 'arguments': {'type': 'object', 'properties': {'x': {'type': 'number'}}}}, 'required': ['name', 'arguments']}
    """
    branches = []
    for f in functions:
        if not f.get("name"):
            continue
        params = json_schema_types(f.get(parameters_key) or {"type": "object"})
        if not isinstance(params, dict) or params.get("type") not in (None, "object"):
            params = {"type": "object"}
        branches.append(
            {
                "type": "object",
                "properties": {"name": {"const": f["name"]}, "arguments": params},
                "required": ["name", "arguments"],
            }
        )
    if not branches:
        return {
            "type": "object",
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["name", "arguments"],
        }
    return {"anyOf": branches}


def enum_or_string(values: list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": values} if values else {"type": "string"}


MAX_STRING = 200


def bounded_strings(schema: Any, limit: int = MAX_STRING) -> Any:
    """``maxLength`` on every free string (no enum, const, pattern or length of its own), so a
    weak model cannot spend its whole budget inside one string.

    >>> bounded_strings({"type": "object", "properties": {"a": {"type": "string"}, "b": {"enum": ["x"]}}})
    {'type': 'object', 'properties': {'a': {'type': 'string', 'maxLength': 200}, 'b': {'enum': ['x']}}}
    """
    if isinstance(schema, list):
        return [bounded_strings(s, limit) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k == "properties" and isinstance(v, dict):
            out[k] = {pk: bounded_strings(pv, limit) for pk, pv in v.items()}
        elif k in ("items", "anyOf", "oneOf", "allOf", "additionalProperties"):
            out[k] = bounded_strings(v, limit)
        else:
            out[k] = v
    t = schema.get("type")
    is_string = t == "string" or (isinstance(t, list) and "string" in t)
    if is_string and not any(k in schema for k in ("enum", "const", "pattern", "maxLength", "format")):
        out["maxLength"] = limit
    return out


def reference_choices(schema: Any, labels: list[str]) -> Any:
    """String parameters documented as taking an earlier output (``$label$`` in their description)
    may only take one of the labels that exist so far.

    >>> reference_choices({"type": "object", "properties": {"d": {"type": "string", "description": "written as $label$"}}}, ["$a$"])
    {'type': 'object', 'properties': {'d': {'type': 'string', 'description': 'written as $label$', 'enum': ['$a$']}}}
    """
    if isinstance(schema, list):
        return [reference_choices(s, labels) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: (reference_choices(v, labels) if k in ("items", "anyOf", "oneOf", "allOf") else v) for k, v in schema.items()
    }
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: reference_choices(v, labels) for k, v in schema["properties"].items()}
    if (
        schema.get("type") == "string"
        and "$label$" in str(schema.get("description", ""))
        and labels
        and "enum" not in schema
    ):
        out["enum"] = list(labels)
    return out


def closed_schema(schema: Any) -> Any:
    """``additionalProperties: false`` on every object schema that lists its properties (and says
    nothing about extra ones), so constrained decoding cannot wander into invented keys.

    >>> closed_schema({"type": "object", "properties": {"a": {"type": "object"}}})
    {'type': 'object', 'properties': {'a': {'type': 'object'}}, 'additionalProperties': False}
    """
    if isinstance(schema, list):
        return [closed_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: (closed_schema(v) if k in ("items", "anyOf", "oneOf", "allOf", "additionalProperties") else v)
        for k, v in schema.items()
    }
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: closed_schema(v) for k, v in schema["properties"].items()}
        out.setdefault("additionalProperties", False)
    return out
