"""The BFCL plug-in: fixture cases in both modes, loading, gold outputs, robustness, real-data self-test."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from bfcl_data import FUNCS, mini_bfcl, write_lines
from helpers import EVAL_FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scoring import metrics_of

from benchsmith.eval import EvalCase, RecordResult, get_benchmark, run_score, run_selftest
from benchsmith.eval.bfcl import decode, render_gold, value_prediction
from benchsmith.schemas import UserError

FIXTURES = EVAL_FIXTURES / "bfcl_cases.jsonl"
CASES = [json.loads(line) for line in FIXTURES.read_text(encoding="utf-8").splitlines() if line.strip()]
BENCH = get_benchmark("bfcl")
BENCH_FORMAT = {"prompt": get_benchmark("bfcl", format="prompt"), "fc": get_benchmark("bfcl", format="fc")}


def _case(c: dict) -> EvalCase:
    return EvalCase(
        id=c["name"],
        benchmark="bfcl",
        category=c["category"],
        input={"question": [[{"role": "user", "content": "question"}]], "functions": c["functions"]},
        gold=c["gold"],
    )


def _prediction(c: dict) -> str:
    """A fixture's prediction as a result line gives it: a string is text, any other JSON value a value
    (an FC model's list of calls)."""
    return c["prediction"] if isinstance(c["prediction"], str) else value_prediction(c["prediction"])


def test_fixture_file_covers_the_checks():
    assert len(CASES) >= 40
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names))
    kinds = {c["expected"][m]["error_type"] for c in CASES for m in ("strict", "official")}
    for needed in (
        "simple_function_checker:wrong_count",
        "simple_function_checker:wrong_func_name",
        "simple_function_checker:missing_required",
        "simple_function_checker:unexpected_param",
        "simple_function_checker:missing_optional",
        "type_error:simple",
        "type_error:nested",
        "value_error:string",
        "value_error:list/tuple",
        "value_error:dict_key",
        "value_error:dict_value",
        "value_error:list_dict_count",
        "value_error:others",
        "ast_decoder:decoder_failed",
        "ast_decoder:decoder_wrong_output_format",
        "parallel_function_checker_no_order:cannot_find_match",
        "irrelevance_error:decoder_success",
        "relevance_error:decoder_failed",
        "official_checker_crash",
    ):
        assert needed in kinds, needed
    assert {c.get("format", "prompt") for c in CASES} == {"prompt", "fc"}
    # every documented official-vs-strict difference (docs/eval/bfcl.md rows 1-21) has a case that tells them apart
    for row in range(1, 22):
        diff = [c for c in CASES if c["name"].startswith(f"diff{row:02d}_")]
        assert diff, row
        assert any(c["expected"]["strict"] != c["expected"]["official"] for c in diff), row


@pytest.mark.parametrize("mode", ["strict", "official"])
@pytest.mark.parametrize("c", CASES, ids=[c["name"] for c in CASES])
def test_fixture_case(c, mode):
    """Each line says its output format (``format``: prompt, the default, or fc)."""
    fmt = c.get("format", "prompt")
    result = BENCH_FORMAT[fmt].score(_case(c), _prediction(c), mode)
    want = c["expected"][mode]
    assert (result.ok, result.error_type) == (want["ok"], want["error_type"]), result.reason
    assert 0.0 <= result.score <= 1.0 and result.score == (1.0 if result.ok else 0.0)
    if mode == "official" and result.details:
        assert result.details["format_read"] == fmt


# ---- loading ------------------------------------------------------------------------------------
def test_format_option_is_checked():
    assert get_benchmark("bfcl").options == {} and BENCH_FORMAT["fc"].options == {"format": "fc"}
    with pytest.raises(UserError, match="not one of prompt, fc"):
        get_benchmark("bfcl", format="xml")
    with pytest.raises(UserError, match="takes no 'format' option"):
        get_benchmark("acebench", format="fc")


