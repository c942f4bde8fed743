"""API synthesis (ACEBench-style): grow a domain -> sub-domain -> functions context tree from seed
documents (a T-Eval tool catalog, a benchsmith tools list), then for each leaf let the generator
propose a NEW function (name + one-line purpose), the refiner write its full spec (description,
JSON-Schema parameters), and check it (pure): a valid benchsmith Tool, a snake_case name clashing
with no seed, typed and documented parameters, ``required`` within the properties, a description
of sane length. Each failure rejects the item with its own code.

Items: one per leaf x ``per_leaf`` (option, default 2). Each accepted API becomes a sample whose
``query`` is the function's purpose, ``tools`` the new tool, ``categories`` ``["synthesized_api",
domain, sub-domain]`` and ``metadata.api`` the tool; :func:`export_tools` turns the samples into a
tools file (optionally de-duplicated against the seeds and among themselves: :func:`dedupe_apis`).
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any, Mapping

from pydantic import Field, field_validator

from benchsmith.construction import (
    ACCEPTED,
    REJECTED,
    BaseState,
    ConstructionGraph,
    GraphOptions,
    ModelStep,
    ParseError,
    graph,
    item_rng,
    json_object,
    model_node,
    nonempty_text,
    pipeline,
    reason,
)
from benchsmith.schemas import Sample, Tool, UserError

from ._api_tree import (
    JSON_TYPES,
    ContextTree,
    DedupeResult,
    Limits,
    dedupe_apis,
    load_context_tree,
    name_problems,
    read_seed_documents,
    seed_functions,
    spec_problems,
)

CATEGORY = "synthesized_api"
FOCUS = (
    "looks up one thing by its id or name",
    "lists or searches many things",
    "creates or adds something",
    "changes or updates something",
    "removes or cancels something",
    "checks a status or a condition",
    "computes, converts or summarises something",
)
PARAM_TYPES = [t for t in JSON_TYPES if t != "null"]


class ApisOptions(GraphOptions):
    per_leaf: int = Field(
        2, ge=1, description="new functions per (domain, sub-domain) leaf (items = leaves x per_leaf)"
    )
    k: int = Field(8, ge=0, description="at most this many existing functions of the branch shown to the proposer")
    examples: int = Field(2, ge=0, description="seed specs of the branch given to the refiner as few-shot examples")
    min_leaf: int = Field(2, ge=1, description="smaller sub-domains are merged into 'general' (1: never)")
    domains: list[str] | None = Field(
        None, description="only these domains (a list, or names separated by commas); default all"
    )
    min_description: int = Field(Limits.min_description, ge=0, description="shortest accepted description (chars)")
    max_description: int = Field(Limits.max_description, ge=1, description="longest accepted description (chars)")
    max_parameters: int = Field(Limits.max_parameters, ge=0, description="most parameters a function may take")

    @field_validator("domains", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        return [d.strip() for d in value.split(",") if d.strip()] if isinstance(value, str) else value


def _first_sentence(text: str) -> str:
    text = " ".join(str(text).split())
    end = text.find(". ")
    return text[: end + 1] if end > 0 else text


# -- propose (generator) ---------------------------------------------------------------------------
def _propose_vars(state: dict[str, Any]) -> dict[str, Any]:
    item = state["item"]
    existing = list(item["existing"])
    item_rng(state, "existing").shuffle(existing)  # per_leaf items of one leaf see different prompts
    return {
        "domain": item["domain"],
        "subdomain": item["subdomain"],
        "domain_description": item.get("description") or "",
        "existing": existing[: int(item.get("k") or len(existing))],
        "others": item.get("others") or [],
        "focus": item["focus"],
    }


def _parse_proposal(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("name", "purpose"))
    name = value["name"]
    if not isinstance(name, str) or not name.strip():
        raise ParseError("empty_field", "name is empty or not text")
    return {"proposal": {"name": name.strip(), "purpose": nonempty_text(value["purpose"], "purpose", min_len=5)}}


PROPOSE = ModelStep(
    "propose",
    "generator",
    "construction/api_propose",
    _propose_vars,
    _parse_proposal,
    schema=lambda s: {
        "type": "object",
        "properties": {
            "name": {"type": "string", "pattern": "^[a-z][a-z0-9_]{2,63}$"},
            "purpose": {"type": "string", "maxLength": 240},
        },
        "required": ["name", "purpose"],
    },
    max_tokens=120,
)


def check_name(state: dict[str, Any]) -> dict[str, Any]:
    """Pure: a bad or clashing name is rejected before the spec is written (saves a model call)."""
    problems = name_problems(state["proposal"]["name"], state["item"]["reserved"])
    return _rejection("check_name", problems) if problems else {}


# -- specify (refiner) -----------------------------------------------------------------------------
def _specify_vars(state: dict[str, Any]) -> dict[str, Any]:
    item = state["item"]
    return {
        "domain": item["domain"],
        "subdomain": item["subdomain"],
        "examples": item.get("examples") or [],
        "name": state["proposal"]["name"],
        "purpose": state["proposal"]["purpose"],
    }


def spec_schema(state: dict[str, Any]) -> dict[str, Any]:
    """What the refiner's reply may be (constrained decoding): a description and a parameters
    object whose every property has a type and a description."""
    item = state.get("item") or {}
    limits = Limits(**{k: v for k, v in (item.get("limits") or {}).items() if k in Limits.__dataclass_fields__})
    param = {
        "type": "object",
        "properties": {
            "type": {"enum": PARAM_TYPES},
            "description": {"type": "string", "maxLength": 200},
            "enum": {"type": "array", "items": {"type": "string"}},
            "items": {"type": "object", "properties": {"type": {"enum": PARAM_TYPES}}, "required": ["type"]},
        },
        "required": ["type", "description"],
    }
    return {
        "type": "object",
        "properties": {
            "description": {"type": "string", "minLength": limits.min_description, "maxLength": limits.max_description},
            "parameters": {
                "type": "object",
                "properties": {
                    "type": {"const": "object"},
                    "properties": {
                        "type": "object",
                        "additionalProperties": param,
                        "maxProperties": limits.max_parameters,
                    },
                    "required": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["type", "properties", "required"],
            },
        },
        "required": ["description", "parameters"],
    }


def _parse_spec(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("description", "parameters"))
    if not isinstance(value["description"], str):
        raise ParseError("bad_field", "description must be text")
    if not isinstance(value["parameters"], dict):
        raise ParseError("bad_field", "parameters must be a JSON object")
    spec = {
        "name": state["proposal"]["name"],
        "description": value["description"].strip(),
        "parameters": value["parameters"],
    }
    return {"spec": spec}


SPECIFY = ModelStep(
    "specify", "refiner", "construction/api_specify", _specify_vars, _parse_spec, schema=spec_schema, max_tokens=512
)


# -- validate (pure) ---------------------------------------------------------------------------------
def _rejection(where: str, problems: list[tuple[str, str]]) -> dict[str, Any]:
    return {"status": REJECTED, "reasons": [reason(where, code, text) for code, text in problems]}


def validate(state: dict[str, Any]) -> dict[str, Any]:
    """Pure: every check of :func:`spec_problems` (each failure a reason with its code), then the sample."""
    item, spec = state["item"], state["spec"]
    limits = Limits(**{k: v for k, v in (item.get("limits") or {}).items() if k in Limits.__dataclass_fields__})
    problems = spec_problems(spec, item["reserved"], limits)
    if problems:
        return _rejection("validate", problems)
    params = dict(spec["parameters"])
    params.setdefault("type", "object")
    params.setdefault("required", [])
    tool = Tool.model_validate(
        {
            "name": spec["name"],
            "description": spec["description"],
            "parameters": params,
            "domain": item["domain"],
            "category": item["subdomain"],
        }
    )
    api = tool.model_dump(mode="json", exclude_none=True)
    sample = {
        "query": state["proposal"]["purpose"],
        "tools": [api],
        "categories": [CATEGORY, item["domain"], item["subdomain"]],
        "metadata": {
            "api": api,
            "domain_path": [item["domain"], item["subdomain"]],
            "proposal": state["proposal"],
            "focus": item["focus"],
            "branch": [f["name"] for f in item["existing"]],
        },
    }
    return {"status": ACCEPTED, "outputs": [sample]}


class ApiState(BaseState, total=False):
    proposal: dict[str, Any]
    spec: dict[str, Any]


# -- items -----------------------------------------------------------------------------------------
def _example(tool: dict[str, Any]) -> dict[str, str]:
    spec = {
        "description": tool["description"],
        "parameters": tool.get("parameters") or {"type": "object", "properties": {}, "required": []},
    }
    return {
        "name": tool["name"],
        "purpose": _first_sentence(tool["description"]),
        "spec": json.dumps(spec, ensure_ascii=False),
    }


def tree_items(
    tree: ContextTree, options: Mapping[str, Any] | ApisOptions | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The items of a tree (pure): one per leaf x ``per_leaf``; leaves of the ``domains`` option only
    when it is given."""
    opts = ApisGraph.check_options(options)
    assert isinstance(opts, ApisOptions)
    per_leaf, k, n_examples, only = opts.per_leaf, opts.k, opts.examples, opts.domains
    if only:
        unknown = sorted(set(only) - set(tree.domains))
        if unknown:
            raise UserError(f"unknown domains {unknown}", fix=f"choose from {', '.join(tree.domains)}")
    reserved = tree.names()
    limits = Limits(
        min_description=opts.min_description, max_description=opts.max_description, max_parameters=opts.max_parameters
    )
    items = []
    for leaf in tree.leaves():
        if only and leaf.domain not in only:
            continue
        others = [f["name"] for s, fns in tree.domains[leaf.domain].items() if s != leaf.subdomain for f in fns]
        existing = [{"name": f["name"], "description": _first_sentence(f["description"])} for f in leaf.functions]
        offset = zlib.crc32(f"{leaf.domain}/{leaf.subdomain}".encode())
        for i in range(per_leaf):
            items.append(
                (
                    f"{leaf.domain}.{leaf.subdomain}.{i + 1}",
                    {
                        "domain": leaf.domain,
                        "subdomain": leaf.subdomain,
                        "description": leaf.description,
                        "existing": existing,
                        "others": others[:20],
                        "k": k,
                        "reserved": reserved,
                        "examples": [_example(f) for f in leaf.functions[:n_examples]],
                        "focus": FOCUS[(offset + i) % len(FOCUS)],
                        "limits": {
                            "min_description": limits.min_description,
                            "max_description": limits.max_description,
                            "max_parameters": limits.max_parameters,
                        },
                    },
                )
            )
    return items


