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
from fuzz_outputs import nested_text, nested_value, scorer_groups
from helpers import clean_env, console_script, have_embedding_model, one_error_line

from benchsmith.eval import Benchmark, EvalCase, RecordResult, get_benchmark, passed, score_cases
from benchsmith.eval import budget as core  # the scoring-budget API
from benchsmith.eval.calls import JSONValueText
from benchsmith.eval.scoring import never_raises
from benchsmith.eval.teval._scorers import scorer_name

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


needs_model = pytest.mark.skipif(
    not have_embedding_model(), reason="sentence-transformers / default model not installed"
)


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
    return EvalCase(
        id="x",
        benchmark="bfcl",
        category=r["category"],
        input={"question": [], "functions": r["functions"]},
        gold=r["gold"],
    )


@pytest.mark.parametrize("terms", [400, 950])
@pytest.mark.parametrize("mode", ["strict", "official"])
def test_bfcl_ten_kb_chain_of_string_concatenations_is_quick(mode: str, terms: int) -> None:
    # each "x"*99999 + ... copied an ever longer string: 5 s for 4 kB, 41 s for 10 kB
    prediction = "[geometry.area(base=" + "+".join(['"x"*99999'] * terms) + ")]"
    record, spent = _score(get_benchmark("bfcl"), _bfcl_case(), prediction, mode)
    assert spent < QUICK and record.error_type == "ast_decoder:decoder_failed"
    if terms == 400:
        assert "folded value" in record.reason


