"""MCP tools and results as benchsmith data (pure functions, no I/O).

A tool of ``tools/list`` becomes a :class:`~benchsmith.schemas.Tool`: its name (which must fit
benchsmith's tool names), its description (else its title, else its name), its input schema as
the tool's parameters (local ``$ref``s inlined, a property that names no type accepting any JSON
value), its output schema as ``returns`` and its annotations as :class:`~benchsmith.schemas.ToolHints`.
A ``tools/call`` result becomes an observation: the structured content when the server gives
one, else the text of its content (one text block as is, several joined by newlines), else its
content blocks as JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from benchsmith.schemas import (
    TOOL_NAME_PATTERN,
    Tool,
    ToolError,
    ToolHints,
    UserError,
    first_problem,
    inline_refs,
    typed,
)


def tool_from_mcp(data: Mapping[str, Any], domain: str) -> Tool:
    """The benchsmith tool of an MCP tool (``Tool.model_dump()`` of the SDK, snake_case fields)."""
    name = str(data.get("name") or "")
    if not re.match(TOOL_NAME_PATTERN, name):
        raise UserError(
            f"MCP server {domain}: tool name {name!r} is not a benchsmith tool name",
            fix="tool names start with a letter or _ and hold letters, digits, _ . - (at most 128)",
        )
    notes = data.get("annotations") or {}
    title = data.get("title") or notes.get("title")
    description = (data.get("description") or "").strip() or title or name
    schema = data.get("input_schema") or {}
    hints = ToolHints(
        title=title,
        read_only=notes.get("read_only_hint"),
        destructive=notes.get("destructive_hint"),
        idempotent=notes.get("idempotent_hint"),
        open_world=notes.get("open_world_hint"),
    )
    try:
        return Tool(
            name=name,
            description=description,
            parameters=parameters_of(schema),
            returns=data.get("output_schema"),
            category="mcp",
            domain=domain,
            hints=hints if hints.model_dump(exclude_none=True) else None,
        )
    except ValidationError as exc:
        raise UserError(
            f"MCP server {domain}: tool {name}: {first_problem(exc)}",
            fix="the server's input schema must be a JSON object schema",
        ) from None


def parameters_of(schema: Mapping[str, Any]) -> dict[str, Any]:
    """benchsmith's parameters (``type``, ``properties``, ``required``, ``additionalProperties``)
    of an MCP input schema, its local ``$ref``s (``#/$defs/...``, ``#/definitions/...``) inlined."""
    drop = ("$defs", "definitions")
    properties = {
        key: typed(inline_refs(prop, schema, where="input schema", drop=drop))
        for key, prop in (schema.get("properties") or {}).items()
    }
    out: dict[str, Any] = {"type": "object", "properties": properties, "required": list(schema.get("required") or [])}
    extra = schema.get("additionalProperties")
    if isinstance(extra, bool):
        out["additionalProperties"] = extra
    return out


def observation_of(result: Mapping[str, Any], tool: str, max_chars: int) -> Any:
    """What a tool call gave (``CallToolResult.model_dump()``): the structured content, else the
    text, else the content blocks. A result the server marks as an error is a
    :class:`~benchsmith.schemas.ToolError` (``tool_error``) carrying its text; one longer than
    ``max_chars`` as JSON text is a ``result_too_large`` error."""
    content = list(result.get("content") or [])
    texts = [b.get("text", "") for b in content if b.get("type") == "text"]
    if result.get("is_error"):
        raise ToolError(f"{tool}: {' '.join(texts).strip() or 'the server reported an error'}", code="tool_error")
    if result.get("structured_content") is not None:
        value: Any = result["structured_content"]
    elif content and len(texts) == len(content):
        value = texts[0] if len(texts) == 1 else "\n".join(texts)
    else:
        value = [{k: v for k, v in b.items() if v is not None} for b in content]
    size = len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False, default=str))
    if size > max_chars:
        raise ToolError(
            f"{tool}: the result is {size} characters, over the cap of {max_chars}", code="result_too_large"
        )
    return value