@graph("apis")
class ApisGraph(ConstructionGraph):
    description = (
        "seed catalog -> domain/sub-domain tree -> generator proposes a function -> refiner specifies it -> pure checks"
    )
    roles = ("generator", "refiner")
    steps = (PROPOSE, SPECIFY)
    Options = ApisOptions

    def read_items(self, source: Any) -> list[tuple[str, dict[str, Any]]]:
        tree = load_context_tree(source, min_leaf=self.options.min_leaf)
        return tree_items(tree, self.options)

    def build(self) -> Any:
        return pipeline(
            ApiState,
            [
                ("propose", model_node(PROPOSE)),
                ("check_name", check_name),
                ("specify", model_node(SPECIFY)),
                ("validate", validate),
            ],
        )


# -- after the run -------------------------------------------------------------------------------------
def synthesized_tools(samples_path: str | Path) -> list[dict[str, Any]]:
    """The synthesized APIs (Tool dicts) of an ``apis`` run's samples (a samples.jsonl or its folder)."""
    from benchsmith.schemas import Split, read_jsonl

    path = Split.samples_file(samples_path, fix="pass the samples.jsonl of a construct apis run")
    tools = []
    for s in read_jsonl(path, Sample):
        if CATEGORY not in s.categories:
            continue
        api = s.metadata.get("api") or (s.tools[0].model_dump(mode="json", exclude_none=True) if s.tools else None)
        if api is not None:
            tools.append(Tool.model_validate(api).model_dump(mode="json", exclude_none=True))
    return tools


