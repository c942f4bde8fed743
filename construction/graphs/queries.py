"""Query generation: draw tools from a catalog, shuffle their docs, let the generator write a
request (few-shot), let the refiner rewrite it, then check it (pure): the query must not name a
tool, must not copy an example, and must have a sane length.

Items: ``n`` draws from the catalog (``options["n"]``, default 10; ``k`` tools per draw,
``strategy`` random or related), deterministic in the seed. When the catalog's tools run in a
stateful environment (an MCP server on a state template, an HTTP service), the generator is shown
what it holds at the start (its probes' results, its files), so requests are about the real data,
and those words count as on-topic.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any, Literal

from pydantic import Field

from benchsmith.construction import (
    ACCEPTED,
    BaseState,
    ConstructionGraph,
    GraphOptions,
    ModelStep,
    ParseError,
    draw_tools,
    graph,
    item_rng,
    json_object,
    load_catalog,
    model_node,
    nonempty_text,
    pipeline,
    reject,
)

from ._tools import (
    content_words,
    fewshot_texts,
    names_tool,
    normal,
    setup_text,
    tool_view,
    tool_vocabulary,
)

QUERY = {"type": "string", "minLength": 12, "maxLength": 300}


def _gen_vars(state: dict[str, Any]) -> dict[str, Any]:
    item = state["item"]
    columns, tools = tool_view(item["tools"], item_rng(state, "shuffle"))
    return {
        "tools": tools,
        "columns": columns,
        "setup_note": setup_text(item.get("setup") or []),
        "examples": item.get("examples") or [],
        "data": item.get("data"),
    }


DATA_LIMIT = 1500  # characters of the start state shown to the generator


def data_text(environment: dict[str, Any]) -> str | None:
    """What a stateful environment holds at its start, as text for the generator (its probes'
    results, the names of its files), so requests are about the data the tools really serve; None
    for an environment that keeps no state, or that needs what only the chains get (an NL2API
    split folder: its columns are shown with the tools anyway)."""
    from benchsmith.construction import close_environment, open_environment, state_of
    from benchsmith.schemas import UserError

    try:
        env = open_environment(environment)
    except UserError:
        return None
    try:
        state = state_of(env)
    finally:
        close_environment(env)
    if not isinstance(state, dict) or not state:
        return None
    lines = [p if isinstance(p, str) else json.dumps(p, ensure_ascii=False) for p in state.get("probes") or []]
    if state.get("files"):
        lines.append("files: " + ", ".join(state["files"]))
    text = "\n".join(lines)
    return text[:DATA_LIMIT] + (" …" if len(text) > DATA_LIMIT else "") if text else None


def _parse_draft(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("query",))
    return {"draft": nonempty_text(value["query"], "query", min_len=5)}


def _refine_vars(state: dict[str, Any]) -> dict[str, Any]:
    _, tools = tool_view(state["item"]["tools"])
    return {"tools": tools, "setup_note": setup_text(state["item"].get("setup") or []), "draft": state["draft"]}


def _parse_refined(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("query",))
    solvable = value.get("solvable", True)
    if not isinstance(solvable, bool):
        raise ParseError("bad_field", "solvable must be true or false")
    return {"query": nonempty_text(value["query"], "query", min_len=5), "solvable": solvable}


class QueryState(BaseState, total=False):
    draft: str
    query: str
    solvable: bool


GENERATE = ModelStep(
    "generate",
    "generator",
    "construction/query_generate",
    _gen_vars,
    _parse_draft,
    schema=lambda s: {"type": "object", "properties": {"query": QUERY}, "required": ["query"]},
    max_tokens=160,
)
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


def finalize(state: dict[str, Any]) -> dict[str, Any]:
    """Pure checks on the refined query, then the sample."""
    item, query = state["item"], state["query"]
    if not state.get("solvable", True):
        return reject("finalize", "unsolvable", "the refiner judged the request impossible with these tools")
    if re.search(r"[\x00-\x1f\x7f]", query):
        return reject("finalize", "control_characters", "the query contains control characters")
    named = names_tool(query, item["tools"])
    if named:
        return reject("finalize", "names_tool", f"the query names the tool {named!r}")
    if not 12 <= len(query) <= 400:
        return reject("finalize", "bad_length", f"the query has {len(query)} characters (12-400 allowed)")
    if normal(query) in {normal(e) for e in item.get("examples") or []}:
        return reject("finalize", "copied_example", "the query repeats an example of the catalog verbatim")
    fixed = fewshot_texts(GENERATE.messages(state)) | fewshot_texts(REFINE.messages(state))
    if normal(query) in fixed - {normal(e) for e in item.get("examples") or []}:
        return reject("finalize", "copied_fewshot", "the query copies a few-shot example of the prompt")
    seen = [*(item.get("examples") or []), setup_text(item.get("setup") or []), item.get("data") or ""]
    vocabulary = tool_vocabulary(item["tools"], seen)
    if not content_words(query) & vocabulary:
        return reject(
            "finalize",
            "off_topic",
            "the query shares no content word with the tools, their columns or the examples: it cannot be about them",
        )
    metadata = {
        "draft": state["draft"],
        "catalog_entry": item["entry"],
        "tool_sample": [t["name"] for t in item["tools"]],
    }
    if item.get("environment"):
        metadata["environment"] = item["environment"]
    sample = {
        "query": query,
        "tools": item["tools"],
        "setup": item.get("setup") or [],
        "categories": ["generated_query"],
        "metadata": metadata,
    }
    return {"status": ACCEPTED, "outputs": [sample]}


class QueriesOptions(GraphOptions):
    n: int = Field(10, ge=0, description="queries to write (one draw of tools each)")
    k: int = Field(2, ge=1, description="tools per draw")
    strategy: Literal["random", "related"] = Field(
        "random", description="random draws, or related ones (same family or a shared parameter name)"
    )
    draw_seed: int = Field(0, description="seed of the tool draws")


@graph("queries")
class QueriesGraph(ConstructionGraph):
    description = "tools drawn from a catalog -> generator writes a query -> refiner rewrites it -> pure checks"
    roles = ("generator", "refiner")
    steps = (GENERATE, REFINE)
    Options = QueriesOptions

    def read_items(self, source: Any) -> list[tuple[str, dict[str, Any]]]:
        catalog = load_catalog(source)
        n, k = self.options.n, self.options.k
        rng = random.Random(f"queries:{self.options.draw_seed}")
        items = []
        data: dict[str, str | None] = {}  # one look at each environment's start state per run
        for i in range(n):
            entry = draw_tools(catalog, k, rng, self.options.strategy)
            item = {
                "entry": entry.id,
                "tools": entry.tools,
                "setup": entry.setup,
                "environment": entry.environment,
                "examples": entry.examples,
            }
            if entry.environment is not None:
                key = json.dumps(entry.environment, sort_keys=True)
                if key not in data:
                    data[key] = data_text(entry.environment)
                if data[key]:
                    item["data"] = data[key]
            items.append((f"q{i + 1:05d}", item))
        return items

    def build(self) -> Any:
        return pipeline(
            QueryState,
            [
                ("generate", model_node(GENERATE)),
                ("refine", model_node(REFINE)),
                ("finalize", finalize),
            ],
        )
