"""T-Eval: scorers in both modes (fixture cases), parsing robustness, official layout, derive + self-test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import EVAL_FIXTURES, have_embedding_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchsmith.eval import EvalCase, score_cases
from benchsmith.eval.scoring import SCORERS
from benchsmith.eval.teval import (
    ABILITIES,
    FORMATS,
    TEval,
    TEvalRules,
    derive_teval,
    load_teval,
    longest_increasing,
    max_weight_assignment,
    render_gold,
)
from benchsmith.eval.teval._parse import (
    TemplateError,
    load_response,
    parse_markers,
    parse_template,
    plan_from_text,
    review_letter,
)
from benchsmith.eval.teval._scorers import (
    _hungarian_max,
    _same_run_length,
    _unique_optimum,
    official_matching,
    plan_f1,
    scorer_name,
)
from benchsmith.schemas import UserError

FIXTURES = EVAL_FIXTURES
STRICT, OFFICIAL = TEval.rules["strict"], TEval.rules["official"]
CASES = [
    json.loads(line)
    for line in (FIXTURES / "teval_cases.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
EMBEDDING_ABILITIES = {"plan", "reason"}
needs_model = pytest.mark.skipif(
    not have_embedding_model(), reason="sentence-transformers / default model not installed"
)


def _case(spec: dict) -> EvalCase:
    inputs = {k: spec[k] for k in ("template", "api_list") if k in spec}
    fmt = spec["format"]
    return EvalCase(
        id=spec["name"],
        benchmark="teval",
        category=f"{spec['ability']}/{fmt}",
        input=inputs,
        gold=spec["gold"],
        meta={"ability": spec["ability"], "format": fmt, "scorer": scorer_name(spec["ability"], fmt)},
    )


@pytest.mark.parametrize("spec", CASES, ids=[c["name"] for c in CASES])
def test_fixture_case(spec: dict) -> None:
    if spec["ability"] in EMBEDDING_ABILITIES and not have_embedding_model():
        pytest.skip("embedding model not installed")
    case = _case(spec)
    for mode in ("strict", "official"):
        result = SCORERS[case.meta["scorer"]](case, spec["prediction"], mode)
        expected = spec["expected"][mode]
        if "score_in" in expected:  # a tie the official evaluator breaks by float bits that differ between CPUs
            assert any(result.score == pytest.approx(x, abs=1e-6) for x in expected["score_in"]), (mode, result)
        else:
            assert result.score == pytest.approx(expected["score"], abs=1e-6), (mode, result)
        assert 0.0 <= result.score <= 1.0
        if "error_type" in expected:  # e.g. official_crash: the official evaluator stops on this record
            assert result.error_type == expected["error_type"], (mode, result)
        else:
            assert result.error_type != "official_crash", (mode, result)


def test_fixture_file_covers_every_scorer() -> None:
    assert len(CASES) >= 30
    seen = {(c["ability"], c["format"]) for c in CASES}
    assert {(a, f) for a in ABILITIES for f in FORMATS[a]} <= seen
    assert all(scorer_name(a, f) in SCORERS for a in ABILITIES for f in FORMATS[a])


# ---- robustness -------------------------------------------------------------------------------
_TEXT = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        [
            "",
            "{",
            "[",
            "```json",
            "Answer：",
            "Answer: Z",
            "[{'id': 'x'}]",
            "{'args': 5}",
            "(" * 50,
            "[" * 200,
            "{'name': None}",
            "Thought: \nAction: \nAction Input: {'a': [1, 2]}\n",
            "Use A.b with {}",
            "FinishAction",
            '[{"id": 0, "name": "FinishAction", "args": {}}]',
        ]
    ),
)
_SPEC = {
    "instruct": {
        "gold": {"action": "A.b", "args": {"x": 1}},
        "template": {
            "thought": "t",
            "action": "a",
            "args": "g",
            "thought_start": "T(",
            "thought_end": "\n",
            "action_start": "A[",
            "action_end": "\n",
            "args_start": "G: ",
            "args_end": "",
        },
    },
    "plan": {
        "gold": [{"id": 0, "name": "A.b", "args": {"x": 1}}, {"id": 1, "name": "FinishAction", "args": {}}],
        "api_list": ["A.b", "A.bc"],
    },
    "reason": {"gold": {"thought": "look it up", "name": "A.b", "args": {"x": 1}}},
    "retrieve": {"gold": {"thought": "look it up", "name": "A.b", "args": {"x": 1}}},
    "understand": {"gold": {"thought": "look it up", "name": "A.b", "args": {"x": 1}}},
    "review": {"gold": {"answer": "C", "thought": "bad input"}},
}


def _robust(ability: str, text: str) -> None:
    for fmt in FORMATS[ability]:
        spec = {"name": "h", "ability": ability, "format": fmt, **_SPEC[ability]}
        case = _case(spec)
        for mode in ("strict", "official"):
            result = SCORERS[case.meta["scorer"]](case, text, mode)
            assert 0.0 <= result.score <= 1.0


@pytest.mark.parametrize("ability", ["instruct", "retrieve", "understand", "review"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_TEXT)
def test_random_text_never_raises(ability: str, text: str) -> None:
    _robust(ability, text)


@needs_model
@pytest.mark.parametrize("ability", ["plan", "reason"])
@settings(max_examples=25, deadline=None)
@given(text=_TEXT)
def test_random_text_never_raises_embedding_scorers(ability: str, text: str) -> None:
    _robust(ability, text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80), st.sampled_from(["", "[", "{"]), st.sampled_from(["", "]", "}"]))
def test_load_response_raises_only_parse_error(text: str, start: str, end: str) -> None:
    from benchsmith.eval.teval._parse import ResponseError

    try:
        load_response(text, start, end)
    except ResponseError:
        pass


# ---- pieces ------------------------------------------------------------------------------------
def test_rules_name_each_difference() -> None:
    from dataclasses import fields

    assert isinstance(STRICT, TEvalRules) and isinstance(OFFICIAL, TEvalRules)
    assert (STRICT.mode, OFFICIAL.mode) == ("strict", "official")
    # every rule is a choice where the modes differ
    same = [
        f.name for f in fields(TEvalRules) if f.name != "mode" and getattr(STRICT, f.name) == getattr(OFFICIAL, f.name)
    ]
    assert same == []


def test_lis_official_bug_and_fix() -> None:
    assert longest_increasing([-1, -1], lis_starts_at_one=True) == 1
    assert longest_increasing([-1, -1], lis_starts_at_one=False) == 0
    assert longest_increasing([0, -1, 2, 1], lis_starts_at_one=False) == 2
    assert longest_increasing([], lis_starts_at_one=True) == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1), min_size=3, max_size=3), min_size=1, max_size=5))
def test_hungarian_matches_scipy(matrix: list[list[float]]) -> None:
    ours = sum(matrix[i][j] for i, j in _hungarian_max(matrix))
    best = sum(matrix[i][j] for i, j in max_weight_assignment(matrix))
    assert ours == pytest.approx(best, abs=1e-9)


def test_official_matching_builds_the_graph_as_teval() -> None:
    import networkx as nx

    # two identical predicted steps tie for one gold step: networkx's pick depends on the graph
    weights = [[0.9, 0.85], [0.9, 0.85], [0.1, 0.95]]
    g = nx.Graph()
    for i, row in enumerate(weights):
        for j, w in enumerate(row):
            if w > 0.8:
                g.add_edge(i, str(j), weight=w)
    expected = sorted((a, int(b)) if isinstance(a, int) else (b, int(a)) for a, b in nx.max_weight_matching(g))
    assert official_matching(weights) == expected
    assert official_matching([[0.5]]) == []


# The same two steps twice against a two-step gold: two matchings weigh the same, and networkx's pick
# follows the weights' last bits (here as two CPUs' embeddings gave them). Official scoring must
# follow that pick: 1/3 when it matches the repeat out of order, 2/3 when in order; strict: 2/3.
TIE = 0.13381117582321167
TIE_PICKS = [
    ([[1.0000001192092896, TIE], [TIE, 1.0], [1.0000001192092896, TIE], [TIE, 1.0]], 1 / 3),
    ([[1.0, TIE], [TIE, 1.0000001192092896], [1.0, TIE], [TIE, 1.0000001192092896]], 2 / 3),
]


@needs_model
@pytest.mark.parametrize("weights, official", TIE_PICKS)
def test_official_plan_follows_networkx_pick_bit_for_bit(weights, official, monkeypatch) -> None:
    from benchsmith.eval.teval import _scorers

    steps = [
        {"name": "TimeTool.get_weekday", "args": {}, "id": 0},
        {"name": "GoogleSearch.search", "args": {"query": "weather"}, "id": 1},
    ]
    pred = [{**s, "id": k} for k, s in enumerate(steps + steps)]
    monkeypatch.setattr(_scorers, "official_weights", lambda p, g: weights)
    assert plan_f1(pred, steps, OFFICIAL)["f1"] == pytest.approx(official)
    assert plan_f1(pred, steps, STRICT)["f1"] == pytest.approx(2 / 3)


def _steps(*names: str) -> list[dict]:
    return [{"id": i, "name": n, "args": "{}"} for i, n in enumerate(names)]


def test_tie_detection() -> None:
    # a clear optimum: no tie
    sims = [[1.0, 0.85], [0.82, 1.0]]
    assert _unique_optimum(sims, [(0, 0), (1, 1)])
    # a similarity next to the threshold, or two identical rows: float noise may decide
    assert not _unique_optimum([[0.80001, 0.0], [0.0, 1.0]], [(0, 0), (1, 1)])
    dup = [[1.0, 0.85], [1.0, 0.85], [0.85, 1.0]]
    assert not _unique_optimum(dup, [(0, 0), (2, 1)])
    # ... but when the identical steps are neighbours, every tied matching gives the same run
    assert _same_run_length(dup, [(0, 0), (2, 1)], _steps("a", "a", "b"), _steps("a", "b"))
    twice = [[1.0, 0.85], [0.85, 1.0], [1.0, 0.85], [0.85, 1.0]]
    assert not _same_run_length(twice, [(0, 0), (1, 1)], _steps("a", "b", "a", "b"), _steps("a", "b"))


def test_plan_text_prefix_names() -> None:
    apis = ["filter_data", "filter_data_any"]
    assert plan_from_text("Use filter_data_any with {}", apis, OFFICIAL)[0]["name"] == "filter_data"
    strict = plan_from_text("Use filter_data_any with {'a': 1}", apis, STRICT)[0]
    assert strict == {"id": 0, "name": "filter_data_any", "args": "{'a': 1}"}


def test_template_and_review_parsing() -> None:
    assert parse_template("A: {x}\nB: {y}", "junk A: 1\nB: 2", as_regex=False) == {"x": "1", "y": "2"}
    assert parse_template("{x", "anything", as_regex=False) is None
    with pytest.raises(TemplateError):  # the official evaluator crashes on such templates
        parse_template("{x", "anything", as_regex=True)
    with pytest.raises(TemplateError):
        parse_template("A[{x}", "A[1", as_regex=True)
    markers = {
        "thought_start": "T{",
        "thought_end": "}\n",
        "action_start": "A[",
        "action_end": "\n",
        "args_start": "(",
        "args_end": ")",
    }
    assert parse_markers(markers, "T{go}\nA[f\n({'a': 1})") == {"thought": "go", "action": "f", "args": "{'a': 1}"}
    assert review_letter("Answer：D", fullwidth_colon=True) == "D"
    assert review_letter("Answer: D", fullwidth_colon=False) == "D"


# ---- official layout --------------------------------------------------------------------------
def test_load_official_layout() -> None:
    cases = load_teval(FIXTURES / "teval_official")
    cats = sorted({c.category for c in cases})
    assert cats == [
        "instruct/json",
        "instruct/string",
        "plan/json",
        "plan/str",
        "reason/json",
        "reason/str",
        "retrieve/json",
        "retrieve/str",
        "review/str",
        "understand/json",
        "understand/str",
    ]
    rru = [c for c in cases if c.id == "reason_retrieve_understand_json_v2/query_7_0"]
    assert sorted(c.category for c in rru) == ["reason/json", "retrieve/json", "understand/json"]
    with pytest.raises(UserError):
        load_teval(FIXTURES / "does-not-exist")


@needs_model
def test_official_layout_gold_and_aggregate() -> None:
    bench = TEval()
    cases = bench.load(FIXTURES / "teval_official")
    gold = {c.id: bench.gold_prediction(c) for c in cases}
    strict = score_cases(bench, cases, gold, "strict").scores
    assert strict["overall"] == pytest.approx(100.0)
    official = score_cases(bench, cases, gold, "official").scores
    # understand json: one record with one argument (1/(1+1e-5)) and one with none (1.0)
    understand_json = (1 / (1 + 1e-5) + 1.0) / 2
    assert official["abilities"]["understand"] == pytest.approx((understand_json + 1.0) / 2 * 100)
    assert official["overall"] == pytest.approx(sum(official["abilities"].values()) / 6)
    # a wrong review answer and an unparsable one
    preds = dict(gold)
    preds["review_str_v2/126"] = "Answer: A"
    preds["review_str_v2/query_85_0_0"] = "no idea"
    run = score_cases(bench, cases, preds, "official")
    assert run.scores["abilities"]["review"] == 0.0
    assert run.scores["categories"]["review/str"]["parse_rate"] == 0.5


def test_official_aggregation_quirks() -> None:
    from scoring import metrics_of

    from benchsmith.eval import RecordResult, get_benchmark

    def case(i: int, cat: str) -> EvalCase:
        return EvalCase(id=f"c{i}", benchmark="teval", category=cat)

    cats = ["instruct/json"] * 3 + ["instruct/string", "instruct/str", "review/str", "review/str", "review/str"]
    cases = [case(i, c) for i, c in enumerate(cats)]
    ems = [1 / 3, 1 / 3, 1 / 3, 1.0, 1.0]
    records = [
        RecordResult(id=c.id, category=c.category, ok=False, score=(1 + em) / 2, details={"format": 1.0, "args_em": em})
        for c, em in zip(cases[:5], ems)
    ]
    records += [
        RecordResult(id=c.id, category=c.category, ok=i == 0, score=float(i == 0)) for i, c in enumerate(cases[5:])
    ]
    teval = get_benchmark("teval")
    official = metrics_of(teval, cases, records, "official")
    strict = metrics_of(teval, cases, records, "strict")
    # rounded to 4 decimals as the official script; the `str` tag is not read officially
    assert official["categories"]["instruct/json"]["args_em"] == 0.3333
    assert official["categories"]["review/str"]["score"] == 0.3333
    assert strict["categories"]["instruct/json"]["args_em"] == pytest.approx(1 / 3, abs=1e-12)
    assert "instruct/str" in official["not_in_overall"] and "instruct/str" not in strict["not_in_overall"]
    assert official["abilities"]["instruct"] == pytest.approx(((1 + 0.3333) / 2 + 1.0) / 2 * 100)
    assert strict["abilities"]["instruct"] == pytest.approx(((1 + 1 / 3) / 2 + 1.0) / 2 * 100)
    # a missing part: officially no figure (an ability needs every format, Overall all six abilities)
    assert official["overall"] is None
    assert official["missing_abilities"] == strict["missing_abilities"] == ["plan", "reason", "retrieve", "understand"]
    assert strict["overall"] == pytest.approx((strict["abilities"]["instruct"] + strict["abilities"]["review"]) / 2)
    json_only = cases[:3], records[:3]
    assert metrics_of(teval, *json_only, "official")["abilities"]["instruct"] is None
    assert metrics_of(teval, *json_only, "strict")["abilities"]["instruct"] == pytest.approx((1 + 1 / 3) / 2 * 100)


# ---- derive ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db

    root = tmp_path_factory.mktemp("teval")
    pairs = root / "pairs.jsonl"
    rows = [
        {
            "id": "jazz",
            "question": "How many Jazz tracks are there?",
            "sql": "SELECT COUNT(*) FROM tracks t JOIN genres g ON t.genre_id = g.genre_id WHERE g.name = 'Jazz'",
        },
        {
            "id": "long",
            "question": "What are the three longest tracks?",
            "sql": "SELECT name FROM tracks ORDER BY milliseconds DESC LIMIT 3",
        },
        {
            "id": "ca",
            "question": "Which customers live in Canada?",
            "sql": "SELECT first_name, last_name FROM customers WHERE country = 'Canada'",
        },
    ]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    split = root / "split"
    report = build_split(chinook_db(), pairs, split, BuildOptions(style="slot", copy_db=False))
    assert report["verified"] == 3
    return split


def test_derive_writes_every_ability_and_format(small_split: Path, tmp_path: Path) -> None:
    report = derive_teval(small_split, tmp_path / "t")
    for ability in ABILITIES:
        for fmt in FORMATS[ability]:
            assert report["records"][ability][fmt] > 0, (ability, fmt)
    assert set(report["review_labels"]) == {"A", "B", "C", "D", "E"} and report["executed"]
    plan = json.loads((tmp_path / "t" / "plan_json_v2.json").read_text(encoding="utf-8"))
    first = next(iter(plan.values()))
    assert first["ground_truth"][-1]["name"] == "FinishAction" and first["meta"]["prompt_type"] == "json"
    # deterministic
    derive_teval(small_split, tmp_path / "t2")
    for f in report["files"]:
        assert (tmp_path / "t" / f).read_bytes() == (tmp_path / "t2" / f).read_bytes()
    with pytest.raises(UserError):
        derive_teval(tmp_path, tmp_path / "t3")


def test_derived_reviews_come_from_real_executions(small_split: Path, tmp_path: Path) -> None:
    from benchsmith.schemas import Sample, read_jsonl

    report = derive_teval(small_split, tmp_path / "t")
    assert set(report["review_classes"]) == {"success", "internal_error", "input_error", "irrelevant", "unable"}
    assert all(n > 0 for n in report["review_classes"].values()), report["review_classes"]
    reviews = json.loads((tmp_path / "t" / "review_str_v2.json").read_text(encoding="utf-8"))
    samples = {s.id: s for s in read_jsonl(small_split / "samples.jsonl", Sample)}
    letters = {"success": "A", "internal_error": "B", "input_error": "C", "irrelevant": "D", "unable": "E"}
    for rec in reviews.values():
        tag = rec["meta_data"]["review"]
        assert rec["ground_truth"]["answer"] == letters[tag]
        fields = dict(line.split(": ", 1) for line in rec["origin_prompt"][1]["content"].split("\n"))
        args, response = json.loads(fields["Args"]), json.loads(fields["Response"])
        step = [s for s in samples[rec["meta_data"]["source_sample"]].gold if not s.hidden][rec["meta_data"]["step"]]
        if tag == "success":  # the tool's real output for the gold call
            assert args == step.call.arguments and response == step.observation
        elif tag == "internal_error":  # the gold call, run on a failed database connection
            assert args == step.call.arguments and "closed database" in response["error"]
        elif tag == "input_error":  # a wrong input the tool itself rejected, with its own message
            assert args != step.call.arguments and set(response) == {"error"}
            assert "closed database" not in response["error"]
        elif tag == "unable":  # a value the data does not have: the tool ran and found nothing
            assert args != step.call.arguments and response["rows"] == []
            assert fields["Goal"].endswith(".") and any(
                str(v) in fields["Goal"] for v in args.values() if not str(v).startswith("$")
            )
        else:
            assert args == step.call.arguments and response != step.observation


def test_derived_thoughts_state_the_intent(small_split: Path, tmp_path: Path) -> None:
    derive_teval(small_split, tmp_path / "t")
    rru = json.loads((tmp_path / "t" / "reason_str_v2.json").read_text(encoding="utf-8"))
    tools = {"filter_data", "aggregate_data", "retrieve_data", "sort_data", "limit_data"}
    for rec in rru.values():
        thought = rec["ground_truth"]["thought"]
        # no call text: neither the tool's name nor argument names nor $label$ references
        assert not any(t in thought for t in tools) and "data_source" not in thought and "$" not in thought, thought
        if rec["meta_data"]["step"] == 0:
            assert rec["origin_prompt"][1]["content"].split("\n")[0] in thought  # the request it serves
    jazz = [r["ground_truth"]["thought"] for k, r in rru.items() if "Jazz" in r["origin_prompt"][1]["content"]]
    assert any('genre name is "Jazz"' in t for t in jazz) and any(t.startswith("Finally I count") for t in jazz)


def test_derive_without_a_database_keeps_recorded_responses(small_split: Path, tmp_path: Path) -> None:
    import shutil

    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(small_split / "samples.jsonl", bare / "samples.jsonl")  # no database, no manifest
    report = derive_teval(bare, tmp_path / "t")
    assert not report["executed"] and "database" in report["not_executed"]
    assert set(report["review_labels"]) == {"A", "D"}


@needs_model
def test_derived_gold_scores_the_maximum(small_split: Path, tmp_path: Path) -> None:
    derive_teval(small_split, tmp_path / "t")
    bench = TEval()
    cases = bench.load(tmp_path / "t")
    gold = {c.id: render_gold(c) for c in cases}
    strict = score_cases(bench, cases, gold, "strict")
    assert strict.scores["overall"] == 100.0
    assert all(r.ok for r in strict.records)
    official = score_cases(bench, cases, gold, "official")
    assert official.scores["abilities"]["understand"] < 100.0  # the 1e-5 quirk
    assert official.scores["overall"] == pytest.approx(100.0, abs=1e-3)
    assert {r.category for r in official.records if not r.ok} <= {"review/json"}  # never matches officially


def test_cli_derive(small_split: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from benchsmith.cli import app

    out = tmp_path / "cli"
    result = CliRunner().invoke(app, ["eval", "derive", "--split", str(small_split), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["derived"] == {
        "teval": "teval",
        "gta": "gta",
        "toolassess": "toolassess",
        "acebench_special": "acebench",
    }
    report = json.loads((out / "derive_report.json").read_text(encoding="utf-8"))
    assert {k: sum(v.values()) for k, v in report["derived"]["teval"]["records"].items()}["plan"] == 6
    assert (out / "teval" / "plan_json_v2.json").is_file() and (out / "gta" / "dataset.json").is_file()
    only = CliRunner().invoke(
        app, ["eval", "derive", "--split", str(small_split), "--out", str(tmp_path / "o"), "--only", "teval"]
    )
    assert only.exit_code == 0 and sorted(p.name for p in (tmp_path / "o").iterdir()) == ["derive_report.json", "teval"]
    unknown = CliRunner().invoke(
        app, ["eval", "derive", "--split", str(small_split), "--out", str(tmp_path / "u"), "--only", "teval,nope"]
    )
    assert unknown.exit_code == 2 and "nope" in unknown.output and not (tmp_path / "u").exists()
    bad = CliRunner().invoke(app, ["eval", "derive", "--out", str(out)], env={"BENCHSMITH_SPLIT": str(tmp_path)})
    assert bad.exit_code == 2