@pytest.mark.parametrize(
    "prediction",
    [
        "[geometry.area(base=10.0, height=5, unit=[[1]*10000]*10000)]",  # 14 s: 10^8 shared elements walked
        "[geometry.area(base=10.0, height=5, unit='%99999999d' % 1)]",  # 20 s: a 100 MB string
    ],
)
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
    return EvalCase(
        id=spec["name"],
        benchmark="teval",
        category=f"{spec['ability']}/{spec['format']}",
        input=inputs,
        gold=spec["gold"],
        meta={
            "ability": spec["ability"],
            "format": spec["format"],
            "scorer": scorer_name(spec["ability"], spec["format"]),
        },
    )


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
    record, _ = _score(
        get_benchmark("teval"), _teval_case(name="reason_str_same_thought"), "I need \ud800 articles", mode
    )
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

    def metrics(self, rows: list[Any], mode: Any) -> dict[str, Any]:
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
    (data / "BFCL_v4_simple_python.json").write_text(
        json.dumps(
            {"id": "simple_python_0", "question": [[{"role": "user", "content": "area?"}]], "function": r["functions"]}
        )
        + "\n"
    )
    (data / "possible_answer" / "BFCL_v4_simple_python.json").write_text(
        json.dumps({"id": "simple_python_0", "ground_truth": r["gold"]}) + "\n"
    )
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"id": "simple_python_0", "result": result}) + "\n")
    return subprocess.run(
        [
            console_script(),
            "eval",
            "score",
            "--benchmark",
            "bfcl",
            "--data",
            str(data),
            "--predictions",
            str(preds),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )


def test_a_prediction_over_the_size_limit_is_over_budget_in_records_jsonl(tmp_path: Path) -> None:
    proc = _bfcl_score_cli(tmp_path, "[" + "x" * 150_000 + "]")
    assert proc.returncode == 0, proc.stderr
    line = json.loads((tmp_path / "out" / "records.jsonl").read_text().splitlines()[0])
    assert line["error_type"] == "over_budget" and not line["ok"]
    assert line["details"] == {
        "budget": "prediction_chars",
        "figure": 150_002,
        "limit": core.DEFAULT_BUDGET.prediction_chars,
    }
    assert "prediction_chars" in line["reason"]


def test_odd_literals_in_model_output_print_no_parser_warning(tmp_path: Path) -> None:
    # Python's parser printed "<unknown>:1: SyntaxWarning: invalid decimal literal" on the CLI's stderr
    proc = _bfcl_score_cli(tmp_path, "[geometry.area(base=1if 1 else 2, height=5)]")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


# ---- data files through the CLI -------------------------------------------------------------------
def _cli_score(benchmark: str, data: Path, tmp_path: Path) -> str:
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"id": "a", "result": "x"}\n')
    proc = subprocess.run(
        [
            console_script(),
            "eval",
            "score",
            "--benchmark",
            benchmark,
            "--data",
            str(data),
            "--predictions",
            str(preds),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    return one_error_line(proc.stderr)


def test_toolassess_data_that_is_not_utf8_is_one_red_line(tmp_path: Path) -> None:
    data = tmp_path / "ta.jsonl"
    data.write_bytes(
        b'{"id": "a", "task": "awareness", "query": "q", "label": "no_tool"}\n'
        b'{"id": "b", "task": "awareness", "query": "caf\xe9", "label": "no_tool"}\n'
    )
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


# ---- issue 26: scoring that raises (deep nesting) ----------------------------------------------------
# An NL2API argument nested 950 levels deep made Benchmark.score raise RecursionError (the label
# renaming); values read from model output and case data are now measured (without recursion)
# before any helper walks them: deeper than MAX_DEPTH is a ``too_deep`` record. Deep text is made by
# string repetition and deep values level by level (fuzz_outputs.nested_text / nested_value): the
# cases are tests/fixtures/eval/deep_nesting_cases.jsonl (a case of a fuzz group, a prediction
# template with the nesting's shape and depth, the verdict per mode).
DEEP_ROWS = [
    json.loads(line)
    for line in (FIXTURES / "deep_nesting_cases.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A few cases of every benchmark's scorers (tests/fuzz_outputs.py)."""
    return scorer_groups(tmp_path_factory.mktemp("groups"))


def _fresh_stack(fn: Any) -> Any:
    """``fn()`` in a new thread, whose stack starts near empty as the CLI's scoring does: under
    pytest's own frames a 950-deep JSON text would not even parse, and no scorer would see it."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            out["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    t.join(120)
    if "error" in out:
        raise out["error"]
    return out["value"]


def _deep_case(groups: dict[str, Any], row: dict[str, Any]) -> tuple[Any, EvalCase, str]:
    group = groups[row["group"]]
    case = next(c for c in group.cases if c.id == row["case"])
    spec = row["prediction"]
    text = spec["template"].replace("{deep}", nested_text(spec["shape"], spec["depth"]))
    return group.bench, case, (JSONValueText(text) if spec.get("json_value") else text)


@pytest.mark.parametrize("mode", ["strict", "official"])
@pytest.mark.parametrize("row", DEEP_ROWS, ids=[r["name"] for r in DEEP_ROWS])
def test_deep_prediction_is_a_record(groups: dict[str, Any], row: dict[str, Any], mode: str) -> None:
    bench, case, prediction = _deep_case(groups, row)
    want = row["expected"][mode]
    record = _fresh_stack(lambda: bench.score(case, prediction, mode))  # no budget outside a run: MAX_DEPTH holds
    assert (record.ok, record.error_type) == (want["ok"], want["error_type"]), record
    assert "caught" not in record.details, record  # refused before any helper recursed, not the last resort
    (run,) = _fresh_stack(lambda: score_cases(bench, [case], {case.id: prediction}, mode).records)
    if want["error_type"] == "too_deep":
        assert f"nests over {core.MAX_DEPTH} levels" in record.reason, record
        # in a run the budget's depth limit (MAX_DEPTH by default) is met first
        assert run.error_type == "over_budget" and run.details["budget"] == "depth", run
    else:
        assert (run.ok, run.error_type) == (want["ok"], want["error_type"]), run


@pytest.mark.parametrize("mode", ["strict", "official"])
def test_nl2api_argument_950_deep_is_too_deep_whatever_the_budget(groups: dict[str, Any], mode: str) -> None:
    # before: RecursionError out of Benchmark.score (the CLI wrote a scorer_error record)
    row = next(r for r in DEEP_ROWS if r["name"] == "nl2api_slot_value_950_lists")
    bench, case, prediction = _deep_case(groups, row)
    record = _fresh_stack(lambda: bench.score(case, prediction, mode))
    assert record.error_type == "too_deep" and not record.ok and "nests over 100 levels" in record.reason
    assert record.details["intent_f1"] == 0.0 and record.details["completion"] is False
    (run,) = _fresh_stack(
        lambda: score_cases(bench, [case], {case.id: prediction}, mode, core.Budget(depth=10_000)).records
    )
    assert run.error_type == "too_deep"  # a budget deeper than MAX_DEPTH does not let the value through


def test_a_case_whose_gold_nests_too_deep_is_a_record(groups: dict[str, Any]) -> None:
    deep_gold = nested_value(950, "dict")
    for name, group in sorted(groups.items()):
        case = group.cases[0].model_copy(update={"gold": deep_gold})
        for mode in ("strict", "official"):
            record = group.bench.score(case, group.seeds[0], mode)
            assert record.error_type == "too_deep" and "the case's gold nests over" in record.reason, (name, record)


class _Unbounded(Benchmark):
    """A plug-in whose scorer has an unbounded recursive helper, or runs out of memory."""

    def __init__(self, how: str) -> None:
        self.how = how

    def load(self, data: Path) -> list[EvalCase]:
        return []

    def score(self, case: EvalCase, prediction: str, mode: Any) -> RecordResult:
        if self.how == "recursion":

            def walk(n: int) -> int:
                return 1 + walk(n + 1)

            walk(0)
        if self.how == "memory":
            raise MemoryError
        if self.how == "deep_value":
            core.check_value(nested_value(150))
        raise KeyError("a plain bug")

    def metrics(self, rows: list[Any], mode: Any) -> dict[str, Any]:
        return {}

    def gold_prediction(self, case: EvalCase) -> str:
        return ""


@pytest.mark.parametrize(
    "how, error_type, caught",
    [
        ("recursion", "too_deep", "RecursionError"),
        ("memory", "out_of_memory", "MemoryError"),
        ("deep_value", "too_deep", None),
    ],
)
def test_the_last_resort_turns_recursion_and_memory_errors_into_records(
    how: str, error_type: str, caught: str | None
) -> None:
    case = EvalCase(id="r", benchmark="unbounded", category="c")
    bench = _Unbounded(how)
    record = bench.score(case, "x", "strict")  # any Benchmark subclass: score never raises these
    assert (record.ok, record.error_type, record.details.get("caught")) == (False, error_type, caught), record
    (run,) = score_cases(bench, [case], {"r": "x"}, "strict").records
    expected = "over_budget" if how == "deep_value" else error_type  # in a run the budget's depth comes first
    assert run.error_type == expected and run.details.get("caught") == caught
    # a plain bug still propagates (the run reports it as scorer_error)
    with pytest.raises(KeyError):
        _Unbounded("bug").score(case, "x", "strict")
    (run,) = score_cases(_Unbounded("bug"), [case], {"r": "x"}, "strict").records
    assert run.error_type == "scorer_error"


def test_registered_scorers_are_guarded_too() -> None:
    case = EvalCase(id="r", benchmark="b", category="c")

    def part(case: EvalCase, prediction: str, mode: Any) -> RecordResult:
        return part(case, prediction, mode)  # unbounded

    guarded = never_raises(part)
    assert guarded(case, "x", "strict").details == {"caught": "RecursionError"}
    assert never_raises(guarded) is guarded
    from benchsmith.eval.nl2api import score_calls  # registered with @scorer: wrapped where it is defined

    assert getattr(score_calls, "__never_raises__", False)


def test_nesting_depth_is_measured_without_recursion() -> None:
    assert [core.nesting_depth(v) for v in (1, "[[x]]", [], {}, [[]], {"a": [1]}, ([{1: (2,)}],))] == [
        0,
        0,
        1,
        1,
        2,
        2,
        4,
    ]
    assert core.nesting_depth(nested_value(100)) == 100 and core.nesting_depth(nested_value(101)) == 101
    assert core.nesting_depth(nested_value(100_000)) == core.MAX_DEPTH + 1  # stops counting past the limit
    cycle: list[Any] = []
    cycle.append(cycle)
    assert core.nesting_depth(cycle) == core.MAX_DEPTH + 1
    shared = [[[1] * 1000] * 1000] * 1000  # a billion leaves, three levels: each shared list visited once
    assert core.nesting_depth(shared) == 3
    core.check_value(nested_value(100))  # outside a record: MAX_DEPTH still applies
    with pytest.raises(core.TooDeep, match="nests over 100 levels"):
        core.check_value(nested_value(101))
    with pytest.raises(core.TooDeep):  # the text holds too many brackets for the shortcut
        core.check_value(nested_value(101), nested_text("json_list", 101))
    core.check_value(nested_value(101), "[]")  # the shortcut: text that cannot hold the nesting (none walked)
    # a call reads as two levels: 60 nested calls hold 120 levels, though 60 parentheses
    assert core.brackets_bound(nested_text("py_call", 60)) >= 120


# ---- run tasks read deep replies as format errors ------------------------------------------------------
class _Ctx:
    """A CallContext stand-in that returns one scripted reply."""

    def __init__(self, raw: str, tool_calls: list[dict[str, Any]] | None = None) -> None:
        self.raw, self.tool_calls = raw, tool_calls or []

    async def call(self, req: Any, role: str = "model") -> tuple[None, Any]:
        from benchsmith.eval.tasks import Turn

        return None, Turn(messages=[], raw=self.raw, tool_calls=self.tool_calls)


_DEEP = "{deep}"
_REPLIES = {  # task -> (a fuzz group of its benchmark, the reply around the deep value)
    "bfcl": ("bfcl:ast/prompt", '{"calls": [{"name": "geometry.area", "arguments": {"unit": {deep}}}]}'),
    "gta": ("gta:step:tool", '{"thought": "t", "tool_calls": [{"name": "OCR", "arguments": {"image": {deep}}}]}'),
    "toolassess": ("toolassess:awareness", '{"decision": {deep}}'),
    "acebench": (
        "acebench:normal",
        '{"decision": "call", "calls": [{"name": "get_weather", "arguments": {"city": {deep}}}]}',
    ),
    "teval": ("teval:instruct/json", '{"thought": {deep}, "name": "x", "args": {}}'),
}


@pytest.mark.parametrize("depth", [150, 950, 5000])
@pytest.mark.parametrize("name", sorted(_REPLIES))
def test_a_deep_reply_is_a_format_error_of_the_run(groups: dict[str, Any], name: str, depth: int) -> None:
    import asyncio

    from benchsmith.eval import TaskOptions, get_task
    from benchsmith.eval.tasks import Request

    group, template = _REPLIES[name]
    task_cls = get_task(name)

    class Probe(task_cls):  # type: ignore[valid-type, misc]
        def request(self, case: EvalCase) -> Request:
            return Request([])

    task = Probe(Path("."), TaskOptions())
    case = groups[group].cases[0]
    reply = template.replace(_DEEP, nested_text("json_list", depth))
    outcome = asyncio.run(task.solve(case, _Ctx(reply)))  # before: ok with a 950-deep parsed reply, or a RecursionError
    assert outcome.status == "format_error", outcome
    expected = "too_deep" if depth < 1000 else "not_json"  # 5,000 deep is past the JSON reader's recursion limit
    assert outcome.error["type"] == expected, outcome.error
    assert outcome.turns[0].parsed is None


@pytest.mark.parametrize("depth", [150, 950, 5000])
def test_deep_tool_call_arguments_are_format_errors(depth: int) -> None:
    from benchsmith.eval._private.episode import read_assistant
    from benchsmith.eval.calls import native_tool_calls
    from benchsmith.eval.episodes import EpisodeSpec
    from benchsmith.eval.nl2api._task import parse_direct, parse_step
    from benchsmith.models import ParseError

    deep = nested_text("json_object", depth)
    expected = ("too_deep",) if depth < 1000 else ("bad_arguments", "not_json")  # 5,000: past the JSON reader's limit
    with pytest.raises(ParseError) as err:  # before: the arguments came back (950), a RecursionError (5,000)
        native_tool_calls([{"name": "f", "arguments": '{"a": ' + deep + "}"}])
    assert err.value.code in expected
    for parse in (lambda t: parse_step(t, {"f"}), parse_direct):
        with pytest.raises(ParseError) as err:
            parse('{"action": "f", "calls": [{"name": "f", "arguments": {"a": ' + deep + '}}], "arguments": {"a": 1}}')
        assert err.value.code in expected
    spec = EpisodeSpec(instruction="x", tools=[{"name": "f"}], open_env=lambda: None)
    with pytest.raises(ParseError) as err:
        read_assistant(spec, '{"tool_calls": [{"name": "f", "arguments": {"a": ' + deep + "}}]}", [], False, 0)
    assert err.value.code in expected
