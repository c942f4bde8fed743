"""JSON Schemas from tool sources made into tool parameters: local ``$ref``s inlined, and a property
that names no type made to accept any JSON value (a tool's parameters type every property).

>>> doc = {"components": {"schemas": {"Id": {"type": "integer", "minimum": 1}}}}
>>> inline_refs({"$ref": "#/components/schemas/Id", "description": "the id"}, doc, where="spec")
{'type': 'integer', 'minimum': 1, 'description': 'the id'}
>>> typed({"description": "anything"})["type"][:2]
['string', 'number']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from benchsmith.schemas._private.errors import UserError

#: what a property that names no type accepts: any JSON value (JSON Schema's ``{}``)
ANY_JSON: dict[str, Any] = {"type": ["string", "number", "integer", "boolean", "object", "array", "null"]}
#: how deep references are followed: a recursive definition is cut here (its innermost use accepts any object)
MAX_REF_DEPTH = 16
_TYPE_KEYS = ("type", "enum", "anyOf", "oneOf", "allOf", "$ref", "const")


def typed(prop: Any) -> Any:
    """``prop``, accepting any JSON value (:data:`ANY_JSON`) if it names no type."""
    if isinstance(prop, dict) and not any(k in prop for k in _TYPE_KEYS):
        return {**prop, **ANY_JSON}
    return prop


def inline_refs(value: Any, root: Mapping[str, Any], *, where: str, drop: tuple[str, ...] = (), depth: int = 0) -> Any:
    """``value`` with every local ``$ref`` (``#/a/b``, a JSON pointer into ``root``) replaced by
    what it points at, the ``$ref``'s sibling keys kept over it; keys in ``drop`` (a schema's own
    ``$defs``) left out. A reference to another document, or to nothing, is a :class:`UserError`
    naming ``where``."""
    if isinstance(value, list):
        return [inline_refs(v, root, where=where, drop=drop, depth=depth) for v in value]
    if not isinstance(value, dict):
        return value
    ref = value.get("$ref")
    if isinstance(ref, str):
        rest = {k: v for k, v in value.items() if k != "$ref"}
        if depth >= MAX_REF_DEPTH:
            return {**rest, "type": "object"}
        target = _pointed(ref, root, where)
        return {**inline_refs(target, root, where=where, drop=drop, depth=depth + 1), **rest}
    return {k: inline_refs(v, root, where=where, drop=drop, depth=depth) for k, v in value.items() if k not in drop}


def _pointed(ref: str, root: Mapping[str, Any], where: str) -> Any:
    if not ref.startswith("#"):
        raise UserError(
            f"{where}: $ref {ref!r} points into another document",
            fix="bundle the document into one file (local #/... references only)",
        )
    node: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        key = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            raise UserError(f"{where}: $ref {ref!r} points at nothing", fix=f"define {ref[1:]!r} in the document")
    return node