def test_selftest_in_fc_format_records_the_format(tmp_path):
    data = mini_bfcl(tmp_path / "data")
    case = BENCH.load(data)[0]
    gold = BENCH_FORMAT["fc"].gold_prediction(case)
    assert json.loads(gold) == [{"math_factorial": '{"number": 5}'}]
    for mode in ("strict", "official"):
        scores = run_selftest("bfcl", data, tmp_path / f"out-{mode}", mode, options={"format": "fc"})
        assert scores["gold_failing"] == 0 and scores["format"] == "fc"
        recs = [json.loads(x) for x in (tmp_path / f"out-{mode}" / "records.jsonl").read_text().splitlines()]
        # strict reads the empty irrelevance gold as (empty) prompt-format text
        want = {"fc": 3} if mode == "official" else {"fc": 2, "prompt": 1}
        assert scores["formats_read"] == want == dict(Counter(r["details"]["format_read"] for r in recs))
    assert run_selftest("bfcl", data, tmp_path / "out-prompt", "official")["format"] == "prompt"


def test_score_predictions_file_in_both_formats(tmp_path):
    data = mini_bfcl(tmp_path / "data")
    preds = tmp_path / "p.jsonl"
    # an FC result file holds the calls as a JSON value; a prompt-mode model's result is text
    write_lines(
        tmp_path,
        "p.jsonl",
        [
            {"id": "simple_python_0", "result": [{"math_factorial": '{"number": 5}'}]},
            {"id": "irrelevance_0", "result": "I cannot help with that."},
            {"id": "live_relevance_0-0-0", "result": '[{"name": "math.factorial", "arguments": {"number": 1}}]'},
        ],
    )
    fc = run_score("bfcl", data, preds, tmp_path / "fc", "official", options={"format": "fc"})
    assert (fc["format"], fc["summary"]["non_live_ast"], fc["summary"]["irrelevance"], fc["summary"]["relevance"]) == (
        "fc",
        1.0,
        1.0,
        0.0,
    )  # the JSON text is a text reply for the FC decoder: no call
    prompt = run_score("bfcl", data, preds, tmp_path / "prompt", "official")
    assert prompt["format"] == "prompt" and prompt["error_types"] == {
        "ast_decoder:decoder_failed": 1,
        "relevance_error:decoder_failed": 1,
    }
    strict = run_score("bfcl", data, preds, tmp_path / "strict", "strict", options={"format": "prompt"})
    assert strict["summary"]["overall"] == 1.0 and strict["formats_read"] == {"fc": 2, "prompt": 1}
    recs = {r["id"]: r for r in map(json.loads, (tmp_path / "strict" / "records.jsonl").read_text().splitlines())}
    assert recs["live_relevance_0-0-0"]["details"] == {"format_read": "fc"}
    assert recs["irrelevance_0"]["details"] == {"format_read": "prompt"}


