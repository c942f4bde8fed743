"""NL2API evaluator: fixture verdicts per mode (executed on freshly built splits), robustness,
self-test on SLOT / SEL / REST splits and on the real NESTful data."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from helpers import TESTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scoring import metrics_of

from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db
from benchsmith.eval import score_cases
from benchsmith.eval.nl2api import NL2API, answers_match, intent_prf, parse_calls
from benchsmith.eval.nl2api._plugin import NL2APIRow

ROOT = TESTS
FIXTURE = ROOT / "fixtures" / "eval" / "nl2api_cases.jsonl"
CASES = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
NESTFUL = Path("/work/shared/data/nestful/executable-data.json")
PAIRS = (
    Path(__import__("benchsmith.construction.nl2api", fromlist=["x"]).__file__).parent / "data" / "chinook_pairs.jsonl"
)
SELFTEST_PAIRS = 40  # the first pairs of the embedded set, plus every pair the fixture uses


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    """SLOT, SEL and REST splits built from a subset of the embedded Chinook pairs."""
    root = tmp_path_factory.mktemp("nl2api-splits")
    wanted = {c["pair"] for c in CASES if "pair" in c}
    lines = PAIRS.read_text(encoding="utf-8").splitlines()
    keep = [x for n, x in enumerate(lines) if x.strip() and (n < SELFTEST_PAIRS or json.loads(x).get("id") in wanted)]
    pairs = root / "pairs.jsonl"
    pairs.write_text("\n".join(keep) + "\n", encoding="utf-8")
    db = chinook_db()
    for style in ("slot", "sel", "rest"):
        report = build_split(db, pairs, root / style, BuildOptions(style=style))
        assert report["verified"] == len(keep), report["rejected"]
    return root


@pytest.fixture(scope="module")
def loaded(splits):
    bench = NL2API()
    by_pair = {}
    for style in ("slot", "sel", "rest"):
        for case in bench.load(splits / style):
            by_pair[(style, case.meta["source_id"])] = case
    yield bench, by_pair
    bench.close()


def _pred(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("fx", CASES, ids=[c["name"] for c in CASES])
def test_fixture_case(fx, loaded, tmp_path):
    bench, by_pair = loaded
    if fx["split"] == "nestful":
        path = tmp_path / "nestful.json"
        path.write_text(json.dumps([fx["record"]]), encoding="utf-8")
        case = bench.load(path)[0]
    else:
        case = by_pair[(fx["split"], fx["pair"])]
    for mode, want in fx["expect"].items():
        r = bench.score(case, _pred(fx["prediction"]), mode)
        got = {
            "ok": r.ok,
            "error_type": r.error_type,
            "completion": r.details.get("completion"),
            "sequence_match": r.details.get("sequence_match"),
            "intent_f1": round(r.details.get("intent_f1", 0), 4),
            "slot_f1": round(r.details.get("slot_f1", 0), 4),
        }
        assert got == want, mode


def test_fixture_size_and_modes():
    assert len(CASES) >= 15
    assert any(c["expect"]["strict"] != c["expect"]["official"] for c in CASES)
    assert {c["split"] for c in CASES} == {"slot", "sel", "rest", "nestful"}


@pytest.mark.parametrize("style", ["slot", "sel", "rest"])
@pytest.mark.parametrize("mode", ["strict", "official"])
def test_selftest_splits(splits, style, mode):
    bench = NL2API()
    cases = bench.load(splits / style)
    run = score_cases(bench, cases, {c.id: bench.gold_prediction(c) for c in cases}, mode)
    bench.close()
    assert [r.id for r in run.records if not r.ok] == []
    assert run.scores["completion_rate"] == 1.0
    assert run.scores["intent"]["f1"] == 1.0 and run.scores["slot"]["f1"] == 1.0
    assert run.scores["full_sequence_accuracy"] == 1.0


@pytest.mark.skipif(not NESTFUL.is_file(), reason="NESTful data not present")
@pytest.mark.parametrize("mode", ["strict", "official"])
def test_selftest_nestful(mode):
    bench = NL2API()
    cases = bench.load(NESTFUL.parent)  # the folder: the spec file is skipped, the data file read
    assert len(cases) == 85 and all(c.category == "nestful" for c in cases)
    assert any("$" in json.dumps(c.gold["calls"]) for c in cases)
    run = score_cases(bench, cases, {c.id: bench.gold_prediction(c) for c in cases}, mode)
    assert all(r.ok for r in run.records)
    assert run.scores["intent"]["f1"] == 1.0 and run.scores["completion_rate"] is None


def test_aggregate_missing_and_errors(loaded):
    bench, by_pair = loaded
    cases = [by_pair[("slot", "chinook-001")], by_pair[("rest", "chinook-001")]]
    run = score_cases(bench, cases, {cases[0].id: "[]"}, "strict")
    assert run.scores["completion_rate"] == 0.0
    assert run.scores["error_types"] == {"empty_sequence": 1, "missing_prediction": 1}
    assert set(run.scores["by_category"]) == {"slot", "rest"}


@pytest.mark.parametrize("mode", ["strict", "official"])
def test_rows_are_slim_and_metrics_pure(loaded, mode):
    """A record's row holds its figures and completion (no case input, no details); the scores
    are a function of the rows alone, the same on every call, overall and per category."""
    bench, by_pair = loaded
    cases = list(by_pair.values())
    preds = {c.id: bench.gold_prediction(c) for c in cases[::2]}  # the others missing
    preds.update({c.id: "[]" for c in cases[1::4]})  # some empty sequences
    run = score_cases(bench, cases, preds, mode)
    rows = [bench.row(c, r, mode) for c, r in zip(cases, run.records)]
    assert all(isinstance(r, NL2APIRow) for r in rows)
    values = [getattr(r, f.name) for r in rows for f in dataclasses.fields(r)]
    assert all(v is None or isinstance(v, (bool, int, float, str)) for v in values)
    assert bench.metrics(rows, mode) == bench.metrics(list(rows), mode) == run.scores
    assert metrics_of(bench, cases, run.records, mode) == run.scores
    assert 0.0 < run.scores["completion_rate"] < 1.0
    assert run.scores["error_types"]["missing_prediction"] == sum(r.error_type == "missing_prediction" for r in rows)


def test_pure_helpers():
    assert intent_prf([], []) == (1.0, 1.0, 1.0)
    assert intent_prf(["a", "a"], ["a"]) == (0.5, 1.0, 2 / 3)
    assert answers_match([[0.1, "x"]], [[0.1000000001, "x"]], ordered=False, rules=NL2API.rules["strict"])
    assert answers_match([[1.5], [2]], [[2.0], [1.54]], ordered=False, rules=NL2API.rules["official"])
    assert not answers_match([[1]], [[1], [1]], ordered=False, rules=NL2API.rules["official"])
    assert parse_calls('{"tool_calls": [{"name": "f"}]}') == [{"name": "f", "arguments": {}, "label": None}]


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)
_calls = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(
                [
                    "filter_data",
                    "aggregate_data",
                    "retrieve_data",
                    "sort_data",
                    "count_tracks_by_milliseconds_above",
                    "nope",
                    "",
                ]
            ),
            "arguments": st.dictionaries(
                st.sampled_from(
                    [
                        "data_source",
                        "key_name",
                        "operator",
                        "value",
                        "aggregation",
                        "key_names",
                        "n",
                        "milliseconds_above",
                    ]
                ),
                st.sampled_from(
                    [
                        "$data_1$",
                        "$x$",
                        "$data_1.rows.0$",
                        "tracks.milliseconds",
                        "count",
                        "greater_than",
                        5,
                        -1,
                        None,
                        [],
                        {},
                    ]
                )
                | _json_values,
                max_size=5,
            ),
        },
        optional={"label": st.sampled_from(["data_1", "x", "filtered_2", None, "bad label", 3])},
    ),
    max_size=5,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pred=st.one_of(st.text(max_size=200), _calls.map(json.dumps), _json_values.map(json.dumps)),
    where=st.sampled_from(
        [("slot", "chinook-001"), ("sel", "chinook-002"), ("rest", "chinook-001"), ("slot", "chinook-020")]
    ),
    mode=st.sampled_from(["strict", "official"]),
)
def test_random_predictions_never_raise(loaded, pred, where, mode):
    bench, by_pair = loaded
    r = bench.score(by_pair[where], pred, mode)
    assert 0.0 <= r.score <= 1.0
    assert r.ok or r.error_type
