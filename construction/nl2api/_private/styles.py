"""Tool-set styles over the SLOT tools: SLOT specs, SEL bound variants, obfuscation, reduced universes."""

from __future__ import annotations

import copy
import hashlib
import random
import re
from typing import Any, Iterable, Mapping

from benchsmith.schemas import Tool, ToolCall

from .runtime import Binding
from .tools import COMPARISONS, NULL_OPS, OPERATORS, SLOT_TOOLS, ToolDef


def _set_enum(schema: dict[str, Any], path: tuple[str, ...], columns: list[str], doc: str) -> None:
    node: Any = schema["properties"]
    for i, key in enumerate(path):
        if key == "*":
            node = node["items"]
            node = node.get("properties", node)
            continue
        if key not in node:
            return
        if i == len(path) - 1:
            node[key] = {
                **node[key],
                "enum": columns,
                "description": f"{node[key].get('description', '')}. {doc}".strip(". "),
            }
        else:
            node = node[key]
            node = node.get("properties", node) if node.get("type") == "object" else node


def column_doc(columns: list[str], descriptions: Mapping[str, str]) -> str:
    return "Columns: " + "; ".join(f"{c}: {descriptions.get(c, c)}" for c in columns)


def slot_tool_spec(
    tool: ToolDef, columns: list[str] | None = None, descriptions: Mapping[str, str] | None = None
) -> Tool:
    """The model-facing spec of a SLOT tool; column parameters become enums of ``columns``."""
    params = copy.deepcopy(tool.parameters)
    if columns:
        doc = column_doc(columns, descriptions or {})
        for path in tool.column_params:
            _set_enum(params, path, columns, doc)
    return Tool(
        name=tool.name, description=tool.description, parameters=params, category="data", tags=["slot", tool.output]
    )


def slot_tools(
    columns: list[str] | None = None, descriptions: Mapping[str, str] | None = None, *, extended: bool = False
) -> list[Tool]:
    """The visible SLOT tools (the extended tier too with ``extended``)."""
    return [
        slot_tool_spec(t, columns, descriptions)
        for t in SLOT_TOOLS.values()
        if not t.hidden and (extended or t.tier == "core")
    ]


def uses_extended(calls: Iterable[ToolCall]) -> bool:
    """Whether a gold sequence needs a tool of the extended tier."""
    return any(c.name in SLOT_TOOLS and SLOT_TOOLS[c.name].tier != "core" for c in calls)


