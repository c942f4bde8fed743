"""Execute tool-call sequences: resolve ``$label$`` references, dispatch through a tool set."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from benchsmith.schemas import ToolCall

from .database import Database
from .relation import Relation, ToolError
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


def slot_bindings() -> dict[str, Binding]:
    return {name: Binding(name) for name in SLOT_TOOLS}


def load_bindings(data: Mapping[str, Any]) -> dict[str, Binding]:
    """Bindings from a split's ``toolset.json`` (``{name: {tool, fixed, rename}}``)."""
    return {name: Binding(b["tool"], b.get("fixed", {}), b.get("rename", {})) for name, b in data.items()}


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

    def call(self, call: ToolCall) -> Any:
        binding = self.bindings.get(call.name)
        if binding is None and call.name in SLOT_TOOLS and SLOT_TOOLS[call.name].hidden:
            binding = Binding(call.name)  # hidden set-up tools (data initialisation) are always available
        if binding is None:
            raise ToolError(f"unknown tool {call.name!r}", code="unknown_tool")
        args = {binding.rename.get(k, k): v for k, v in call.arguments.items()}
        clash = set(args) & set(binding.fixed)
        if clash:
            raise ToolError(f"tool {call.name} takes no argument {sorted(clash)[0]!r}", code="unknown_argument")
        args = _resolve({**args, **binding.fixed}, self.outputs)
        impl = SLOT_TOOLS[binding.tool]
        try:
            result = impl.fn(self, **args)
        except TypeError as exc:  # missing or unexpected argument names
            raise ToolError(f"bad arguments for {call.name}: {exc}", code="bad_arguments") from exc
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


def observation(value: Any, db: Database, *, preview_rows: int = 5) -> Any:
    """A JSON-able view of an output, as a model would see it."""
    if isinstance(value, Relation):
        rows = value.rows(db, limit=preview_rows + 1)
        more = len(rows) > preview_rows
        return {"columns": list(value.visible), "rows": [list(r) for r in rows[:preview_rows]],
                "truncated": more}
    return value
