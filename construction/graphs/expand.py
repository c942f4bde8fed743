"""Exemplar expansion (GTA style: keep the tool set, change the scenario).

Items: exemplar samples with gold chains (a samples JSONL file or a split folder). ``rewrite``
(generator) sees the exemplar's request, its tool chain (names and argument keys) and the values
the request states, and writes a new request that needs the same chain with other values:
``{"query": ..., "values": {slot: new value}}``; ``refine`` (refiner, the ``query_refine``
prompt; option ``refine``, default on) polishes it; ``check`` (pure) rejects a request that names
a tool, repeats the exemplar (or only pads or cuts its text), keeps the exemplar's values, drops its own new values or has a
strange length. The output is a query sample with the exemplar's tools, set-up and environment
and ``metadata {"exemplar": id, "expected_tools": [names in chain order]}``: ``construct chains``
annotates it, and a check can compare the tools it used with ``expected_tools``.

>>> slots_of([("value", "Brazil"), ("value", "USA"), ("n", 5)])
[{'slot': 'value', 'argument': 'value', 'old': 'Brazil'}, {'slot': 'value_2', 'argument': 'value', 'old': 'USA'}, {'slot': 'n', 'argument': 'n', 'old': 5}]
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import Field

from benchsmith.construction import (
    ACCEPTED,
    RUNNING,
    BaseState,
    ConstructionGraph,
    GraphOptions,
    ModelStep,
    ParseError,
    go_on,
    graph,
    json_object,
    model_node,
    nonempty_text,
    reject,
)

from ._tools import fewshot_texts, names_tool, normal, setup_text, tool_view
from .special import read_samples, sample_of

QUERY = {"type": "string", "minLength": 12, "maxLength": 300}
MIN_LEN, MAX_LEN = 12, 400


def slots_of(literals: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """One slot per (argument, value) the exemplar's request states; repeated argument names get
    ``_2``, ``_3`` suffixes."""
    seen: dict[str, int] = {}
    out = []
    for arg, value in literals:
        seen[arg] = seen.get(arg, 0) + 1
        out.append({"slot": arg if seen[arg] == 1 else f"{arg}_{seen[arg]}", "argument": arg, "old": value})
    return out


def chain_of(sample: Any) -> list[dict[str, Any]]:
    """The visible gold calls as ``[{"name", "keys"}]`` in order."""
    return [
        {"name": st.call.name, "keys": list(st.call.arguments)}
        for st in sample.gold
        if st.call is not None and not st.hidden
    ]


def _environment(raw: dict[str, Any]) -> dict[str, Any] | None:
    env = (raw.get("metadata") or {}).get("environment")
    if env is None and "nl2api" in (raw.get("categories") or []):
        style = next((c for c in ("slot", "sel", "rest") if c in raw["categories"]), "slot")
        env = {"kind": "nl2api", "style": style, "setup": raw.get("setup") or []}
    return env


# -- rewrite (generator) ---------------------------------------------------------------------------
def _rewrite_vars(state: dict[str, Any]) -> dict[str, Any]:
    raw = state["item"]["exemplar"]
    _, tools = tool_view(raw["tools"])
    chain = [f"{c['name']}({', '.join(c['keys'])})" for c in state["chain"]]
    values = {s["slot"]: s["old"] for s in state["slots"]}
    return {
        "tools": tools,
        "setup_note": setup_text(raw.get("setup") or []),
        "query": raw["query"],
        "chain": chain,
        "values": json.dumps(values, ensure_ascii=False),
    }


def _values_schema(state: dict[str, Any]) -> dict[str, Any]:
    scalar = {"type": ["string", "number"]}
    slots = [s["slot"] for s in state["slots"]]
    if not slots:
        return {"type": "object", "additionalProperties": scalar, "maxProperties": 6}
    return {"type": "object", "properties": {s: scalar for s in slots}, "required": slots}


def _parse_rewrite(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("query", "values"))
    values = value["values"]
    if not isinstance(values, dict) or any(isinstance(v, (dict, list)) or v is None for v in values.values()):
        raise ParseError("bad_field", "values must be an object of plain values")
    query = nonempty_text(value["query"], "query", min_len=5)
    return {"draft": query, "query": query, "values": values}


REWRITE = ModelStep(
    "rewrite",
    "generator",
    "construction/expand_rewrite",
    _rewrite_vars,
    _parse_rewrite,
    schema=lambda s: {
        "type": "object",
        "properties": {"query": QUERY, "values": _values_schema(s)},
        "required": ["query", "values"],
    },
    max_tokens=220,
)


# -- refine (refiner, the queries graph's prompt) --------------------------------------------------
def _refine_vars(state: dict[str, Any]) -> dict[str, Any]:
    raw = state["item"]["exemplar"]
    _, tools = tool_view(raw["tools"])
    return {"tools": tools, "setup_note": setup_text(raw.get("setup") or []), "draft": state["draft"]}


def _parse_refined(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("query",))
    solvable = value.get("solvable", True)
    if not isinstance(solvable, bool):
        raise ParseError("bad_field", "solvable must be true or false")
    return {"query": nonempty_text(value["query"], "query", min_len=5), "solvable": solvable}


REFINE = ModelStep(
    "refine",
    "refiner",
    "construction/query_refine",
    _refine_vars,
    _parse_refined,
    schema=lambda s: {
        "type": "object",
        "properties": {"solvable": {"type": "boolean"}, "query": QUERY},
        "required": ["solvable", "query"],
    },
    max_tokens=160,
)


# -- check (pure) -------------------------------------------------------------------------------------
def _mentions(text: str, value: Any) -> bool:
    from benchsmith.construction import variants as v

    forms = v.value_forms(value)
    if isinstance(value, str) and not forms:
        return True  # a value too short or symbolic to look for
    if isinstance(value, str) and v.is_number_like(value):
        forms = forms + v.value_forms(float(value) if "." in value else int(value))
    return any(v.form_spans(text, f) for f in forms)


def _same(a: Any, b: Any) -> bool:
    return str(a).strip().casefold() == str(b).strip().casefold()


def check_expansion(
    query: str, exemplar: str, slots: list[dict[str, Any]], values: dict[str, Any], tools: list[dict[str, Any]]
) -> tuple[str, str] | None:
    """(code, reason) when the new ``query`` fails a check, else None.

    >>> slots = [{"slot": "value", "argument": "value", "old": "Brazil"}]
    >>> check_expansion("List the customers based in Norway.", "List the customers in Brazil.", slots,
    ...                 {"value": "Norway"}, [])
    >>> check_expansion("List the customers based in Brazil.", "List the customers in Brazil.", slots,
    ...                 {"value": "Brazil"}, [])[0]
    'same_values'
    """
    if re.search(r"[\x00-\x1f\x7f]", query):
        return "control_characters", "the query contains control characters"
    if not MIN_LEN <= len(query) <= MAX_LEN:
        return "bad_length", f"the query has {len(query)} characters ({MIN_LEN}-{MAX_LEN} allowed)"
    named = names_tool(query, tools)
    if named:
        return "names_tool", f"the query names the tool {named!r}"
    if normal(query) == normal(exemplar):
        return "same_as_exemplar", "the query repeats the exemplar"
    if slots:
        if all(_same(values.get(s["slot"], s["old"]), s["old"]) for s in slots):
            return "same_values", "every value is the exemplar's"
        if all(_mentions(query, s["old"]) for s in slots):
            return "same_values", "the query still states every value of the exemplar"
    missing = [v for v in values.values() if not _mentions(query, v)]
    if missing:
        return "value_missing", f"the query does not state its value {missing[0]!r}"
    if normal(exemplar) in normal(query) or normal(query) in normal(exemplar):
        return "too_similar", "the query only pads or cuts the exemplar's text"
    return None


def check(state: dict[str, Any]) -> dict[str, Any]:
    """Pure checks, then the query sample."""
    raw, query = state["item"]["exemplar"], state["query"]
    if not state.get("solvable", True):
        return reject("check", "unsolvable", "the refiner judged the request impossible with these tools")
    failed = check_expansion(query, raw["query"], state["slots"], state.get("values") or {}, raw["tools"])
    fixed = fewshot_texts(REWRITE.messages(state))
    if state.get("refined"):
        fixed |= fewshot_texts(REFINE.messages(state))
    if failed is None and normal(query) in fixed:
        failed = ("copied_fewshot", "the query copies a few-shot example of the prompt")
    if failed is not None:
        return reject("check", *failed)
    metadata: dict[str, Any] = {
        "exemplar": raw["id"],
        "expected_tools": [c["name"] for c in state["chain"]],
        "values": state.get("values") or {},
        "draft": state["draft"],
    }
    env = _environment(raw)
    if env:
        metadata["environment"] = env
    cats = [c for c in raw.get("categories") or [] if c in ("nl2api", "slot", "sel", "rest")]
    out = {
        "query": query,
        "tools": raw["tools"],
        "setup": raw.get("setup") or [],
        "categories": [*cats, "generated_query", "expanded"],
        "metadata": metadata,
    }
    return {"status": ACCEPTED, "outputs": [out]}


class ExpandState(BaseState, total=False):
    chain: list[dict[str, Any]]
    slots: list[dict[str, Any]]
    draft: str
    query: str
    values: dict[str, Any]
    solvable: bool
    refined: bool


def _after_rewrite(refine: bool) -> Any:
    def route(state: dict[str, Any]) -> str:
        if state.get("status") != RUNNING:
            return "__end__"
        return "refine" if refine else "check"

    return route


def _refine_node(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    update = model_node(REFINE)(state, runtime)
    update["refined"] = True
    return update


class ExpandOptions(GraphOptions):
    refine: bool = Field(True, description="let the refiner rewrite each new scenario before the checks")


@graph("expand")
class ExpandGraph(ConstructionGraph):
    description = (
        "exemplar with a gold chain -> generator writes a new scenario for the same chain -> refiner -> pure checks"
    )
    roles = ("generator", "refiner")
    steps = (REWRITE, REFINE)
    Options = ExpandOptions

    def read_items(self, source: Any) -> list[tuple[str, dict[str, Any]]]:
        return [
            (s.id, {"exemplar": s.model_dump(mode="json", exclude_none=True, exclude={"verification"})})
            for s in read_samples(source, "exemplars with gold chains")
        ]

    def initial(self, item_id: str, item: dict[str, Any], seed: int) -> dict[str, Any]:
        from benchsmith.construction import variants as v

        state = super().initial(item_id, item, seed)
        sample = sample_of(item["exemplar"])
        state["chain"] = chain_of(sample)
        state["slots"] = slots_of([(arg, value) for _, arg, value, _ in v.call_literals(sample)])
        return state

    def build(self) -> Any:
        from langgraph.graph import END, START, StateGraph

        refine = self.options.refine
        g = StateGraph(ExpandState)
        g.add_node("rewrite", model_node(REWRITE))
        g.add_node("check", check)
        g.add_edge(START, "rewrite")
        if refine:
            g.add_node("refine", _refine_node)
            g.add_conditional_edges("rewrite", _after_rewrite(True), ["refine", END])
            g.add_conditional_edges("refine", go_on("check"), ["check", END])
        else:
            g.add_conditional_edges("rewrite", _after_rewrite(False), ["check", END])
        g.add_edge("check", END)
        return g


__all__ = ["ExpandGraph", "chain_of", "check_expansion", "slots_of"]
