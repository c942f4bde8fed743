"""Label Studio configs per sample kind, task payloads and the annotation result round trip.

Cases are data: tests/fixtures/annotation/samples.jsonl holds a sample of each kind with its
expected kind, the keys of its task data and the expected pre-annotation."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from label_studio_sdk.label_interface import LabelInterface

from benchsmith.annotation._private.configs import (
    DECISIONS,
    INDEX_FLAG,
    KINDS,
    REASONS,
    STAGES,
    VERDICTS,
    Review,
    _el,
    label_config,
    parse_result,
    result_for,
    review_text,
)
from benchsmith.annotation._private.payloads import (
    MODEL_VERSION,
    OBSERVATION_LIMIT,
    sample_kind,
    task_payload,
)
from benchsmith.construction.checks import CheckReport
from benchsmith.schemas import CheckResult, Sample, UserError

FIXTURES = Path(__file__).parent / "fixtures" / "annotation"
CASES = [
    json.loads(line)
    for path in sorted(FIXTURES.glob("*.jsonl"))
    for line in path.read_text(encoding="utf-8").splitlines()
    if line.strip()
]
PROV = {"source": "test", "method": "manual", "created_at": "2024-01-01T00:00:00Z"}


def _checks(case: dict) -> CheckReport | None:
    if "checks" not in case:
        return None
    results = [CheckResult(**c) for c in case["checks"]]
    return CheckReport(all(r.ok for r in results), results)


def _task(case: dict, stage: str = "review", reviews=()) -> dict:
    sample = Sample.model_validate(case["sample"])
    return task_payload(sample, sample_kind(sample), _checks(case), None, stage=stage, reviews=reviews)


def _by_case():
    return pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])


# ------------------------------------------------------------------ configs ----


def test_fixture_covers_every_kind():
    assert {c["kind"] for c in CASES} == set(KINDS)


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("kind", KINDS)
def test_config_is_valid_label_studio_xml(kind, stage):
    config = label_config(kind, stage)
    root = ET.fromstring(config)  # well-formed
    assert root.tag == "View"
    LabelInterface(config).validate()  # the SDK's schema, unique names and toName checks
    names = [e.get("name") for e in root.iter() if e.get("name")]
    assert len(names) == len(set(names))
    controls = {e.get("name"): e for e in root.iter() if e.get("toName")}
    assert {"decision", "reasons", "correction", "comment"} <= set(controls)
    assert controls["decision"].get("required") == "true"
    assert [c.get("value") for c in controls["decision"]] == list(DECISIONS)
    assert [c.get("value") for c in controls["reasons"]] == list(REASONS)
    assert controls["reasons"].get("choice") == "multiple"
    for element in controls.values():
        assert element.get("toName") in names
    step_controls = {"verdict_" + INDEX_FLAG, "correction_" + INDEX_FLAG}
    if kind == "chain":
        repeater = root.find(".//Repeater")
        assert repeater is not None and repeater.get("on") == "$steps" and repeater.get("indexFlag") == INDEX_FLAG
        inside = {e.get("name") for e in repeater.iter() if e.get("toName")}
        assert inside == step_controls
        assert [c.get("value") for c in controls["verdict_" + INDEX_FLAG]] == list(VERDICTS)
    else:
        assert root.find(".//Repeater") is None and not step_controls & set(controls)
    if kind == "dialogue":
        paragraphs = root.find(".//Paragraphs")
        assert paragraphs.get("value") == "$dialogue" and paragraphs.get("layout") == "dialogue"
    shown = {e.get("value") for e in root.iter("Text")}
    assert ({"$review_1", "$review_2"} <= shown) == (stage == "adjudicate")


def test_unknown_kind_or_stage_is_a_user_error():
    with pytest.raises(UserError, match="unknown sample kind"):
        label_config("table")
    with pytest.raises(UserError, match="unknown annotation stage"):
        label_config("query", "final")


def test_attribute_escaping_round_trips_through_xml():
    nasty = "a < b & \"c\" 'd' ]]> \n\t end"
    element = ET.fromstring(_el("View", {"style": nasty}, [_el("Choice", {"value": nasty})]))
    assert element.get("style") == nasty and element[0].get("value") == nasty


# -------------------------------------------------------------- task data ----


def _variables(config: str) -> set[str]:
    return {v for e in ET.fromstring(config).iter() for v in e.attrib.values() if v.startswith("$")}


def _resolve(data: dict, path: str):
    """Resolve a Label Studio data path such as ``$steps[3].call`` in ``data`` (KeyError/IndexError if absent)."""
    value = data
    for key, index in re.findall(r"\.?([A-Za-z_]\w*)|\[(\d+)\]", path.lstrip("$")):
        value = value[key] if key else value[int(index)]
    return value


@_by_case()
@pytest.mark.parametrize("stage", STAGES)
def test_every_config_variable_is_in_the_task_data(case, stage):
    task = _task(case, stage)
    data = task["data"]
    assert json.loads(json.dumps(data)) == data  # JSON-able
    config = label_config(case["kind"], stage)
    for variable in _variables(config):
        if INDEX_FLAG in variable:
            for i in range(len(data["steps"])):
                value = _resolve(data, variable.replace(INDEX_FLAG, str(i)))
                assert isinstance(value, str) and value, (variable, i)
        else:
            value = _resolve(data, variable)
            assert value not in (None, "", []) or variable == "$steps", variable
    if case["kind"] == "dialogue":
        assert all(isinstance(m["name"], str) and isinstance(m["text"], str) for m in data["dialogue"])


@_by_case()
def test_kind_and_data_keys(case):
    sample = Sample.model_validate(case["sample"])
    assert sample_kind(sample) == case["kind"]
    data = _task(case)["data"]
    assert sorted(data) == case["data_keys"]
    assert data["bs_id"] == sample.id
    if case["kind"] == "chain":
        assert [s["idx"] for s in data["steps"]] == list(range(len(sample.gold)))
        assert [s["verdict"] for s in data["steps"]] == [s.verdict or "" for s in sample.gold]
    for text in case.get("expected_text", []):
        assert text in data["expected"]


@_by_case()
def test_pre_annotation(case):
    task = _task(case)
    expected = case["prediction"]
    if expected is None:
        assert task["predictions"] == []
        return
    (prediction,) = task["predictions"]
    assert prediction["model_version"] == MODEL_VERSION
    assert prediction["score"] == pytest.approx(expected["score"], abs=1e-3)
    review = parse_result(case["kind"], prediction["result"])
    assert review.decision == expected["decision"]
    assert review.reasons == expected["reasons"]
    assert review.step_verdicts == {int(k): v for k, v in expected["step_verdicts"].items()}


def _expand(config: str, steps: int) -> str:
    """The config as Label Studio renders it for ``steps`` items: the Repeater unrolled."""
    root = ET.fromstring(config)
    for parent in list(root.iter()):
        for position, child in enumerate(list(parent)):
            if child.tag != "Repeater":
                continue
            parent.remove(child)
            template = "".join(ET.tostring(c, encoding="unicode") for c in child)
            copies = [ET.fromstring(template.replace(INDEX_FLAG, str(i))) for i in range(steps)]
            for offset, copy in enumerate(copies):
                parent.insert(position + offset, copy)
    return ET.tostring(root, encoding="unicode")


@_by_case()
def test_pre_annotation_is_a_valid_prediction_for_the_config(case):
    task = _task(case)
    steps = len(task["data"].get("steps", []))
    interface = LabelInterface(_expand(label_config(case["kind"]), steps))
    for prediction in task["predictions"]:
        assert interface.validate_prediction(prediction, return_errors=True) == []


def test_markup_characters_reach_the_data_unchanged():
    (case,) = [c for c in CASES if c["case"] == "query with markup characters"]
    task = _task(case)
    assert task["data"]["query"] == case["sample"]["query"]
    assert json.loads(json.dumps(task))["data"]["query"] == case["sample"]["query"]
    assert "Yes <b>& \"so\" 'on'" in task["data"]["answer"]
    # the data never enters the config, so the config stays the same well-formed XML
    ET.fromstring(label_config("query"))
    review = Review(decision="fix", correction=case["sample"]["query"], comment="</TextArea> & \"'")
    assert parse_result("query", json.loads(json.dumps(result_for("query", review)))) == review


def test_long_observations_and_tool_messages_are_truncated():
    long_text = "x" * 5000
    sample = Sample(
        query="Read the log of build 17 please.",
        provenance=PROV,
        gold=[
            {"call": {"name": "read_log", "arguments": {"build": 17}}, "observation": long_text},
            {"call": {"name": "read_log", "arguments": {"build": 18}}, "observation": {"lines": ["y" * 100] * 50}},
            {"call": {"name": "read_log", "arguments": {"build": 19}}, "observation": "short"},
        ],
    )
    steps = task_payload(sample)["data"]["steps"]
    for step in steps[:2]:
        assert len(step["observation"]) < OBSERVATION_LIMIT + 60
        assert step["observation"].endswith("more characters]") and "[truncated: " in step["observation"]
    assert steps[0]["observation"].startswith("x" * OBSERVATION_LIMIT)
    assert steps[1]["observation"].startswith('{"lines": ["yyy')
    assert steps[2]["observation"] == "short"
    dialogue = Sample(
        dialogue=[
            {"role": "user", "content": "Show me the log of build 17."},
            {"role": "assistant", "tool_calls": [{"name": "read_log", "arguments": {"build": 17}}]},
            {"role": "tool", "name": "read_log", "content": long_text},
            {"role": "assistant", "content": "Here it is."},
        ],
        provenance=PROV,
    )
    messages = task_payload(dialogue)["data"]["dialogue"]
    assert [m["name"] for m in messages] == ["user", "assistant", "tool (read_log)", "assistant"]
    assert messages[1]["text"] == 'call: {"name": "read_log", "arguments": {"build": 17}}'
    assert "[truncated: 3500 more characters]" in messages[2]["text"]


def test_adjudication_data_shows_both_reviews():
    sample = Sample(query="How many albums did Iron Maiden release?", provenance=PROV)
    first = Review(decision="accept")
    second = {"user": 7, "decision": "reject", "reasons": ["wrong_answer"], "correction": '{"answer": 17}'}
    data = task_payload(sample, "query", stage="adjudicate", reviews=[first, second])["data"]
    assert data["review_1"] == "decision: accept"
    assert data["review_2"] == 'decision: reject\nreasons: wrong_answer\ncorrected version:\n{"answer": 17}'
    assert task_payload(sample, "query", stage="adjudicate")["data"]["review_2"] == review_text(None)
    assert "review_1" not in task_payload(sample, "query")["data"]


def test_verification_and_prescreen_feed_the_pre_annotation():
    verification = {
        "status": "rejected",
        "method": "quality-checks",
        "checks": [{"name": "near_duplicate", "ok": False, "code": "near_duplicate", "reason": "of bs-1"}],
    }
    sample = Sample(query="How many albums did Iron Maiden release?", provenance=PROV, verification=verification)
    (prediction,) = task_payload(sample, "query")["predictions"]
    review = parse_result("query", prediction["result"])
    assert (review.decision, review.reasons, prediction["score"]) == ("reject", ["duplicate"], 0.0)
    fresh = Sample(query="How many albums did Iron Maiden release?", provenance=PROV)
    task = task_payload(fresh, "query", None, {"model": "judge", "vote": "accept", "reason": "clear"})
    (prediction,) = task["predictions"]
    review = parse_result("query", prediction["result"])
    assert (review.decision, prediction["score"]) == ("accept", 1.0)
    assert "judge (accept): clear" in review.comment and "judge (accept): clear" in task["data"]["check_summary"]


# ------------------------------------------------------------- round trips ----

ROUND_TRIPS = [
    ("query", Review()),
    ("query", Review(decision="accept")),
    ("query", Review(decision="reject", reasons=["unclear_query", "duplicate", "other"], comment="see bs-12")),
    (
        "dialogue",
        Review(decision="fix", correction='{"gold": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}'),
    ),
    ("special", Review(decision="fix", reasons=["wrong_answer"], correction="Book a table for two.\nTonight.")),
    (
        "chain",
        Review(
            decision="fix",
            reasons=["wrong_call"],
            step_verdicts={0: "success", 3: "input_error"},
            corrections={3: '{"name": "get_weather", "arguments": {"city": "Rome"}}'},
            correction='{"query": "Q?"}',
        ),
    ),
    ("chain", Review(decision="reject", step_verdicts={12: "unable_to_accomplish"}, corrections={1: "drop this step"})),
]


@pytest.mark.parametrize("kind,review", ROUND_TRIPS)
def test_round_trip(kind, review):
    assert parse_result(kind, result_for(kind, review)) == review


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_REVIEWS = st.builds(
    Review,
    decision=st.sampled_from([None, *DECISIONS]),
    reasons=st.lists(st.sampled_from(REASONS), max_size=4),
    step_verdicts=st.dictionaries(st.integers(0, 30), st.sampled_from(VERDICTS), max_size=5),
    corrections=st.dictionaries(st.integers(0, 30), _TEXT, max_size=3),
    correction=_TEXT,
    comment=_TEXT,
)


@settings(max_examples=150, deadline=None)
@given(review=_REVIEWS, kind=st.sampled_from(KINDS))
def test_round_trip_property(review, kind):
    if kind != "chain":
        review = review.model_copy(update={"step_verdicts": {}, "corrections": {}})
    results = json.loads(json.dumps(result_for(kind, review)))
    assert parse_result(kind, results) == review


def test_parse_result_reads_label_studio_exports():
    results = [
        {
            "id": "a1",
            "origin": "manual",
            "from_name": "decision",
            "to_name": "query",
            "type": "choices",
            "value": {"choices": ["fix"]},
        },
        {
            "id": "a2",
            "from_name": "reasons",
            "to_name": "query",
            "type": "choices",
            "value": {"choices": ["other", "wrong_call"]},
        },
        {
            "id": "a3",
            "from_name": "verdict_2",
            "to_name": "call_2",
            "type": "choices",
            "value": {"choices": ["input_error"]},
        },
        {
            "id": "a4",
            "from_name": "correction_2",
            "to_name": "call_2",
            "type": "textarea",
            "value": {"text": ['{"name": "f",', '"arguments": {}}']},
        },
        {"id": "a5", "from_name": "correction", "to_name": "query", "type": "textarea", "value": {"text": []}},
    ]
    review = parse_result("chain", results)
    assert review == Review(
        decision="fix",
        reasons=["wrong_call", "other"],
        step_verdicts={2: "input_error"},
        corrections={2: '{"name": "f",\n"arguments": {}}'},
    )


@pytest.mark.parametrize(
    "kind,results,message",
    [
        (
            "query",
            [{"from_name": "stars", "to_name": "query", "type": "rating", "value": {"rating": 3}}],
            "no control 'stars'",
        ),
        (
            "query",
            [{"from_name": "verdict_0", "to_name": "call_0", "type": "choices", "value": {"choices": ["success"]}}],
            "no control 'verdict_0'",
        ),
        (
            "query",
            [{"from_name": "decision", "to_name": "query", "type": "choices", "value": {"choices": ["maybe"]}}],
            "unknown value at decision",
        ),
        (
            "chain",
            [{"from_name": "verdict_1", "to_name": "call_1", "type": "choices", "value": {"choices": ["fine"]}}],
            "unknown value at step_verdicts",
        ),
        (
            "query",
            [{"from_name": "comment", "to_name": "query", "type": "textarea", "value": {"text": "not a list"}}],
            "expected value.text to be a list",
        ),
        ("query", ["decision"], "not an object"),
    ],
)
def test_parse_result_rejects_foreign_results(kind, results, message):
    with pytest.raises(UserError, match=re.escape(message)):
        parse_result(kind, results)


def test_step_results_only_for_chains():
    with pytest.raises(UserError, match="cannot have per-step"):
        result_for("query", Review(decision="accept", step_verdicts={0: "success"}))


# ------------------------------------------------------ real Label Studio ----


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES)
def test_configs_and_tasks_on_a_real_server(label_studio, stage):
    """Per kind: the server accepts the config and one task with its pre-annotation; an annotation
    made with result_for comes back from the server and parses to the same Review."""
    client = label_studio.client()
    first = {}
    for case in CASES:
        first.setdefault(case["kind"], case)
    first["query"] = next(c for c in CASES if c["case"] == "query with final answer")
    reviews = [Review(decision="accept"), Review(decision="reject", reasons=["wrong_call"])]
    me = client.users.whoami().id
    for kind, case in first.items():
        project = client.projects.create(title=f"configs {kind} {stage}", label_config=label_config(kind, stage))
        task = _task(case, stage, reviews)
        resp = client.projects.import_tasks(id=project.id, request=[task], return_task_ids=True)
        ids = getattr(resp, "task_ids", None) or (getattr(resp, "model_extra", None) or {}).get("task_ids")
        (task_id,) = ids
        stored = client.tasks.get(id=task_id)
        assert stored.data == task["data"]
        predictions = list(client.predictions.list(task=task_id))
        assert len(predictions) == len(task["predictions"])
        for p in predictions:
            assert parse_result(kind, p.result) == parse_result(kind, task["predictions"][0]["result"])
        review = (
            ROUND_TRIPS[5][1]
            if kind == "chain"
            else Review(decision="fix", reasons=["other"], correction='say "<why>" & go', comment="ok")
        )
        client.annotations.create(id=task_id, result=result_for(kind, review), completed_by=me)
        (annotation,) = client.annotations.list(id=task_id)
        assert parse_result(kind, annotation.result) == review
