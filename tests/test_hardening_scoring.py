"""Issue 12, scoring budgets: the model outputs that blew up scoring (each failed before the fix:
41 s, 78 s, 2 GB, a crash ...), the per-record time and size limits (``over_budget`` records in
records.jsonl), and benchmark data that is not UTF-8 or holds a 5,000-digit number (one red
line from the CLI, exit 2)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from benchsmith.eval import Benchmark, EvalCase, RecordResult, get_benchmark, passed, score_cases
from benchsmith import eval as core  # the scoring-budget API
from benchsmith.eval.teval._scorers import scorer_name
from helpers import clean_env, console_script, have_embedding_model, one_error_line

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "eval"
QUICK = 2.0  # seconds: a blow-up took 6 - 80 s before the fix; now each record takes milliseconds


def _row(fixture: str, **match: Any) -> dict[str, Any]:
    for line in (FIXTURES / f"{fixture}_cases.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else {}
        if row and all(row.get(k) == v for k, v in match.items()):
            return row
    raise LookupError(match)


def _score(bench: Benchmark, case: EvalCase, prediction: str, mode: str) -> tuple[RecordResult, float]:
    start = time.perf_counter()
    (record,) = score_cases(bench, [case], {case.id: prediction}, mode).records  # type: ignore[arg-type]
    return record, time.perf_counter() - start


needs_model = pytest.mark.skipif(not have_embedding_model(), reason="sentence-transformers / default model not installed")


@pytest.fixture(scope="module", autouse=True)
def embedding_cache(tmp_path_factory: pytest.TempPathFactory):
    """An empty embedding cache: a cached vector must not hide the cost of a record."""
    mp = pytest.MonkeyPatch()
    mp.setenv("BENCHSMITH_CACHE", str(tmp_path_factory.mktemp("cache")))
    yield
    mp.undo()


# ---- BFCL -----------------------------------------------------------------------------------------
def _bfcl_case() -> EvalCase:
    r = _row("bfcl", name="exact_call")
    return EvalCase(id="x", benchmark="bfcl", category=r["category"],
                    input={"question": [], "functions": r["functions"]}, gold=r["gold"])


@pytest.mark.parametrize("terms", [400, 950])
@pytest.mark.parametrize("mode", ["strict", "official"])
def test_bfcl_ten_kb_chain_of_string_concatenations_is_quick(mode: str, terms: int) -> None:
    # each "x"*99999 + ... copied an ever longer string: 5 s for 4 kB, 41 s for 10 kB
    prediction = "[geometry.area(base=" + "+".join(['"x"*99999'] * terms) + ")]"
    record, spent = _score(get_benchmark("bfcl"), _bfcl_case(), prediction, mode)
    assert spent < QUICK and record.error_type == "ast_decoder:decoder_failed"
    if terms == 400:
        assert "folded value" in record.reason


@pytest.mark.parametrize("prediction", [
    "[geometry.area(base=10.0, height=5, unit=[[1]*10000]*10000)]",   # 14 s: 10^8 shared elements walked
    "[geometry.area(base=10.0, height=5, unit='%99999999d' % 1)]",    # 20 s: a 100 MB string
])
@pytest.mark.parametrize("mode", ["strict", "official"])
def test_bfcl_folding_cannot_build_huge_values(prediction: str, mode: str) -> None:
    record, spent = _score(get_benchmark("bfcl"), _bfcl_case(), prediction, mode)
    assert spent < QUICK and record.error_type == "ast_decoder:decoder_failed"


@pytest.mark.parametrize("mode", ["strict", "official"])
def test_bfcl_too_many_calls_are_over_budget(mode: str) -> None:
    prediction = "[" + ", ".join("geometry.area(base=1.0, height=2)" for _ in range(1001)) + "]"
    record, _ = _score(get_benchmark("bfcl"), _bfcl_case(), prediction, mode)
    assert record.error_type == "over_budget" and record.details["budget"] == "calls"
    assert record.details["figure"] == 1001 and record.details["limit"] == 1000 and "calls" in record.reason


# ---- T-Eval -------------------------------------------------------------------------------------
def _teval_case(**match: Any) -> EvalCase:
    spec = _row("teval", **match)
    inputs = {k: spec[k] for k in ("template", "api_list") if k in spec}
    return EvalCase(id=spec["name"], benchmark="teval", category=f"{spec['ability']}/{spec['format']}", input=inputs,
                    gold=spec["gold"], meta={"ability": spec["ability"], "format": spec["format"],
                                             "scorer": scorer_name(spec["ability"], spec["format"])})


@needs_model
@pytest.mark.parametrize("mode", ["strict", "official"])
def test_teval_two_thousand_step_plan_is_over_budget(mode: str) -> None:
    # every step was embedded (2,000 new texts): 78 s
    steps = [{"id": i, "name": "Time.now", "args": i} for i in range(2000)]
    prediction = json.dumps(steps, separators=(",", ":"))
    assert len(prediction) < 100_000  # within the prediction size limit
    record, spent = _score(get_benchmark("teval"), _teval_case(name="plan_json_exact"), prediction, mode)
    assert spent < QUICK and record.error_type == "over_budget" and record.details["budget"] == "plan_steps"


@needs_model
@pytest.mark.parametrize("mode", ["strict", "official"])
def test_teval_five_megabyte_reason_is_over_budget(mode: str) -> None:
    # the tokenizer read all 5 MB before keeping 256 tokens: 2.6 GB and 17 s
    record, spent = _score(get_benchmark("teval"), _teval_case(name="reason_str_same_thought"), "!" * 5_000_000, mode)
    assert spent < QUICK and record.error_type == "over_budget" and record.details["budget"] == "prediction_chars"


@needs_model
def test_embedding_text_keeps_what_the_model_reads() -> None:
    from benchsmith.models import get_embedder

    words = " ".join(f"word{i % 97} and more text" for i in range(6000))  # 150 kB of ordinary text
    cut = core.embedding_text(words)
    assert len(cut) <= core.EMBED_PREFIX_CHARS and words.startswith(cut)
    full, short = get_embedder().encode([words, cut])
    assert (full == short).all()  # the model keeps its first 256 tokens, which the cut text holds
    assert core.embedding_text("a\ud800b") == "a\ufffdb" and core.embedding_text("\U0001f600") == "\U0001f600"


@needs_model
@pytest.mark.parametrize("mode", ["strict", "official"])
def test_teval_lone_surrogate_in_a_reason_is_scored(mode: str) -> None:
    # the tokenizer refused the text: TypeError, the record was a scorer_error
    record, _ = _score(get_benchmark("teval"), _teval_case(name="reason_str_same_thought"), "I need \ud800 articles", mode)
    assert record.error_type == "low_similarity" and 0.0 <= record.score < 1.0


@pytest.mark.parametrize("mode", ["strict", "official"])
def test_teval_long_string_response_is_matched_in_linear_time(mode: str) -> None:
    # re.findall on "(.*)\nAction: (.*)\n..." backtracked cubically: 36 s for these 22 kB
    case = _teval_case(name="instruct_string_exact")
    prediction = "Thought: a\nAction: b\n" * 1000  # never "Action Input: ": no match
    record, spent = _score(get_benchmark("teval"), case, prediction, mode)
    assert spent < QUICK and record.error_type == "parse_error"
    record, spent = _score(get_benchmark("teval"), case, prediction + "Action Input: {}\n", mode)
    assert spent < QUICK and record.error_type == "wrong_action"


@pytest.mark.parametrize("mode", ["strict", "official"])
def test_teval_retrieve_with_a_long_word_is_quick(mode: str) -> None:
    # r"\w+\.\w+" retried inside the long word from every position: quadratic, 12 s here
    case = _teval_case(name="retrieve_str_substring")
    record, spent = _score(get_benchmark("teval"), case, case.gold["name"] + " " + "a" * 60_000, mode)
    assert spent < QUICK and record.ok


# ---- GTA, ToolAssess, ACEBench ---------------------------------------------------------------------
def test_gta_and_toolassess_read_a_5000_digit_number_as_bad_json() -> None:
    from benchsmith.eval.gta import GTA

    number = "9" * 5000  # json.loads raises ValueError, not JSONDecodeError: the records were scorer_error
    gta = GTA(similarity=None)
    tool_step = next(c for c in gta.load(FIXTURES / "gta_data") if c.category == "step:tool")
    turn = json.dumps({"tool_calls": [{"name": "OCR", "arguments": '{"image": ' + number + "}"}]})
    ta = get_benchmark("toolassess")
    rows = (FIXTURES / "toolassess_cases.jsonl").read_text(encoding="utf-8").splitlines()
    records = {json.loads(r)["record"]["id"]: json.loads(r)["record"] for r in rows if r.strip()}
    for mode in ("strict", "official"):
        record, _ = _score(gta, tool_step, turn, mode)
        assert record.error_type not in ("scorer_error", None)
        for rec in records.values():
            case = next(c for c in _toolassess_cases(ta, rec))
            for prediction in (number, "[" + number + "]", '{"label": ' + number + "}"):
                record, _ = _score(ta, case, prediction, mode)
                assert record.error_type not in ("scorer_error", None), (rec["task"], prediction[:20])


def _toolassess_cases(bench: Benchmark, record: dict[str, Any]) -> list[EvalCase]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "t.jsonl"
        p.write_text(json.dumps(record) + "\n", encoding="utf-8")
        return bench.load(p)


def _acebench_case(**match: Any) -> EvalCase:
    r = _row("acebench", **match)
    return EvalCase(id="x", benchmark="acebench", category=r["category"], input=r["input"], gold=r["gold"])


def test_acebench_chain_of_concatenations_is_quick() -> None:
    # official folded "x"*9999 + "x"*9999 + ... copying ever longer strings: 6 s
    prediction = "[get_weather(city=" + "+".join(['"x"*9999'] * 950) + ")]"
    record, spent = _score(get_benchmark("acebench"), _acebench_case(name="exact_match"), prediction, "official")
    assert spent < QUICK and record.error_type == "wrong_output_format"


def test_acebench_reported_state_that_is_no_object_is_a_mismatch() -> None:
    # the official comparison called .items() on it: AttributeError, a scorer_error
    case = _acebench_case(name="agent_gold_sequence")
    state = [{next(iter(c)): True} for c in case.gold["state"]]
    record, _ = _score(get_benchmark("acebench"), case, json.dumps({"result": state}), "official")
    assert record.error_type == "end_state_mismatch"


# ---- the budget itself ----------------------------------------------------------------------------
class _Spin(Benchmark):
    """A scorer stuck in a loop (``check``: calling ``check_time``), asleep, or asleep while paused."""

    def __init__(self, how: str) -> None:
        self.how = how

    def load(self, data: Path) -> list[EvalCase]:
        return []

    def score(self, case: EvalCase, prediction: str, mode: Any) -> RecordResult:
        if case.id == "normal":
            return passed(case)
        if self.how == "spin":
            while True:
                pass
        if self.how == "check":
            while True:
                core.check_time()
        if self.how == "paused":
            with core.budget_paused():
                time.sleep(0.5)
            return passed(case)
        time.sleep(0.5)
        return passed(case)

    def aggregate(self, cases: list[EvalCase], records: list[RecordResult], mode: Any) -> dict[str, Any]:
        return {}

    def gold_prediction(self, case: EvalCase) -> str:
        return ""


def _cases(*ids: str) -> list[EvalCase]:
    return [EvalCase(id=i, benchmark="spin", category="c") for i in ids]


def test_a_record_stuck_in_a_loop_is_stopped_at_its_time_limit() -> None:
    budget = core.Budget(seconds=0.3)
    start = time.perf_counter()
    run = score_cases(_Spin("spin"), _cases("stuck", "normal"), {"stuck": "x", "normal": "x"}, "strict", budget)
    assert time.perf_counter() - start < 3
    stuck, normal = run.records
    assert stuck.error_type == "over_budget" and stuck.details["budget"] == "seconds" and "seconds" in stuck.reason
    assert normal.ok  # the next record is scored as usual
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_off_the_main_thread_the_cooperative_and_final_checks_apply() -> None:
    budget = core.Budget(seconds=0.2)
    out: dict[str, Any] = {}

    def work() -> None:
        for how in ("check", "sleep", "paused"):
            out[how] = score_cases(_Spin(how), _cases("r"), {"r": "x"}, "strict", budget).records[0]

    t = threading.Thread(target=work)
    t.start()
    t.join(20)
    assert out["check"].error_type == "over_budget" and out["check"].details["budget"] == "seconds"
    assert out["sleep"].error_type == "over_budget"  # finished, but later than its limit
    assert out["paused"].ok  # time inside budget_paused (loading a model) does not count


def test_outside_score_cases_no_limit_applies() -> None:
    core.check_limit("calls", 10**9)
    core.check_time()
    core.check_value([[[[]]]] * 3)
    assert core.current_budget() is None


def _bfcl_score_cli(tmp_path: Path, result: str) -> subprocess.CompletedProcess[str]:
    """``eval score`` of one BFCL record (the fixture's exact_call) predicted as ``result``."""
    data = tmp_path / "bfcl"
    (data / "possible_answer").mkdir(parents=True)
    r = _row("bfcl", name="exact_call")
    (data / "BFCL_v4_simple_python.json").write_text(json.dumps(
        {"id": "simple_python_0", "question": [[{"role": "user", "content": "area?"}]], "function": r["functions"]}) + "\n")
    (data / "possible_answer" / "BFCL_v4_simple_python.json").write_text(json.dumps(
        {"id": "simple_python_0", "ground_truth": r["gold"]}) + "\n")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"id": "simple_python_0", "result": result}) + "\n")
    return subprocess.run([console_script(), "eval", "score", "--benchmark", "bfcl", "--data", str(data), "--predictions",
                           str(preds), "--out", str(tmp_path / "out")], capture_output=True, text=True, env=clean_env(),
                          timeout=120)


