"""Execute tool-call sequences: resolve ``$label$`` references, dispatch through a tool set.

Hidden SLOT tools (``initialize_active_data``: loading and joining tables) run only through
:meth:`Runtime.setup`, the set-up entry point for a sample's own set-up calls. :meth:`Runtime.call`,
what predictions go through, answers ``unknown_tool`` for them, also when a tool set binds a
visible name to one. A query SQLite refuses inside a tool is a ``ToolError`` (code ``sql_error``),
never an ``sqlite3`` error.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from pydantic import ConfigDict, Field

from benchsmith.schemas import StrictModel, ToolCall, UserError, validate_shape

from .database import Database, ReadOnlyViolation
from .jsonvalues import json_value
from .relation import Relation, ToolError, refusal
from .tools import SLOT_TOOLS

_REF_PREFIX = "$"


@dataclass(frozen=True)
class Binding:
    """How a visible tool maps onto a SLOT implementation.

    ``tool`` is the SLOT tool name, ``fixed`` arguments are added to every call (SEL tools
    bind a column or an operator this way), ``rename`` maps visible argument names to SLOT
    argument names (obfuscated variants use it).
    """

    tool: str
    fixed: Mapping[str, Any] = field(default_factory=dict)
    rename: Mapping[str, str] = field(default_factory=dict)


class BindingSpec(StrictModel):
    """One entry of a split's ``toolset.json``."""

    model_config = ConfigDict(extra="forbid")
    tool: str
    fixed: dict[str, Any] = Field(default_factory=dict)
    rename: dict[str, str] = Field(default_factory=dict)


_slot_bindings: tuple[tuple[Any, ...], dict[str, Binding]] = ((), {})


def slot_bindings() -> dict[str, Binding]:
    """The visible SLOT tools under their own names (hidden set-up tools are not bound)."""
    global _slot_bindings
    tools = tuple(SLOT_TOOLS.items())
    if tools != _slot_bindings[0]:  # made again only when a tool is registered or replaced
        _slot_bindings = (tools, {name: Binding(name) for name, tool in tools if not tool.hidden})
    return dict(_slot_bindings[1])


def load_bindings(data: Any, *, where: str = "toolset.json") -> dict[str, Binding]:
    """Bindings from a split's ``toolset.json`` (``{name: {tool, fixed, rename}}``); a document of
    another shape, or one naming a tool that does not exist, is a ``UserError`` naming ``where``."""
    fix = 'rebuild the split, or write {"visible name": {"tool": SLOT tool, "fixed": {...}, "rename": {...}}}'
    specs = validate_shape(data, dict[str, BindingSpec], where=where, fix=fix)
    unknown = sorted(name for name, b in specs.items() if b.tool not in SLOT_TOOLS)
    if unknown:
        raise UserError(
            f"{where}: {unknown[0]} is bound to {specs[unknown[0]].tool!r}, which is no SLOT tool",
            fix=f"bind it to one of {', '.join(sorted(SLOT_TOOLS))}",
        )
    return {name: Binding(b.tool, b.fixed, b.rename) for name, b in specs.items()}


def _resolve(value: Any, outputs: Mapping[str, Any]) -> Any:
    if isinstance(value, str) and len(value) > 2 and value[0] == _REF_PREFIX and value[-1] == _REF_PREFIX:
        label, _, key = value[1:-1].partition(".")
        if label in outputs:
            out = outputs[label]
            for part in key.split(".") if key else ():
                if isinstance(out, Mapping) and part in out:
                    out = out[part]
                elif isinstance(out, list) and part.isdigit() and int(part) < len(out):
                    out = out[int(part)]
                else:
                    raise ToolError(f"reference {value} has no key {part!r}", code="bad_reference")
            return out
        if label.isidentifier():
            raise ToolError(f"reference {value} names no earlier output", code="bad_reference")
        return value
    if isinstance(value, list):
        return [_resolve(v, outputs) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, outputs) for k, v in value.items()}
    return value


