"""ToolAssess evaluator: fixture verdicts per mode, aggregate figures, TAS, robustness, self-test."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from helpers import EVAL_FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from scoring import metrics_of

from benchsmith.eval import score_cases
from benchsmith.eval.toolassess import ToolAssess, classification, tas, variance_weights
from benchsmith.eval.toolassess._plugin import ToolAssessRow
from benchsmith.schemas import UserError

FIXTURE = EVAL_FIXTURES / "toolassess_cases.jsonl"
CASES = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Every distinct record of the fixture as one ToolAssess JSONL file."""
    records = {}
    for c in CASES:
        records.setdefault(c["record"]["id"], c["record"])
    path = tmp_path_factory.mktemp("toolassess") / "toolassess.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records.values()), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def loaded(data):
    b = ToolAssess()
    return b, {c.id: c for c in b.load(data)}


def _pred(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("fx", CASES, ids=[c["name"] for c in CASES])
def test_fixture_case(fx, loaded):
    b, cases = loaded
    for mode, want in fx["expect"].items():
        r = b.score(cases[fx["record"]["id"]], _pred(fx["prediction"]), mode)
        assert {"ok": r.ok, "error_type": r.error_type, "score": round(r.score, 4)} == want, mode
        if "labels" in fx:  # selection: the record's (gold, predicted) true-tool / false-tool label
            assert [r.details["gold_label"], r.details["pred_label"]] == fx["labels"], mode


BY_HAND = json.loads((FIXTURE.parent / "toolassess_selection_by_hand.json").read_text(encoding="utf-8"))


def _approx(value, want):
    if isinstance(want, dict):
        for k, v in want.items():
            _approx(value[k], v)
    else:
        assert value == pytest.approx(want)


@pytest.mark.parametrize("mode", ["strict", "official"])
def test_selection_by_hand(tmp_path, mode):
    """ToolAssess's selection figures on six records computed by hand (see the fixture's 'about')."""
    path = tmp_path / "sel.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in BY_HAND["records"]), encoding="utf-8")
    b = ToolAssess()
    s = score_cases(b, b.load(path), BY_HAND["predictions"], mode).scores
    for key, want in BY_HAND["expect"].items():
        _approx(s[key], want)
    assert s["tas_inputs"]["selection.f1"] == pytest.approx(17 / 35)


def test_fixture_size():
    assert len(CASES) >= 15
    assert {c["record"]["task"] for c in CASES} == {"awareness", "selection", "multi"}


@pytest.mark.parametrize("mode", ["strict", "official"])
def test_selftest(loaded, mode):
    b, cases = loaded
    cs = list(cases.values())
    s = score_cases(b, cs, {c.id: b.gold_prediction(c) for c in cs}, mode).scores
    assert s["awareness"]["accuracy"] == s["awareness"]["f1"] == 1.0
    assert s["selection"]["f1"] == s["selection"]["record_accuracy"] == 1.0
    assert s["multi"]["asa"] == s["multi"]["psa"] == 1.0
    assert set(s["tas_inputs"]) == {
        f"{t}.{m}" for t in ("awareness", "selection") for m in ("accuracy", "precision", "recall", "f1")
    } | {"multi_awareness.asa", "multi_awareness.psa", "multi_selection.asa", "multi_selection.psa"}


def test_aggregate_figures(loaded):
    b, cases = loaded
    cs = list(cases.values())
    preds = {
        "aw-weather": "no_tool",
        "aw-capital": "no_tool",
        "aw-flight": "requires_tool",
        "sel-weather": '["get_weather", "send_email"]',
        "sel-none": "[]",
        "mt-trip": '["requires_tool", "requires_tool", "cannot_complete"]',
        "mt-office": '[["get_time"], ["send_email"]]',
    }
    s = score_cases(b, cs, preds, "strict").scores
    aw = s["awareness"]
    assert aw["accuracy"] == pytest.approx(1 / 3)
    # requires_tool: P 0/1, R 0/1; no_tool: P 1/2, R 1/1; cannot_complete: P 0/0, R 0/1
    assert aw["precision"] == pytest.approx((0 + 0.5 + 0) / 3)
    assert aw["recall"] == pytest.approx((0 + 1 + 0) / 3)
    sel = s["selection"]  # per record: sel-weather (true_tool, false_tool) wrong, sel-none right
    assert sel["accuracy"] == sel["record_accuracy"] == 0.5
    cand = s["selection_per_candidate"]  # 6 candidate decisions, one false positive (send_email)
    assert cand["accuracy"] == pytest.approx(5 / 6)
    assert s["multi"]["asa"] == 0.5 and s["multi"]["psa"] == pytest.approx((2 / 3 + 1) / 2)


def test_missing_predictions_count_as_wrong(loaded):
    b, cases = loaded
    s = score_cases(b, list(cases.values()), {}, "strict").scores
    assert s["awareness"]["accuracy"] == 0.0 and s["multi"]["asa"] == 0.0
    assert s["selection"]["per_class"]["true_tool"]["recall"] == 0.0


def test_variance_weights_and_tas():
    scores = {
        "m1": {"awareness.accuracy": 0.9, "awareness.f1": 0.8, "selection.f1": 0.6},
        "m2": {"awareness.accuracy": 0.7, "awareness.f1": 0.8, "selection.f1": 0.2},
        "m3": {"awareness.accuracy": 0.5, "awareness.f1": 0.8, "selection.f1": 0.4},
    }
    r = tas(scores)
    assert r["metric_weights"]["awareness"] == {"awareness.accuracy": 1.0, "awareness.f1": 0.0}
    assert r["situation_scores"]["m1"] == {"awareness": 0.9, "selection": 0.6}
    w = r["situation_weights"]
    assert w["awareness"] == pytest.approx(0.5) and sum(w.values()) == pytest.approx(1.0)  # equal variances
    assert r["tas"]["m1"] == pytest.approx(0.75)
    assert variance_weights({"only": {"a": 0.3, "b": 0.9}}) == {"a": 0.5, "b": 0.5}
    with pytest.raises(UserError):
        tas({"m1": {"a.x": 1.0}, "m2": {"a.y": 1.0}})
    assert tas({})["tas"] == {}


def test_classification_skips_absent_classes():
    f = classification([("a", "a")], ("a", "b", "c"))
    assert f["precision"] == f["recall"] == f["f1"] == 1.0 and set(f["per_class"]) == {"a"}


def test_bad_data_is_a_user_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "task": "selection", "tools": ["a"], "answer_tools": ["b"]}\n')
    with pytest.raises(UserError):
        ToolAssess().load(bad)
    bad.write_text('{"id": "x", "task": "awareness", "label": "perhaps"}\n')
    with pytest.raises(UserError):
        ToolAssess().load(bad)