def test_cli_format_option_and_environment(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from benchsmith.cli import app

    data = mini_bfcl(tmp_path / "data")
    write_lines(tmp_path, "p.jsonl", [{"id": "simple_python_0", "result": [{"math_factorial": '{"number": 5}'}]}])
    args = [
        "eval",
        "score",
        "--benchmark",
        "bfcl",
        "--data",
        str(data),
        "--predictions",
        str(tmp_path / "p.jsonl"),
        "--mode",
        "official",
    ]
    runner = CliRunner()
    res = runner.invoke(app, args + ["--out", str(tmp_path / "a"), "--bfcl-format", "fc"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "a" / "scores.json").read_text())["categories"]["simple_python"]["correct"] == 1
    res = runner.invoke(app, args + ["--out", str(tmp_path / "b")], env={"BENCHSMITH_BFCL_FORMAT": "fc"})
    assert res.exit_code == 0 and json.loads((tmp_path / "b" / "scores.json").read_text())["format"] == "fc"
    res = runner.invoke(app, args + ["--out", str(tmp_path / "c")])
    assert json.loads((tmp_path / "c" / "scores.json").read_text())["format"] == "prompt"
    assert runner.invoke(app, args + ["--out", str(tmp_path / "d"), "--bfcl-format", "xml"]).exit_code == 2
    old = runner.invoke(app, args + ["--out", str(tmp_path / "old"), "--format", "fc"])  # the old spelling, one release
    assert old.exit_code == 0 and "--format is renamed --bfcl-format" in old.output, old.output
    assert json.loads((tmp_path / "old" / "scores.json").read_text())["format"] == "fc"
    both = runner.invoke(app, args + ["--out", str(tmp_path / "f"), "--format", "fc", "--bfcl-format", "fc"])
    assert both.exit_code == 2 and "both given" in both.output
    res = runner.invoke(
        app,
        [
            "eval",
            "selftest",
            "--benchmark",
            "bfcl",
            "--data",
            str(data),
            "--out",
            str(tmp_path / "e"),
            "--bfcl-format",
            "fc",
        ],
    )
    assert res.exit_code == 0 and json.loads((tmp_path / "e" / "scores.json").read_text())["format"] == "fc"
    assert runner.invoke(app, ["eval", "score", "--run", str(tmp_path), "--bfcl-format", "fc"]).exit_code == 2


def test_run_records_its_format_and_scoring_uses_it(tmp_path):
    from benchsmith.eval import TaskOptions, get_task, score_run
    from benchsmith.eval.bfcl import fc_result
    from benchsmith.schemas import write_json, write_jsonl

    data = mini_bfcl(tmp_path / "data")
    for run_mode, fmt in (("tools", "fc"), ("prompt", "prompt")):
        task = get_task("bfcl")(data, TaskOptions(calling=run_mode))
        cases = task.load()
        assert {c.meta["format"] for c in cases} == {fmt}
        if run_mode == "tools":
            calls = [{"id": "1", "name": "math_factorial", "arguments": {"number": 5}}]
            result, parsed = task.parse(cases[0], "", calls)
            assert result == fc_result("", calls) == [{"math_factorial": '{"number": 5}'}]
            assert parsed == [{"name": "math_factorial", "arguments": {"number": 5}}]
            assert task.parse(cases[1], "No tool fits.", [])[0] == "No tool fits."
        else:
            result = task.parse(cases[0], '{"calls": [{"name": "math.factorial", "arguments": {"number": 5}}]}', [])[0]
            assert result == "[math.factorial(number=5)]"
        run = tmp_path / f"run-{run_mode}"
        write_json(run / "run.json", {"tasks": {"bfcl": {"benchmark": "bfcl", "status_counts": {}}}})
        write_jsonl(run / "bfcl" / "cases.jsonl", cases)
        write_jsonl(
            run / "bfcl" / "predictions.jsonl",
            [{"id": cases[0].id, "result": result}, {"id": cases[1].id, "result": ""}],
        )
        scores = score_run(run, "official")["bfcl"]
        assert scores["format"] == fmt and scores["categories"]["simple_python"]["correct"] == 1
    # cases without a recorded format (runs written before it was recorded) are scored as prompt format
    plain = BENCH.load(data)[0]
    assert BENCH.score(plain, "[math.factorial(number=5)]", "official").ok


def test_load_and_selftest_small_folder(tmp_path):
    data = mini_bfcl(tmp_path / "data")
    cases = BENCH.load(data)
    assert [(c.id, c.category) for c in cases] == [
        ("simple_python_0", "simple_python"),
        ("irrelevance_0", "irrelevance"),
        ("live_relevance_0-0-0", "live_relevance"),
    ]
    assert cases[0].meta == {"file": "BFCL_v4_simple_python.json", "line": 1}
    assert BENCH.gold_prediction(cases[0]) == "[math.factorial(number=5)]"
    assert BENCH.gold_prediction(cases[1]) == ""
    assert BENCH.gold_prediction(cases[2]) == "[math.factorial(number=1)]"
    for mode in ("strict", "official"):
        scores = run_selftest("bfcl", data, tmp_path / f"out-{mode}", mode)
        assert scores["gold_failing"] == 0
        assert scores["summary"]["non_live_ast"] == 1.0 and scores["summary"]["live_ast"] is None
        assert scores["categories"]["irrelevance"] == {"correct": 1, "total": 1, "accuracy": 1.0}


@pytest.mark.parametrize(
    "breakage, where",
    [
        (lambda d: write_lines(d, "BFCL_v4_simple_python.json", ["{not json"]), "BFCL_v4_simple_python.json:1"),
        (
            lambda d: write_lines(d, "BFCL_v4_simple_python.json", [{"question": [], "function": []}]),
            "BFCL_v4_simple_python.json:1",
        ),
        (
            lambda d: write_lines(
                d,
                "BFCL_v4_simple_python.json",
                [
                    {"id": "simple_python_0", "question": [], "function": FUNCS},
                    {"id": "simple_python_9", "question": [], "function": FUNCS},
                ],
            ),
            "BFCL_v4_simple_python.json:2",
        ),
        (
            lambda d: write_lines(
                d / "possible_answer",
                "BFCL_v4_simple_python.json",
                [{"id": "simple_python_0", "ground_truth": {"math.factorial": {}}}],
            ),
            "possible_answer/BFCL_v4_simple_python.json:1",
        ),
        (
            lambda d: (d / "possible_answer" / "BFCL_v4_simple_python.json").unlink(),
            "possible_answer/BFCL_v4_simple_python.json",
        ),
        (
            lambda d: write_lines(
                d, "BFCL_v4_irrelevance.json", [{"id": "simple_python_0", "question": [], "function": FUNCS}]
            ),
            "BFCL_v4_irrelevance.json:1",
        ),
    ],
)
def test_bad_records_name_file_and_line(tmp_path, breakage, where):
    data = mini_bfcl(tmp_path / "data")
    breakage(data)
    with pytest.raises(UserError, match=where.replace("/", ".")):
        BENCH.load(data)


def test_load_rejects_missing_or_empty_folder(tmp_path):
    with pytest.raises(UserError):
        BENCH.load(tmp_path / "nope")
    with pytest.raises(UserError, match="no BFCL_v4"):
        BENCH.load(tmp_path)


def test_render_gold_rules():
    fns = [
        {
            "name": "f",
            "parameters": {
                "type": "dict",
                "required": ["need"],
                "properties": {
                    "need": {"type": "float"},
                    "opt": {"type": "string"},
                    "prefs": {"type": "dict"},
                    "rows": {"type": "array", "items": {"type": "dict"}},
                },
            },
        }
    ]
    gold = [
        {
            "f": {
                "need": ["", 2.5],
                "opt": ["", "x"],
                "ghost": ["", 1],
                "prefs": [{"a": ["A"], "b": ["", "B"]}],
                "rows": [[{"k": [1, 2]}]],
            }
        }
    ]
    assert render_gold(fns, gold) == "[f(need=2.5, prefs={'a': 'A'}, rows=[{'k': 1}])]"


def test_aggregate_summary():
    recs = [
        RecordResult(id=str(i), category=cat, ok=ok, score=float(ok))
        for i, (cat, ok) in enumerate(
            [
                ("simple_python", True),
                ("simple_python", False),
                ("multiple", True),
                ("parallel", True),
                ("parallel_multiple", False),
                ("live_simple", True),
                ("live_simple", True),
                ("live_multiple", False),
                ("live_multiple", True),
                ("irrelevance", True),
                ("live_irrelevance", False),
                ("live_relevance", True),
            ]
        )
    ]
    cases = [EvalCase(id=r.id, benchmark="bfcl", category=r.category) for r in recs]
    s = metrics_of(BENCH, cases, recs, "strict")
    assert s["categories"]["simple_python"] == {"correct": 1, "total": 2, "accuracy": 0.5}
    assert s["summary"]["non_live_ast"] == pytest.approx((0.5 + 1 + 1 + 0) / 4)
    assert s["summary"]["live_ast"] == pytest.approx(3 / 4)
    assert s["summary"]["irrelevance"] == pytest.approx(0.5)
    assert s["summary"]["relevance"] == 1.0
    assert s["summary"]["overall"] == pytest.approx((0.625 + 0.75 + 0.5) / 3)


# ---- robustness ---------------------------------------------------------------------------------
_ROBUST_CASES = [_case(c) for c in CASES[:: max(1, len(CASES) // 12)]]

_atoms = st.sampled_from(
    [
        "1",
        "-2.5",
        "+3",
        "True",
        "true",
        "None",
        "'x'",
        '"New York"',
        "x",
        "[1, 2]",
        "(1,)",
        "{'a': 1}",
        "{1, 2}",
        "f()",
        "g(k=1)",
        "a[0]",
        "2**10",
        "2**99999",
        "'a'*9",
        "lambda: 1",
        "not 1",
        "-x",
        "...",
        "b'x'",
        "1j",
        "{**d}",
        "[*a]",
        "(yield)",
        "x if y else z",
        "f'{x}'",
    ]
)
_kw = st.tuples(st.sampled_from(["a", "b", "city", "base", "height", "x", "number", "_"]), _atoms).map(
    lambda t: f"{t[0]}={t[1]}"
)
_call = st.tuples(
    st.sampled_from(["f", "get_weather", "geometry.area", "math.factorial", "a.b.c", "(f)", "f()"]),
    st.lists(st.one_of(_kw, _atoms), max_size=4),
).map(lambda t: f"{t[0]}({', '.join(t[1])})")
_python_out = st.tuples(
    st.lists(_call, max_size=4),
    st.sampled_from(["[{}]", "{}", "```python\n{}\n```", "[{}", "{}]", "'{}'", "`{}`", "({})"]),
).map(lambda t: t[1].format(", ".join(t[0])))
_json_val = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
_json_out = st.one_of(
    st.lists(
        st.fixed_dictionaries(
            {
                "name": st.text(max_size=10) | st.sampled_from(["get_weather", "f"]),
                "arguments": _json_val | _json_val.map(json.dumps),
            }
        ),
        max_size=3,
    ),
    st.lists(st.dictionaries(st.text(max_size=8), _json_val, max_size=2), max_size=3),
    _json_val,
).map(lambda v: json.dumps(v, allow_nan=True))


def _score_everything(text: str) -> None:
    for mode in ("strict", "official"):
        d = decode(text, BENCH.rules[mode])
        assert d.calls is None or isinstance(d.calls, list)
        for case in _ROBUST_CASES:
            r = BENCH.score(case, text, mode)
            assert isinstance(r, RecordResult) and 0.0 <= r.score <= 1.0
            if mode == "strict":
                assert r.error_type != "official_checker_crash"


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_random_text_never_raises(text):
    _score_everything(text)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_python_out)
def test_malformed_python_calls_never_raise(text):
    _score_everything(text)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json_out)
def test_malformed_json_calls_never_raise(text):
    _score_everything(text)


# ---- the real data (opt-in) ---------------------------------------------------------------------
SHARED = os.environ.get("BENCHSMITH_SHARED_DATA")
STRICT_GOLD_FAILING = {
    "live_simple_106-63-0",
    "live_simple_112-68-0",
    "live_multiple_507-149-4",
    "live_multiple_862-181-3",
    "live_multiple_964-207-0",
}


@pytest.mark.slow
@pytest.mark.skipif(not SHARED, reason="set BENCHSMITH_SHARED_DATA to the shared data folder")
@pytest.mark.parametrize("fmt", ["prompt", "fc"])
@pytest.mark.parametrize("mode", ["official", "strict"])
def test_selftest_on_bfcl_v4(tmp_path, mode, fmt):
    data = Path(SHARED) / "bfcl_v4"
    scores = run_selftest("bfcl", data, tmp_path, mode, options={"format": fmt})
    acc = {c: round(v["accuracy"] * 100, 2) for c, v in scores["categories"].items()}
    assert acc.pop("live_simple") == 99.22
    assert acc.pop("live_multiple") == 99.72
    assert acc and all(v == 100.0 for v in acc.values()), acc
    failing = json.loads((tmp_path / "selftest.json").read_text())["failing"]
    assert {f["id"] for f in failing} == STRICT_GOLD_FAILING