# ---- SEL: column- and condition-bound variants --------------------------------------------
def _slug(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_").lower()


def sel_toolset(
    columns: list[str], descriptions: Mapping[str, str], *, extended: bool = False
) -> tuple[list[Tool], dict[str, Binding]]:
    """SEL tools for one sample: a getter and a unique-values tool per column, a filter per
    operator, and the remaining generic SLOT tools."""
    tools: list[Tool] = []
    bindings: dict[str, Binding] = {}
    data = SLOT_TOOLS["filter_data"].parameters["properties"]["data_source"]
    for col in columns:
        desc = descriptions.get(col, col)
        name = f"get_{_slug(col)}"
        tools.append(
            Tool(
                name=name,
                description=f"Keep only the column {col} ({desc}) of the data.",
                parameters={"type": "object", "properties": {"data_source": data}, "required": ["data_source"]},
                category="data",
                tags=["sel", "getter"],
            )
        )
        bindings[name] = Binding("retrieve_data", fixed={"key_names": [col]})
        name = f"get_unique_{_slug(col)}"
        tools.append(
            Tool(
                name=name,
                description=f"The distinct values of {col} ({desc}) in the data.",
                parameters={"type": "object", "properties": {"data_source": data}, "required": ["data_source"]},
                category="data",
                tags=["sel", "unique"],
            )
        )
        bindings[name] = Binding("get_unique_values", fixed={"key_name": col})
    base = SLOT_TOOLS["filter_data"]
    doc = column_doc(columns, descriptions)
    for op in OPERATORS:
        params = copy.deepcopy(base.parameters)
        del params["properties"]["operator"]
        params["required"] = [r for r in params["required"] if r != "operator"]
        if op in NULL_OPS:
            del params["properties"]["value"], params["properties"]["value_key_name"]
        elif op not in COMPARISONS:
            del params["properties"]["value_key_name"]
        for path in base.column_params:
            _set_enum(params, path, columns, doc)
        name = f"filter_data_{op}"
        tools.append(
            Tool(
                name=name,
                description=f"Keep the rows of the data where the column is {op.replace('_', ' ')} the value.",
                parameters=params,
                category="data",
                tags=["sel", "filter"],
            )
        )
        bindings[name] = Binding("filter_data", fixed={"operator": op})
    for tool in SLOT_TOOLS.values():
        if tool.hidden or tool.name in ("filter_data", "get_unique_values") or (tool.tier != "core" and not extended):
            continue
        tools.append(slot_tool_spec(tool, columns, descriptions))
        bindings[tool.name] = Binding(tool.name)
    return tools, bindings


def to_sel_call(call: ToolCall) -> ToolCall:
    """Rewrite one SLOT call into its SEL form (calls without a bound variant stay as they are)."""
    args = dict(call.arguments)
    if call.name == "filter_data":
        op = args.pop("operator")
        return ToolCall(name=f"filter_data_{op}", arguments=args, label=call.label)
    if call.name == "retrieve_data" and len(args.get("key_names", [])) == 1 and not args.get("distinct"):
        return ToolCall(
            name=f"get_{_slug(args['key_names'][0])}", arguments={"data_source": args["data_source"]}, label=call.label
        )
    if call.name == "get_unique_values":
        return ToolCall(
            name=f"get_unique_{_slug(args['key_name'])}",
            arguments={"data_source": args["data_source"]},
            label=call.label,
        )
    return call


# ---- obfuscation and reduced universes --------------------------------------------------------
def obfuscation_map(tools: Iterable[Tool]) -> dict[str, Any]:
    """Deterministic FUNC_n / ARG_n names for every tool and top-level argument name."""
    names = sorted({t.name for t in tools})
    args = sorted({a for t in tools for a in t.parameters.properties})
    return {
        "tools": {n: f"FUNC_{i}" for i, n in enumerate(names, 1)},
        "arguments": {a: f"ARG_{i}" for i, a in enumerate(args, 1)},
    }


def obfuscate_tool(tool: Tool, mapping: Mapping[str, Any]) -> Tool:
    amap = mapping["arguments"]
    params = tool.parameters.model_dump(exclude_none=True)
    params["properties"] = {amap[k]: v for k, v in params["properties"].items()}
    params["required"] = [amap[k] for k in params["required"]]
    return tool.model_copy(
        update={"name": mapping["tools"][tool.name], "parameters": type(tool.parameters).model_validate(params)}
    )


def obfuscate_call(call: ToolCall, mapping: Mapping[str, Any]) -> ToolCall:
    amap = mapping["arguments"]
    return ToolCall(
        name=mapping["tools"][call.name], arguments={amap[k]: v for k, v in call.arguments.items()}, label=call.label
    )


def obfuscate_bindings(bindings: Mapping[str, Binding], mapping: Mapping[str, Any]) -> dict[str, Binding]:
    back = {obf: real for real, obf in mapping["arguments"].items()}  # ARG_n -> argument name
    return {
        mapping["tools"][name]: Binding(b.tool, b.fixed, back)
        for name, b in bindings.items()
        if name in mapping["tools"]
    }


def reduce_universe(tools: list[Tool], gold: set[str], size: int, seed: str) -> list[Tool]:
    """At most ``size`` tools (never fewer than the gold tools), always keeping the gold ones."""
    keep = [t for t in tools if t.name in gold]
    others = [t for t in tools if t.name not in gold]
    rng = random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))
    extra = rng.sample(others, max(0, min(len(others), size - len(keep))))
    chosen = {t.name for t in keep + extra}
    return [t for t in tools if t.name in chosen]