class Runtime:
    """Runs tool calls against one database, keeping every labelled output."""

    def __init__(self, db: Database, bindings: Mapping[str, Binding] | None = None) -> None:
        self.db = db
        self.bindings = dict(bindings) if bindings is not None else slot_bindings()
        self.outputs: dict[str, Any] = {}

    def setup(self, calls: Iterable[ToolCall]) -> Any:
        """Run a sample's set-up calls (gold data, never a prediction): hidden tools allowed.
        Returns the last call's output."""
        result = None
        for call in calls:
            result = self._call(call, hidden=True)
        return result

    def call(self, call: ToolCall, *, fill: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> Any:
        """Run one visible tool call. ``fill`` is applied to the arguments after references are
        resolved, so the values it puts in are taken literally (REST parameters)."""
        return self._call(call, hidden=False, fill=fill)

    def _call(
        self, call: ToolCall, *, hidden: bool, fill: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    ) -> Any:
        binding = self.bindings.get(call.name)
        if binding is None and hidden and call.name in SLOT_TOOLS and SLOT_TOOLS[call.name].hidden:
            binding = Binding(call.name)
        if binding is None or (SLOT_TOOLS[binding.tool].hidden and not hidden):
            raise ToolError(f"unknown tool {call.name!r}", code="unknown_tool")
        args = {binding.rename.get(k, k): v for k, v in call.arguments.items()}
        clash = set(args) & set(binding.fixed)
        if clash:
            raise ToolError(f"tool {call.name} takes no argument {sorted(clash)[0]!r}", code="unknown_argument")
        args = _resolve({**args, **binding.fixed}, self.outputs)
        if fill is not None:
            args = fill(args)
        impl = SLOT_TOOLS[binding.tool]
        try:
            result = impl.fn(self, **args)
        except TypeError as exc:  # missing or unexpected argument names
            raise ToolError(f"bad arguments for {call.name}: {exc}", code="bad_arguments") from exc
        except ReadOnlyViolation:
            raise
        except (sqlite3.OperationalError, sqlite3.DataError) as exc:  # a plug-in tool querying db.execute itself
            raise refusal(exc) from None
        if call.label:
            self.outputs[call.label] = result
        return result

    def run(self, calls: Iterable[ToolCall]) -> Any:
        result = None
        for call in calls:
            result = self.call(call)
        return result


def result_rows(value: Any, db: Database) -> list[tuple]:
    """The answer rows of a final output: a relation's rows, or one row with a value."""
    if isinstance(value, Relation):
        return value.rows(db)
    return [(value,)]


def _may_tie(a: Any, b: Any) -> bool:
    """Whether SQLite's ORDER BY may find two values equal. Conservative: text equal after the
    NOCASE and RTRIM collations' folding counts as equal (a column may declare either)."""
    if isinstance(a, str) and isinstance(b, str):
        return a.rstrip(" ").lower() == b.rstrip(" ").lower()
    return a == b  # numbers by value (1 == 1.0, as in SQLite), NULL with NULL, blobs by bytes


def _head_is_fixed(value: Relation, rows: list[tuple], n: int) -> bool:
    """Whether the first ``n`` of a sorted relation's ``rows`` are the only rows its ``LIMIT n``
    can give, in the only order: every sort key is a visible column and no two neighbours among
    the first ``n + 1`` rows tie on the keys (so neither which rows make the cut nor their order
    is left to chance)."""
    try:
        keys = [value.visible.index(o[0]) for o in value.order]
    except ValueError:
        return False
    head = rows[: n + 1]
    return all(not all(_may_tie(x[k], y[k]) for k in keys) for x, y in zip(head, head[1:]))


def preview_of_rows(value: Any, rows: list[tuple], db: Database, *, preview_rows: int = 5) -> Any:
    """:func:`preview` of an output whose rows were just read in full: an unordered relation's
    preview is their head (the same statement without a LIMIT gives the same first rows), and so is
    a sorted one's when no ties near the head leave the LIMIT a choice; otherwise the relation is
    read again with the LIMIT, as tied rows may come out in another order."""
    if isinstance(value, Relation) and (not value.order or _head_is_fixed(value, rows, preview_rows + 1)):
        return {
            "columns": list(value.visible),
            "rows": [list(r) for r in rows[:preview_rows]],
            "truncated": len(rows) > preview_rows,
        }
    return preview(value, db, preview_rows=preview_rows)


def preview(value: Any, db: Database, *, preview_rows: int = 5) -> Any:
    """An output's first rows with the values as SQLite gives them (bytes, inf): what a build
    checks and keeps as a sample's observation (see :func:`observation` for a model's view)."""
    if isinstance(value, Relation):
        rows = value.rows(db, limit=preview_rows + 1)
        more = len(rows) > preview_rows
        return {"columns": list(value.visible), "rows": [list(r) for r in rows[:preview_rows]], "truncated": more}
    return value


def observation(value: Any, db: Database, *, preview_rows: int = 5) -> Any:
    """A JSON-able view of an output, as a model would see it: its :func:`preview` with the values
    JSON cannot carry tagged (:func:`json_value`: UTF-8 bytes as text, other bytes as
    ``{"$bytes": base64}``, inf and NaN as ``{"$float": ...}``)."""
    return json_value(preview(value, db, preview_rows=preview_rows))