def test_repeated_id_is_a_user_error(tmp_path):
    """An id seen before (earlier in the file, or in an earlier file of the folder) is refused at
    the line that repeats it; ids that are merely alike are not."""
    aw = {"task": "awareness", "label": "no_tool", "query": "q"}
    one = tmp_path / "one"
    one.mkdir()
    (one / "a.jsonl").write_text(
        "".join(json.dumps({"id": i, **aw}) + "\n" for i in ("x", "x2", "x")), encoding="utf-8"
    )
    with pytest.raises(UserError, match=r"a\.jsonl:3: id x appears twice"):
        ToolAssess().load(one)
    two = tmp_path / "two"
    two.mkdir()
    (two / "a.jsonl").write_text(json.dumps({"id": "x", **aw}) + "\n", encoding="utf-8")
    (two / "b.jsonl").write_text("".join(json.dumps({"id": i, **aw}) + "\n" for i in ("y", "X", "x")), encoding="utf-8")
    with pytest.raises(UserError, match=r"b\.jsonl:3: id x appears twice"):
        ToolAssess().load(two)
    (two / "b.jsonl").write_text("".join(json.dumps({"id": i, **aw}) + "\n" for i in ("y", "X")), encoding="utf-8")
    assert [c.id for c in ToolAssess().load(two)] == ["x", "y", "X"]
    # a record without an id is named after its file and line: the same name twice is refused too
    (two / "b.jsonl").write_text(json.dumps(aw) + "\n" + json.dumps({"id": "b-1", **aw}) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"b\.jsonl:2: id b-1 appears twice"):
        ToolAssess().load(two)


@pytest.mark.parametrize("mode", ["strict", "official"])
def test_rows_are_slim_and_metrics_pure(loaded, mode):
    """A record's row holds a few numbers and labels (no case input, no details); the scores are
    a function of the rows alone, the same on every call."""
    b, cases = loaded
    cs = list(cases.values())
    preds = {c.id: b.gold_prediction(c) for c in cs[::2]}  # the others missing
    run = score_cases(b, cs, preds, mode)
    rows = [b.row(c, r, mode) for c, r in zip(cs, run.records)]
    assert all(isinstance(r, ToolAssessRow) and _slim(r) for r in rows)
    assert b.metrics(rows, mode) == b.metrics(list(rows), mode) == run.scores
    assert metrics_of(b, cs, run.records[::-1], mode)["selection"] == run.scores["selection"]  # counts: any order


def _slim(row) -> bool:
    def small(v) -> bool:
        if isinstance(v, tuple):
            return len(v) <= 8 and all(small(x) for x in v)
        return v is None or isinstance(v, (bool, int, float)) or (isinstance(v, str) and len(v) <= 200)

    return all(small(getattr(row, f.name)) for f in dataclasses.fields(row))


@settings(max_examples=80, deadline=None)
@given(
    pred=st.one_of(
        st.text(max_size=60),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=15),
            lambda k: (
                st.lists(k, max_size=4)
                | st.dictionaries(st.sampled_from(["label", "tools", "name", "x"]), k, max_size=3)
            ),
            max_leaves=12,
        ).map(json.dumps),
    ),
    cid=st.sampled_from(["aw-weather", "sel-weather", "sel-none", "mt-trip", "mt-office"]),
    mode=st.sampled_from(["strict", "official"]),
)
def test_random_predictions_never_raise(pred, cid, mode):
    r = _BENCH.score(_BY_ID[cid], pred, mode)
    assert 0.0 <= r.score <= 1.0 and (r.ok or r.error_type)


def _load_all():
    import tempfile

    records = {}
    for c in CASES:
        records.setdefault(c["record"]["id"], c["record"])
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in records.values()), encoding="utf-8")
        b = ToolAssess()
        return b, {c.id: c for c in b.load(p)}


_BENCH, _BY_ID = _load_all()
