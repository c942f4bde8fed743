"""A benchsmith split written in BFCL's own layout (``benchsmith eval export --to bfcl``;
docs/eval/export.md).

>>> bfcl_schema({"type": ["string", "integer"], "description": "A value."})
{'type': 'any', 'description': 'A value. (accepts: string | integer)'}
>>> bfcl_schema({"type": "array", "items": {"type": "object", "properties": {"n": {"type": "number"}}}})
{'type': 'array', 'items': {'type': 'dict', 'properties': {'n': {'type': 'float'}}}}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchsmith.eval.export import (
    CategoryFiles,
    ExportReport,
    SkipSample,
    check_python_syntax,
    export_with_answers,
    messages_with_notes,
    prepare_sample,
    sample_id,
    schema_dialect,
)
from benchsmith.schemas import Sample, Tool, ToolCall

bfcl_schema = schema_dialect(
    {
        "string": "string",
        "integer": "integer",
        "number": "float",
        "boolean": "boolean",
        "array": "array",
        "object": "dict",
        "null": "any",
    },
    "any",
    "dict",
    "A JSON-Schema property in BFCL's dialect (``dict``, ``float``, ``any``).",
)


def bfcl_function(tool: Tool) -> dict[str, Any]:
    params = tool.parameters
    return {
        "name": tool.name,
        "description": tool.description,
        "parameters": {
            "type": "dict",
            "properties": {k: bfcl_schema(v) for k, v in params.properties.items()},
            "required": list(params.required),
        },
    }


def _bfcl_allowed(value: Any, schema: dict[str, Any]) -> list[Any]:
    """BFCL's allowed-value list for a gold value: a dict (or a list of dicts) is written in the
    nested ``{key: [allowed...]}`` form its checker expects; anything else as ``[value]``."""
    t = schema.get("type")
    if t == "dict" and isinstance(value, dict):
        return [_bfcl_dict(value, schema)]
    given = schema.get("items")
    items = given if isinstance(given, dict) else {}
    if (
        t in ("array", "tuple")
        and items.get("type") == "dict"
        and isinstance(value, list)
        and all(isinstance(v, dict) for v in value)
    ):
        return [[_bfcl_dict(v, items) for v in value]]
    return [value]


def _bfcl_omitted(schema: dict[str, Any]) -> list[Any]:
    return ["", schema["default"]] if "default" in schema and schema["default"] not in ("", None) else [""]


def _bfcl_dict(value: dict[str, Any], schema: dict[str, Any]) -> dict[str, list[Any]]:
    given = schema.get("properties")
    props = given if isinstance(given, dict) else {}
    required = set(schema.get("required") or [])
    out = {k: [v] for k, v in value.items()}
    for k, prop in props.items():
        if k not in value and k not in required:
            out[k] = _bfcl_omitted(prop if isinstance(prop, dict) else {})
    return out


def _has_empty_string(value: Any, depth: int = 0) -> bool:
    if value == "" and isinstance(value, str):
        return True
    if depth < 2 and isinstance(value, dict):
        return any(_has_empty_string(v, depth + 1) for v in value.values())
    if depth < 2 and isinstance(value, list):
        return any(isinstance(v, dict) and _has_empty_string(v, depth + 1) for v in value)
    return False


def bfcl_answer(call: ToolCall, function: dict[str, Any]) -> dict[str, dict[str, list[Any]]]:
    """``{name: {param: [allowed values]}}``: the gold value for each passed argument, ``""``
    (plus the schema's default, if any) for each optional parameter the gold call omits."""
    params = function["parameters"]
    props, required = params["properties"], set(params["required"])
    allowed = {k: _bfcl_allowed(v, props.get(k, {})) for k, v in call.arguments.items()}
    for k, prop in props.items():
        if k not in call.arguments and k not in required:
            allowed[k] = _bfcl_omitted(prop)
    return {call.name: allowed}


def export_bfcl(split_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Write ``BFCL_v4_<category>.json`` + ``possible_answer/`` (BFCL v4 AST layout).

    One call: ``simple_python`` (one tool offered) or ``multiple``; several independent calls:
    ``parallel`` (one tool offered) or ``parallel_multiple``; chains are skipped
    (``multi_step_chain``). Streams: one sample at a time, each record appended to its
    category's files."""
    return export_with_answers("bfcl", "BFCL_v4_", split_dir, out_dir, _export_sample)


def _export_sample(i: int, sample: Sample, by_cat: CategoryFiles, rep: ExportReport) -> None:
    try:
        p = prepare_sample(sample, i)
        if p.chained:
            raise SkipSample("multi_step_chain", f"{len(p.calls)} calls, later ones use earlier outputs")
        check_python_syntax(p.calls)
        if any(_has_empty_string(c.arguments) for c in p.calls):
            raise SkipSample("empty_string_value")
        single_tool = len(p.sample.tools) == 1
        if len(p.calls) == 1:
            cat = "simple_python" if single_tool else "multiple"
        else:
            cat = "parallel" if single_tool else "parallel_multiple"
        functions = [bfcl_function(t) for t in p.sample.tools]
        fn_of = {f["name"]: f for f in functions}
        rid = f"{cat}_{by_cat.count(cat)}"
        record = {"id": rid, "question": [messages_with_notes(p, positional=False)], "function": functions}
        answer = {"id": rid, "ground_truth": [bfcl_answer(c, fn_of[c.name]) for c in p.calls]}
        by_cat.add(cat, record, answer)
        rep.records[cat] += 1
        rep.id_map[rid] = p.sid
    except SkipSample as exc:
        rep.skip(sample_id(sample, i), exc)
