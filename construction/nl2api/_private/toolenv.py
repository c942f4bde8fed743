"""The split's tools as a model meets them: one case's tool environment on the split's read-only
database (:class:`ToolEnv`), the tools as compact prompt text, the decoding schema of one step, and
what a sample's hidden set-up loaded, in words. Shared by construction's graphs and the evaluator.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Iterable

from benchsmith.models import THOUGHT_SCHEMA, reference_choices
from benchsmith.schemas import ToolCall, UnresolvedReference, resolve_references

from .database import Database
from .jsonvalues import json_value
from .relation import ToolError
from .rest import run_endpoint
from .runtime import Runtime, observation
from .splitfiles import read_endpoints, read_toolset
from .tools import SLOT_TOOLS


def _type_text(schema: Any, columns: set[str]) -> str:
    if not isinstance(schema, dict):
        return "any"
    enum = schema.get("enum")
    if isinstance(enum, list):
        if columns and set(map(str, enum)) <= columns:
            return "column"
        return "one of " + "|".join(map(str, enum))
    t = schema.get("type")
    if t == "array":
        return f"list of {_type_text(schema.get('items'), columns)}"
    if t == "object" and isinstance(schema.get("properties"), dict):
        req = set(schema.get("required") or [])
        inner = ", ".join(
            f"{k}{'' if k in req else '?'}: {_type_text(v, columns)}" for k, v in schema["properties"].items()
        )
        return "{" + inner + "}"
    if isinstance(t, list):
        return "|".join(map(str, t))
    return str(t or "any")


def compact_tools(tools: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The tools as short text for a prompt: the column list once (it is repeated in every
    column parameter's description), each parameter as ``name (type): first part of its description``.

    >>> cols, ts = compact_tools([{"name": "f", "description": "Keep rows.", "parameters": {"type": "object",
    ...     "properties": {"key_name": {"type": "string", "enum": ["t.a", "t.b"], "description": "A column. Columns: t.a: id; t.b: name"}},
    ...     "required": ["key_name"]}}])
    >>> cols, ts[0]["params"]
    ('t.a: id; t.b: name', ['key_name (column, required): A column.'])
    """
    columns_text = ""
    names: set[str] = set()
    for t in tools:
        for prop in ((t.get("parameters") or {}).get("properties") or {}).values():
            desc = str(prop.get("description", "")) if isinstance(prop, dict) else ""
            if " Columns: " in desc:
                tail = desc.split(" Columns: ", 1)[1]
                if len(tail) > len(columns_text):
                    columns_text = tail
                if isinstance(prop.get("enum"), list):
                    names |= set(map(str, prop["enum"]))
    out = []
    for t in tools:
        params = t.get("parameters") or {}
        req = set(params.get("required") or [])
        lines = []
        for name, prop in (params.get("properties") or {}).items():
            desc = str(prop.get("description", "")) if isinstance(prop, dict) else ""
            desc = desc.split(" Columns: ", 1)[0]
            lines.append(
                f"{name} ({_type_text(prop, names)}{', required' if name in req else ''}): {desc}".rstrip(": ")
            )
        out.append({"name": t["name"], "description": t.get("description", ""), "params": lines})
    return columns_text, out


def step_schema(tools: list[dict[str, Any]], labels: list[str] | None = None) -> dict[str, Any]:
    """One ``anyOf`` branch per tool (its name as a constant, its parameters as the arguments
    schema, parameters that take an earlier output limited to the ``labels`` that exist) plus
    ``finish``. The action comes first and the thought last, so a rambling thought cannot cost
    the step."""
    branches = []
    for t in tools:
        params = reference_choices(t.get("parameters") or {"type": "object"}, labels or [])
        branches.append(
            {
                "type": "object",
                "properties": {"action": {"const": t["name"]}, "arguments": params, "thought": THOUGHT_SCHEMA},
                "required": ["action", "arguments", "thought"],
            }
        )
    branches.append(
        {
            "type": "object",
            "properties": {
                "action": {"const": "finish"},
                "arguments": {"type": "object", "maxProperties": 0},
                "thought": THOUGHT_SCHEMA,
            },
            "required": ["action", "arguments", "thought"],
        }
    )
    return {"anyOf": branches}


def setup_note(setup: Iterable[ToolCall]) -> str:
    """What a sample's hidden set-up calls loaded, in words a model can use (empty without a setup)."""
    parts = []
    for call in setup:
        if not call.label:
            continue
        src = call.arguments.get("source")
        what = str(src) if isinstance(src, str) else call.name
        joins = [j.get("table") for j in call.arguments.get("joins") or [] if isinstance(j, dict) and j.get("table")]
        if joins:
            what += " joined with " + ", ".join(str(j) for j in joins)
        parts.append(f"${call.label}$ = {what}")
    if not parts:
        return ""
    return (
        "Data already loaded for you: " + "; ".join(parts) + " (pass it as data_source). Every tool output "
        "is kept under a label; later calls refer to it as $label$."
    )


class ToolEnv:
    """The split's tools for one case, executing on the split's read-only database.

    The case's hidden set-up calls (``setup``) run here, through the runtime's set-up entry
    point. When none are given, set-up calls may instead come one by one through :meth:`call`,
    until the first other call (a sample replayed call by call); ``setup_phase=False`` closes
    that door, as the ReAct task does: the model's calls never reach a hidden tool."""

    def __init__(
        self, split: Path, db: Database, style: str, setup: list[dict[str, Any]], *, setup_phase: bool | None = None
    ) -> None:
        self.style = style
        self.db = db
        self._setup_phase = not setup if setup_phase is None else setup_phase
        if style == "rest":
            self.endpoints = read_endpoints(split / "endpoints.json")
            self.outputs: dict[str, Any] = {}
        else:
            toolset = split / "toolset.json"
            self.runtime = Runtime(db, read_toolset(toolset) if toolset.is_file() else None)
            self.runtime.setup(ToolCall.model_validate(c) for c in setup)

    def call(self, name: str, arguments: dict[str, Any], label: str) -> Any:
        """Run one call; its JSON-able observation (values JSON cannot carry tagged, as
        :func:`json_value` does). Raises ToolError for anything the model got wrong."""
        try:
            if self.style == "rest":
                endpoint = self.endpoints.get(name)
                if endpoint is None:
                    raise ToolError(f"unknown endpoint {name!r}", code="unknown_tool")
                args = resolve_references(arguments, self.outputs)
                extra = sorted(set(args) - set(endpoint["parameters"]))
                if extra:
                    raise ToolError(f"{name} has no parameter {extra[0]!r}", code="unknown_argument")
                result = run_endpoint(self.db, endpoint, args)
                self.outputs[label] = result
                return json_value(
                    {
                        "columns": result.get("columns"),
                        "rows": (result.get("rows") or [])[:5],
                        "truncated": len(result.get("rows") or []) > 5,
                    }
                )
            call = ToolCall(name=name, arguments=arguments, label=label)
            if self._setup_phase and name in SLOT_TOOLS and SLOT_TOOLS[name].hidden:
                value = self.runtime.setup([call])
            else:
                self._setup_phase = False
                value = self.runtime.call(call)
            return observation(value, self.db)
        except ToolError:
            raise
        except UnresolvedReference as exc:
            raise ToolError(str(exc), code="bad_reference") from None
        except (ValueError, TypeError, KeyError, sqlite3.Error) as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}", code="tool_error") from None
        except Exception as exc:  # noqa: BLE001 - a crash on model input is an observation, not a run failure
            raise ToolError(f"{type(exc).__name__}: {exc}", code="tool_error") from None
