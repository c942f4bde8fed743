"""The ``expand`` construction graph on a real SLOT split with a scripted chat model: accepted
expansions validate, keep the exemplar's tools, set-up and environment and can be annotated by
``chains``; each pure check rejects a bad rewrite with its code; an unreadable reply goes to
review; the pure checks are data-driven (``tests/fixtures/construct/expand_checks.jsonl``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import build_slot_split, pair_lines
from scripted_chat import ScriptedChat, by_task

import benchsmith.construction.graphs.expand as expand
from benchsmith.construction import EnvContext, RoleModels, run_graph
from benchsmith.schemas import Sample, read_jsonl

MARKER = "You write a new scenario for a tool chain"
FIXTURES = Path(__file__).parent / "fixtures" / "construct"
NEW = {"Brazil": "Norway", "Sales Support Agent": "IT Manager", "Leonie": "Helena", "Köhler": "Holý", "1.99": 0.99}
TOOLS = [{"name": "aggregate_data", "description": "Aggregate.", "parameters": {"type": "object", "properties": {}}}]


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("expand"), pair_lines()[:5])


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _example(last: str) -> tuple[str, dict]:
    query = last.split("Example request: ", 1)[1].split("\n", 1)[0]
    return query, json.loads(last.split("Values: ", 1)[1])


def new_scenario(last: str, messages: list[dict]) -> str:
    """Swap every value for a new one; a request without values gets a new situation."""
    query, values = _example(last)
    if not values:
        return json.dumps(
            {"query": "Our playlist team needs to know: how many songs are over ten minutes long?", "values": {}}
        )
    new = {k: NEW.get(str(v), v) for k, v in values.items()}
    for k, v in values.items():
        query = query.replace(str(v), str(new[k]))
    return json.dumps({"query": "For the new branch report: " + query.rstrip("?.") + ", please.", "values": new})


def keep_refined(last: str, messages: list[dict]) -> str:
    return json.dumps({"solvable": True, "query": last.split("Draft: ", 1)[1]})


def run(split: Path, out: Path, reply, refine=keep_refined, options=None):
    models = RoleModels(default=ScriptedChat(script=by_task(**{MARKER: reply, "refine": refine})))
    summary = run_graph("expand", split, out, models=models, options=options or {})
    return (
        summary.to_dict(),
        _lines(out / "samples.jsonl"),
        _lines(out / "error_pool.jsonl"),
        _lines(out / "review.jsonl"),
    )


def test_accepted_expansions_validate(split, tmp_path):
    summary, raw, pool, review = run(split, tmp_path / "out", new_scenario)
    assert summary["samples"] == 5 and not pool and not review
    assert summary["calls_by_node"] == {"rewrite": 5, "refine": 5}
    exemplars = {s.id: s for s in read_jsonl(split / "samples.jsonl", Sample)}
    for s in read_jsonl(tmp_path / "out" / "samples.jsonl", Sample):
        ex = exemplars[s.metadata["exemplar"]]
        assert s.tools == ex.tools and s.setup == ex.setup and not s.gold
        assert s.metadata["expected_tools"] == [st.call.name for st in ex.gold if st.call is not None]
        assert s.metadata["environment"]["kind"] == "nl2api"
        assert "generated_query" in s.categories and "expanded" in s.categories
        assert s.query != ex.query
    brazil = next(r for r in raw if "Norway" in r["query"])
    assert brazil["metadata"]["values"] == {"value": "Norway"}


def test_chains_can_annotate_an_expansion(split, tmp_path):
    run(split, tmp_path / "out", new_scenario)

    def plan(last, messages):
        if last.startswith("Step "):
            return '{"done": true, "thought": "That count is the answer."}'
        return '{"done": false, "thought": "Count the rows."}'

    act = (
        '{"action": "aggregate_data", "arguments": {"data_source": "$data_1$", "aggregation": "count"}, "thought": "c"}'
    )
    models = RoleModels(
        default=ScriptedChat(script=by_task(plan=plan, act=act, review='{"verdict": "success", "decision": "finish"}'))
    )
    summary = run_graph(
        "chains",
        tmp_path / "out" / "samples.jsonl",
        tmp_path / "chains",
        models=models,
        env_context=EnvContext(split=split),
    )
    # every expansion is read; the one without values is annotated by this one-step script (the
    # others state values a count does not use, which chains' own checks reject)
    assert summary.items == 5 and summary.samples >= 1 and not summary.review
    for s in read_jsonl(tmp_path / "chains" / "samples.jsonl", Sample):
        used = [st.call.name for st in s.gold if st.call is not None]
        assert used == ["aggregate_data"] and s.metadata["expected_tools"]  # what a tool-use check compares
        assert "generated_chain" in s.categories and "expanded" in s.categories


def test_refine_can_be_switched_off(split, tmp_path):
    summary, raw, _, _ = run(split, tmp_path / "out", new_scenario, options={"refine": False})
    assert summary["calls_by_node"] == {"rewrite": 5} and summary["samples"] == 5
    assert all(r["query"] == r["metadata"]["draft"] for r in raw)


def same_values(last, messages):
    query, values = _example(last)
    return json.dumps({"query": "Quick question for the team: " + query, "values": values})


def names_a_tool(last, messages):
    return json.dumps({"query": "Please run retrieve_data and aggregate_data on the customers of Peru.", "values": {}})


@pytest.mark.parametrize(
    "reply,refine,codes",
    [
        (same_values, keep_refined, {"same_values", "too_similar"}),
        (names_a_tool, keep_refined, {"names_tool"}),
        (new_scenario, '{"solvable": false, "query": "This cannot be done with these tools at all."}', {"unsolvable"}),
        (new_scenario, '{"solvable": true, "query": "How many records are there overall?"}', {"value_missing"}),
    ],
)
def test_pure_checks_reject_bad_rewrites(split, tmp_path, reply, refine, codes):
    _, samples, pool, _ = run(split, tmp_path / "out", reply, refine=refine)
    assert {p["rejected_by"]["code"] for p in pool} == codes, pool
    assert all(p["rejected_by"]["where"] == "check" for p in pool)


def test_unreadable_reply_goes_to_review(split, tmp_path):
    summary, samples, _, review = run(split, tmp_path / "out", '{"query": "no values key here at all"}')
    assert summary["review"] == 5 and not samples
    assert review[0]["raw"] == {"rewrite": '{"query": "no values key here at all"}'}
    assert review[0]["reasons"][0]["code"] == "missing_field"


def test_unreadable_refine_goes_to_review(split, tmp_path):
    summary, _, _, review = run(split, tmp_path / "out", new_scenario, refine="I think it is fine")
    assert summary["review"] == 5 and set(review[0]["raw"]) == {"refine"}


@pytest.mark.parametrize("case", _lines(FIXTURES / "expand_checks.jsonl"), ids=lambda c: c["name"])
def test_check_fixtures(case):
    got = expand.check_expansion(case["query"], case["exemplar"], case["slots"], case["values"], TOOLS)
    assert (got[0] if got else None) == case["code"], got