def export_tools(
    samples_path: str | Path,
    out_path: str | Path,
    *,
    seeds: Any = None,
    threshold: float | None = None,
    embedder: Any = None,
) -> dict[str, Any]:
    """Write the synthesized APIs of a run as a tools JSON list (benchsmith Tool objects) to
    ``out_path``. With ``threshold``, de-duplicate first (:func:`dedupe_apis`, against the tools of
    ``seeds`` — a seed file/folder or a list of seed documents — and among the new ones) and write
    what was dropped, with reasons, to ``<out stem>.dropped.jsonl`` next to it.
    Returns ``{"out", "tools", "dropped"}``."""
    from benchsmith.schemas import write_json, write_jsonl

    tools = synthesized_tools(samples_path)
    dropped: list[dict[str, Any]] = []
    out = Path(out_path)
    if threshold is not None:
        seed_tools = [f.tool for f in seed_functions(read_seed_documents(seeds))] if seeds is not None else []
        result = dedupe_apis(tools, threshold, embedder, seeds=seed_tools)
        tools, dropped = result.kept, result.dropped
        write_jsonl(out.with_name(f"{out.stem}.dropped.jsonl"), dropped)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, tools)
    return {"out": str(out), "tools": len(tools), "dropped": dropped}


__all__ = [
    "ApisGraph",
    "DedupeResult",
    "dedupe_apis",
    "export_tools",
    "load_context_tree",
    "spec_problems",
    "synthesized_tools",
    "tree_items",
]