def test_a_prediction_over_the_size_limit_is_over_budget_in_records_jsonl(tmp_path: Path) -> None:
    proc = _bfcl_score_cli(tmp_path, "[" + "x" * 150_000 + "]")
    assert proc.returncode == 0, proc.stderr
    line = json.loads((tmp_path / "out" / "records.jsonl").read_text().splitlines()[0])
    assert line["error_type"] == "over_budget" and not line["ok"]
    assert line["details"] == {"budget": "prediction_chars", "figure": 150_002, "limit": core.DEFAULT_BUDGET.prediction_chars}
    assert "prediction_chars" in line["reason"]


def test_odd_literals_in_model_output_print_no_parser_warning(tmp_path: Path) -> None:
    # Python's parser printed "<unknown>:1: SyntaxWarning: invalid decimal literal" on the CLI's stderr
    proc = _bfcl_score_cli(tmp_path, "[geometry.area(base=1if 1 else 2, height=5)]")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


# ---- data files through the CLI -------------------------------------------------------------------
def _cli_score(benchmark: str, data: Path, tmp_path: Path) -> str:
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"id": "a", "result": "x"}\n')
    proc = subprocess.run([console_script(), "eval", "score", "--benchmark", benchmark, "--data", str(data),
                           "--predictions", str(preds), "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          env=clean_env(), timeout=120)
    assert proc.returncode == 2, proc.stderr
    return one_error_line(proc.stderr)


def test_toolassess_data_that_is_not_utf8_is_one_red_line(tmp_path: Path) -> None:
    data = tmp_path / "ta.jsonl"
    data.write_bytes(b'{"id": "a", "task": "awareness", "query": "q", "label": "no_tool"}\n'
                     b'{"id": "b", "task": "awareness", "query": "caf\xe9", "label": "no_tool"}\n')
    line = _cli_score("toolassess", data, tmp_path)
    assert f"{data}:2" in line and "UTF-8" in line


def test_toolassess_data_with_a_5000_digit_number_is_one_red_line(tmp_path: Path) -> None:
    data = tmp_path / "ta.jsonl"
    data.write_text('{"id": "a", "task": "awareness", "query": "q", "n": ' + "9" * 5000 + ', "label": "no_tool"}\n')
    assert f"{data}:1" in _cli_score("toolassess", data, tmp_path)


def test_teval_data_with_a_5000_digit_number_is_one_red_line(tmp_path: Path) -> None:
    data = tmp_path / "teval"
    data.mkdir()
    (data / "review_str_v2.json").write_text('{"0": {"ground_truth": {"answer": ' + "9" * 5000 + "}}}")
    assert "review_str_v2.json:1" in _cli_score("teval", data, tmp_path)


@pytest.mark.parametrize("benchmark", ["bfcl", "acebench"])
def test_jsonl_benchmark_data_that_is_not_utf8_is_one_red_line(benchmark: str, tmp_path: Path) -> None:
    # read_json_lines replaced the bad bytes silently before
    data = tmp_path / benchmark
    (data / "possible_answer").mkdir(parents=True)
    if benchmark == "bfcl":
        name, answer = "BFCL_v4_simple_python.json", {"id": "a", "ground_truth": [{"f": {"x": [1]}}]}
    else:
        name, answer = "data_special_incomplete.json", {"id": "a", "ground_truth": {}}
    (data / "possible_answer" / name).write_text(json.dumps(answer) + "\n")
    (data / name).write_bytes(b'{"id": "a", "question": "x"}\n{"id": "b", "question": "caf\xe9"}\n')
    line = _cli_score(benchmark, data, tmp_path)
    assert f"{data / name}:2" in line and "UTF-8" in line
