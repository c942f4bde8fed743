"""The ``special`` construction graph on a real SLOT split with a scripted chat model: accepted
special samples validate and carry the ACEBench / ToolAssess answers; every pure check rejects a
bad rewrite with its code; an unreadable reply goes to review; the pure checks are data-driven
(``tests/fixtures/construct/special_checks.jsonl``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import build_slot_split, pair_lines
from scripted_chat import ScriptedChat, by_task

import benchsmith.construction.graphs.special as special
from benchsmith.construction import RoleModels, run_graph
from benchsmith.schemas import Sample, UserError, read_jsonl

MARKER = "You rewrite a user request into a special test case"
FIXTURES = Path(__file__).parent / "fixtures" / "construct"
TOOLS = [
    {"name": "filter_data", "description": "Keep rows.", "parameters": {"type": "object", "properties": {}}},
    {"name": "retrieve_data", "description": "Columns.", "parameters": {"type": "object", "properties": {}}},
]


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("special"), pair_lines()[:5])


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _field(last: str, name: str) -> str:
    return last.split(f"{name}: ", 1)[1].split("\nTask:" if name == "Draft" else "\nDraft:", 1)[0]


def polish(last: str, messages: list[dict]) -> str:
    """A good rewrite: the deterministic draft, politely."""
    return json.dumps({"query": "Hello, " + _field(last, "Draft")})


def echo_original(last: str, messages: list[dict]) -> str:
    return json.dumps({"query": _field(last, "Original")})


def run(split: Path, out: Path, reply, kinds=None) -> tuple[dict, list[dict], list[dict], list[dict]]:
    models = RoleModels(default=ScriptedChat(script=by_task(**{MARKER: reply})))
    options = {"kinds": kinds} if kinds else {}
    summary = run_graph("special", split, out, models=models, options=options)
    return (
        summary.to_dict(),
        _lines(out / "samples.jsonl"),
        _lines(out / "error_pool.jsonl"),
        _lines(out / "review.jsonl"),
    )


def test_accepted_special_samples_validate(split, tmp_path):
    summary, samples, pool, review = run(split, tmp_path / "out", polish)
    assert summary["items"] == 5 * 5 and not review
    # the first pair ("longer than five minutes") states no argument value: no incomplete / error_param
    assert {p["rejected_by"]["code"] for p in pool} == {"no_literal", "no_corruptible_value"}
    assert len(pool) == 2 and summary["samples"] == 23
    by_kind: dict[str, list[Sample]] = {}
    for s in read_jsonl(tmp_path / "out" / "samples.jsonl", Sample):
        by_kind.setdefault(s.categories[1], []).append(s)
        assert s.categories[0] == "special" and s.gold == [] and s.tools
        assert s.metadata["special"]["kind"] == s.categories[1]
    assert set(by_kind) == set(special.KINDS)
    for s in by_kind["incomplete"]:
        meta = s.metadata["special"]
        assert s.answer.kind == "exact" and s.answer.value == {meta["change"]["api"]: [meta["change"]["argument"]]}
        assert meta["record"]["category"] == "special_incomplete" and meta["record"]["ground_truth"] == s.answer.value
        assert not any(f in s.query for f in meta["change"]["forms"])
    for s in by_kind["error_param"]:
        change = s.metadata["special"]["change"]
        assert s.answer.value == {change["argument"]: [change["wrong"]]} and change["wrong"] in s.query
    for s in by_kind["irrelevant"]:
        assert s.answer.kind == "reference" and "limitations of the function" in s.answer.references[0]
    for kind in ("no_tool", "cannot_complete"):
        for s in by_kind[kind]:
            assert s.answer.value == {"label": kind} and s.metadata["special"]["record"]["label"] == kind
    ids = [s["id"] for s in samples]
    assert len(ids) == len(set(ids))


def test_picks_are_deterministic(split, tmp_path):
    _, first, _, _ = run(split, tmp_path / "a", polish, kinds="error_param,irrelevant")
    _, again, _, _ = run(split, tmp_path / "b", polish, kinds=["error_param", "irrelevant"])
    assert [s["query"] for s in first] == [s["query"] for s in again]
    assert {s["categories"][1] for s in first} == {"error_param", "irrelevant"}


@pytest.mark.parametrize(
    "kinds,reply,code",
    [
        ("incomplete", echo_original, "value_still_present"),
        ("irrelevant", echo_original, "unchanged"),
        ("no_tool", echo_original, "unchanged"),
        ("error_param", echo_original, "wrong_value_missing"),
        ("cannot_complete", '{"query": "Run filter_data on everything and delete the rows."}', "names_tool"),
        ("irrelevant", '{"query": "Hi there!"}', "bad_length"),
    ],
)
def test_pure_checks_reject_bad_rewrites(split, tmp_path, kinds, reply, code):
    summary, samples, pool, _ = run(split, tmp_path / "out", reply, kinds=kinds)
    codes = {p["rejected_by"]["code"] for p in pool if p["rejected_by"]["where"] == "check"}
    assert codes == {code}, pool
    assert not samples


def test_original_value_kept_is_rejected(split, tmp_path):
    def both(last, messages):
        return json.dumps({"query": _field(last, "Draft") + " I mean: " + _field(last, "Original")})

    _, samples, pool, _ = run(split, tmp_path / "out", both, kinds="error_param")
    assert not samples and {p["rejected_by"]["code"] for p in pool} == {
        "original_value_present",
        "no_corruptible_value",
    }


def test_fewshot_copy_is_rejected(split, tmp_path):
    reply = '{"query": "Please get me a taxi to the airport for three people at 6 am."}'
    _, samples, pool, _ = run(split, tmp_path / "out", reply, kinds="irrelevant")
    assert not samples and {p["rejected_by"]["code"] for p in pool} == {"copied_fewshot"}


def test_unreadable_reply_goes_to_review(split, tmp_path):
    summary, samples, _, review = run(split, tmp_path / "out", "sure! here is my rewrite", kinds="irrelevant")
    assert summary["review"] == 5 and not samples
    assert review[0]["raw"] == {"rewrite": "sure! here is my rewrite"}
    assert review[0]["reasons"][0]["code"] == "not_json"


def test_unknown_kind_is_a_user_error(split, tmp_path):
    with pytest.raises(UserError):
        run(split, tmp_path / "out", polish, kinds="incomplete,typo")


def _check_cases() -> list[dict]:
    return _lines(FIXTURES / "special_checks.jsonl")


@pytest.mark.parametrize("case", _check_cases(), ids=lambda c: c["name"])
def test_check_fixtures(case):
    got = special.check_rewrite(case["kind"], case["query"], case["original"], case["change"], TOOLS)
    assert (got[0] if got else None) == case["code"], got
