"""GTA evaluator: fixture verdicts per mode (the official ones checked against GTA's own code),
the executor's checks behind InstAcc, the official >100% figures, robustness, self-test."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest
from helpers import EVAL_FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from scoring import metrics_of

from benchsmith.eval import score_cases
from benchsmith.eval.gta import (
    GTA,
    GTA_OFFICIAL,
    GTA_STRICT,
    GTARules,
    category_counts,
    check_call,
    f1_from_counts,
    parse_final,
    parse_turn,
    tool_specs,
    whitelist_pass,
)
from benchsmith.eval.gta._plugin import GTARow

ROOT = EVAL_FIXTURES
DATA = ROOT / "gta_data"
LINES = [
    json.loads(line) for line in (ROOT / "gta_cases.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
]
CASES = [x for x in LINES if "expect" in x]
AGGREGATES = [x for x in LINES if "expect_aggregate" in x]
DETAILS = (
    "inst",
    "tool",
    "arg",
    "summ",
    "called",
    "call_error",
    "imggen",
    "pred_tools",
    "gold_tools",
    "calls",
    "call_errors",
)


def bag_of_words_cosine(a: str, b: str, bias: bool = False) -> float:
    """A deterministic stand-in for sentence embeddings; with ``bias`` every text also shares one
    component, as real embeddings do (so an empty text is not orthogonal to everything)."""
    x, y = Counter(re.findall(r"\w+", a.lower())), Counter(re.findall(r"\w+", b.lower()))
    if bias:
        x["__bias__"] += 1
        y["__bias__"] += 1
    norm = math.sqrt(sum(v * v for v in x.values())) * math.sqrt(sum(v * v for v in y.values()))
    return sum(x[k] * y[k] for k in x) / norm if norm else 0.0


def _bench(line: dict) -> GTA:
    if line.get("similarity") == "bias":
        return GTA(similarity=lambda a, b: bag_of_words_cosine(a, b, bias=True))
    return GTA(similarity=bag_of_words_cosine)


@pytest.fixture(scope="module")
def fixture_cases():
    return {c.id: c for c in GTA(similarity=None).load(DATA)}


def _cases(line: dict, fixture_cases: dict, tmp_path: Path) -> dict:
    if "sample" not in line:
        return fixture_cases
    (tmp_path / "dataset.json").write_text(json.dumps({"100": line["sample"]}), encoding="utf-8")
    return {c.id: c for c in GTA(similarity=None).load(tmp_path)}


def _pred(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _round(v):
    return round(v, 4) if isinstance(v, float) else v


@pytest.mark.parametrize("fx", CASES, ids=[c["name"] for c in CASES])
def test_fixture_case(fx, fixture_cases, tmp_path):
    cases = _cases(fx, fixture_cases, tmp_path)
    for mode, want in fx["expect"].items():
        r = _bench(fx).score(cases[fx["id"]], _pred(fx["prediction"]), mode)
        got = {"ok": r.ok, "error_type": r.error_type, "score": round(r.score, 4)}
        got.update({k: _round(r.details[k]) for k in DETAILS if k in r.details})
        got["crash"] = bool(r.details.get("official_crash"))
        assert got == want, mode


def _get(d, path: str):
    for part in path.split("."):
        d = d.get(part) if isinstance(d, dict) else None
    return d


@pytest.mark.parametrize("fx", AGGREGATES, ids=[c["name"] for c in AGGREGATES])
def test_fixture_aggregate(fx, fixture_cases, tmp_path):
    cases = _cases(fx, fixture_cases, tmp_path)
    selected = [cases[i] for i in fx["predictions"]]
    preds = {i: _pred(p) for i, p in fx["predictions"].items()}
    for mode, want in fx["expect_aggregate"].items():
        scores = score_cases(_bench(fx), selected, preds, mode).scores
        got = {k: (True if isinstance(_get(scores, k), str) else _round(_get(scores, k))) for k in want}
        assert got == want, mode


def test_fixture_size_and_modes():
    assert len(CASES) >= 40 and len(AGGREGATES) >= 4
    assert sum(c["expect"]["strict"] != c["expect"]["official"] for c in CASES) >= 15
    assert all(a["expect_aggregate"]["strict"] != a["expect_aggregate"]["official"] for a in AGGREGATES)


def test_load_layout(fixture_cases):
    cases = fixture_cases
    assert {c.category for c in cases.values()} == {"step:tool", "step:answer", "e2e"}
    assert cases["0#3"].input["dialogs"][-1]["role"] == "tool" and len(cases["0#3"].input["dialogs"]) == 3
    assert cases["0"].input["dialogs"] == [{"role": "user", "content": cases["0"].input["dialogs"][0]["content"]}]
    assert [c["name"] for c in cases["4"].gold["tool_calls"]] == ["CountGivenObject", "CountGivenObject", "Calculator"]
    # toolmeta.json (GTA's executor reads the inputs from it) wins over the sample's own entry
    assert cases["0#1"].gold["specs"]["OCR"] == ({"image": "image"}, ("image",))
    assert cases["6#3"].gold["specs"]["DrawBox"][0] == {"image": "image", "bbox": "text", "annotation": "text"}
    assert cases["7#1"].category == "step:answer" and not cases["7#1"].gold["final"]


def test_cases_survive_a_json_round_trip(fixture_cases):
    """Runs save cases as JSON and read them back: the scorer must give the same verdicts."""
    from benchsmith.eval import EvalCase

    b = GTA(similarity=bag_of_words_cosine)
    for fx in CASES:
        if "sample" in fx:
            continue
        case = fixture_cases[fx["id"]]
        again = EvalCase.model_validate(json.loads(case.model_dump_json()))
        for mode in ("strict", "official"):
            assert b.score(again, _pred(fx["prediction"]), mode) == b.score(case, _pred(fx["prediction"]), mode)


def test_executor_checks(tmp_path):
    (tmp_path / "a.png").write_bytes(b"x")
    specs = tool_specs(
        [
            {
                "name": "T",
                "inputs": [
                    {"name": "n", "type": "int"},
                    {"name": "x", "type": "float", "optional": True},
                    {"name": "b", "type": "bool", "optional": True},
                    {"name": "img", "type": "image", "optional": True},
                ],
            }
        ]
    )

    def err(**args):
        return check_call({"name": "T", "arguments": args}, specs, str(tmp_path))

    assert err(n=3) is None and err(n=3.7) is None and err(n="7") is None and err(n=True) is None
    assert err(n="3.5") == err(n=None) == err(n=[1]) == err(n="seven") == "bad_value"
    assert err(n=1, x="2.5") is None and err(n=1, x="nan") is None and err(n=1, x="about 2") == "bad_value"
    assert err(n=1, b="no") is None and err(n=1, b=None) is None
    assert err(n=1, img="a.png") is None and err(n=1, img="b.png") == err(n=1, img=5) == "bad_value"
    assert err(x=1.0) == "missing_argument" and err(n=1, y=2) == "unknown_argument"
    assert check_call({"name": "T", "arguments": None}, specs) == "bad_arguments"
    assert check_call({"name": "U", "arguments": {}}, specs) == "unknown_tool"


@pytest.mark.parametrize("mode", ["strict", "official"])
def test_selftest(mode):
    b = GTA(similarity=None)  # gold subjective answers are reference copies: no embedder needed
    cases = b.load(DATA)
    run = score_cases(b, cases, {c.id: b.gold_prediction(c) for c in cases}, mode)
    failing = [r.id for r in run.records if not r.ok]
    step, e2e = run.scores["step_by_step"], run.scores["end_to_end"]
    assert step["tool_acc"] == step["arg_acc"] == step["summ_acc"] == e2e["ans_acc"] == 1.0
    assert step["tool_call_errors"] == e2e["tool_call_errors"] == 0
    if mode == "strict":
        assert failing == [] and step["inst_acc"] == 1.0
        assert all(f["f1"] == 1.0 for f in e2e["tool_f1"].values())
    else:
        # GTA scores the non-final answer turn of sample 7 against the sample's answer
        assert failing == ["7#1"]
        # image-generation answer turns are counted as hits but not in the total: 32 hits / (20 + 7)
        assert step["inst_acc"] == pytest.approx(32 / 27)
        assert all(f["f1"] == pytest.approx(1.0, abs=1e-4) for f in e2e["tool_f1"].values())
        assert e2e["ans_acc_w_imggen"] == 1.0


@pytest.mark.parametrize("mode", ["strict", "official"])
def test_rows_are_slim_and_metrics_pure(fixture_cases, mode):
    """A record's row holds flags, counts and short ids (no case input, no details); the scores
    are a function of the rows alone, the same on every call."""
    b = GTA(similarity=None)
    cases = list(fixture_cases.values())
    preds = {c.id: b.gold_prediction(c) for c in cases[::2]}  # the others missing
    run = score_cases(b, cases, preds, mode)
    rows = [b.row(c, r, mode) for c, r in zip(cases, run.records)]
    assert all(isinstance(r, GTARow) and _slim(r) for r in rows)
    assert b.metrics(rows, mode) == b.metrics(list(rows), mode) == run.scores
    assert metrics_of(b, cases, run.records, mode) == run.scores
    e2e = [r for r in rows if r.category == "e2e"]
    assert all(len(r.counts) == 12 for r in e2e)
    # image-generation samples (2, 6, 8, 10) are answered in neither mode, the others in both;
    # a step row names its sample (SummAcc counts each answered sample once)
    for r in rows:
        sample = r.id.split("#")[0]
        assert r.answered == (sample not in ("2", "6", "8", "10")), r.id
        assert r.sample == (sample if "#" in r.id else None), r.id


def _slim(row) -> bool:
    def small(v) -> bool:
        if isinstance(v, tuple):
            return len(v) <= 12 and all(small(x) for x in v)
        return v is None or isinstance(v, (bool, int, float)) or (isinstance(v, str) and len(v) <= 200)

    return all(small(getattr(row, f.name)) for f in dataclasses.fields(row))


def test_official_category_f1_above_one(fixture_cases):
    b = GTA(similarity=None)
    e2e = [fixture_cases["4"]]
    pred = {
        "4": json.dumps(
            {
                "answer": "7",
                "tool_calls": [{"name": "CountGivenObject", "arguments": {}}, {"name": "Calculator", "arguments": {}}],
            }
        )
    }
    official = score_cases(b, e2e, pred, "official").scores["end_to_end"]["tool_f1"]["logic"]
    strict = score_cases(b, e2e, pred, "strict").scores["end_to_end"]["tool_f1"]["logic"]
    assert official["precision"] == pytest.approx(3 / (2 + 1e-5)) and official["f1"] > 1.0
    assert strict["precision"] == 1.0 and strict["recall"] == pytest.approx(2 / 3) and strict["f1"] <= 1.0
    assert category_counts(["OCR", "OCR"], ["OCR"], GTA_STRICT)["perception"] == {"pred": 2, "gold": 1, "tp": 1}
    assert category_counts(["f"], ["f"], GTA_STRICT, {"f": "logic"})["logic"] == {"pred": 1, "gold": 1, "tp": 1}


def test_settings_without_predictions_are_null(fixture_cases):
    b = GTA(similarity=None)
    all_cases = list(fixture_cases.values())
    preds = {c.id: b.gold_prediction(c) for c in all_cases if c.category == "e2e"}
    scores = score_cases(b, all_cases, preds, "strict").scores
    assert scores["step_by_step"] is None and scores["end_to_end"]["ans_acc"] == 1.0


def test_no_embedder_is_a_failed_record(fixture_cases):
    case = fixture_cases["1#3"]
    r = GTA(similarity=None).score(case, json.dumps({"content": "A picnic by the lake."}), "strict")
    assert not r.ok and r.error_type == "no_embedder"

    def broken(a: str, b: str) -> float:
        raise RuntimeError("model missing")

    r = GTA(similarity=broken).score(case, json.dumps({"content": "A picnic."}), "strict")
    assert r.error_type == "no_embedder"
    r = GTA(similarity=None).score(
        fixture_cases["8"],
        json.dumps(
            {
                "tool_calls": [
                    {"name": "ImageStylization", "arguments": {"image": "image/portrait_8.jpg", "instruction": "oil"}},
                    {"name": "AddText", "arguments": {"image": "image/portrait_8.jpg", "text": "Hi", "position": "mt"}},
                ]
            }
        ),
        "official",
    )
    assert r.error_type == "no_embedder"


def test_whitelist_rules():
    assert whitelist_pass("seven apples", [["7", "seven"]], None)
    assert not whitelist_pass("sevenfold", [["seven"]], None)
    assert not whitelist_pass("Paris", [["Paris"], ["France"]], None)  # every group must match
    assert whitelist_pass("Paris, France", [["paris"], ["france"]], [])
    assert not whitelist_pass("anything", [], None, GTA_STRICT)
    assert whitelist_pass("anything", [], None, GTA_OFFICIAL)  # GTA: 0 of 0 groups matched
    assert whitelist_pass("a $24 fee", [["$24"]], None, GTA_STRICT)
    assert not whitelist_pass("a $24 fee", [["$24"]], None, GTA_OFFICIAL)  # \b never matches before '$'
    assert whitelist_pass("a fee", [["", "x"]], None, GTA_OFFICIAL)  # an empty alias matches at a word boundary
    assert not whitelist_pass("a fee", [["", "x"]], None, GTA_STRICT)


def test_rules_name_each_difference():
    assert GTA.rules == {"strict": GTA_STRICT, "official": GTA_OFFICIAL}
    assert GTA.rules["official"] is GTA_OFFICIAL and GTA.rules["strict"] is GTA_STRICT
    assert isinstance(GTA_STRICT, GTARules) and (GTA_STRICT.mode, GTA_OFFICIAL.mode) == ("strict", "official")
    # every rule is a choice where the modes differ
    fields = [f.name for f in dataclasses.fields(GTARules) if f.name != "mode"]
    assert fields and [f for f in fields if getattr(GTA_STRICT, f) == getattr(GTA_OFFICIAL, f)] == []


def test_rules_of_the_pure_functions():
    two = json.dumps({"tool_calls": [{"name": "OCR", "arguments": {}}, {"name": "Calculator", "arguments": {}}]})
    assert len(parse_turn(two)["tool_calls"]) == 2  # strict by default
    assert [c["name"] for c in parse_turn(two, GTA_OFFICIAL)["tool_calls"]] == ["OCR"]
    trajectory = json.dumps([{"role": "assistant", "tool_calls": json.loads(two)["tool_calls"]}])
    assert len(parse_final(trajectory)[1]) == 2 and len(parse_final(trajectory, GTA_OFFICIAL)[1]) == 1
    assert f1_from_counts(0, 0, 0) == {"precision": None, "recall": None, "f1": None}
    assert f1_from_counts(0, 0, 0, GTA_OFFICIAL) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


_call = st.dictionaries(
    st.sampled_from(["name", "arguments", "function", "type"]),
    st.one_of(
        st.text(max_size=10),
        st.none(),
        st.integers(),
        st.sampled_from(["OCR", " OCR"]),
        st.dictionaries(
            st.sampled_from(["image", "k", "query", "x"]),
            st.one_of(st.text(max_size=5), st.integers(), st.none()),
            max_size=2,
        ),
    ),
    max_size=3,
)
_turns = st.one_of(
    st.text(max_size=100),
    st.dictionaries(
        st.sampled_from(["thought", "tool_calls", "content", "answer"]),
        st.one_of(
            st.none(),
            st.text(max_size=20),
            st.integers(),
            st.lists(st.one_of(st.text(max_size=5), st.integers(), _call), max_size=3),
        ),
        max_size=4,
    ).map(json.dumps),
    st.lists(
        st.dictionaries(
            st.sampled_from(["role", "content", "tool_calls"]),
            st.one_of(
                st.text(max_size=10), st.none(), st.lists(st.integers(), max_size=2), st.lists(_call, max_size=2)
            ),
            max_size=3,
        ),
        max_size=3,
    ).map(json.dumps),
)
_CASES = GTA(similarity=None).load(DATA)


@settings(max_examples=80, deadline=None)
@given(
    pred=_turns,
    cid=st.sampled_from(["0#1", "0#5", "1#3", "2#3", "3#3", "7#1", "0", "1", "2", "4", "8"]),
    mode=st.sampled_from(["strict", "official"]),
)
def test_random_predictions_never_raise(pred, cid, mode):
    b = GTA(similarity=bag_of_words_cosine)
    case = next(c for c in _CASES if c.id == cid)
    r = b.score(case, pred, mode)
    assert 0.0 <= r.score <= 1.0 and (r.ok or r.error_type)


@settings(max_examples=25, deadline=None)
@given(preds=st.lists(_turns, min_size=len(_CASES), max_size=len(_CASES)))
def test_strict_inst_acc_never_exceeds_one(preds):
    b = GTA(similarity=bag_of_words_cosine)
    scores = score_cases(b, _CASES, {c.id: p for c, p in zip(_CASES, preds)}, "strict").scores
    assert 0.0 <= scores["step_by_step"]["inst_acc"] <= 1.0
    assert all(f["f1"] is None or f["f1"] <= 1.0 for f in scores["end_to_end"]["tool_f1"].values())
