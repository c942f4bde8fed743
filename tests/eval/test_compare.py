"""``benchsmith compare`` (``benchsmith.eval.compare_runs``): two identical runs show no
difference, a run that is right where the other is wrong is flagged, and runs that measured
something else (refusals: tests/fixtures/eval/compare_refusals.jsonl) are refused with one line
naming the difference unless ``--allow`` names it."""

from __future__ import annotations

import json
import subprocess

import pytest
from helpers import EVAL_FIXTURES, clean_env, console_script, one_error_line

from benchsmith.eval import CompareOptions, compare_runs, noise_floor
from benchsmith.schemas import (
    EvalCase,
    RecordResult,
    RunManifest,
    RunTask,
    UserError,
    write_cases,
    write_records,
    write_run_manifest,
)

REFUSALS = [json.loads(x) for x in (EVAL_FIXTURES / "compare_refusals.jsonl").read_text().splitlines()]
N = 30


def make_run(root, oks, *, prompt="ta@v1", mode="strict", drop=0, gold_of=lambda i: i, repeat=None):
    """A scored run folder of one ToolAssess task: case ``c<i>`` right where ``oks[i]``."""
    folder = root / "toolassess"
    folder.mkdir(parents=True)
    ids = range(N - drop)
    cats = ["awareness", "selection"]
    write_cases(
        folder / "cases.jsonl",
        (EvalCase(id=f"c{i:02}", benchmark="toolassess", category=cats[i % 2], gold={"g": gold_of(i)}) for i in ids),
    )
    write_records(
        folder / "records.jsonl",
        (RecordResult(id=f"c{i:02}", category=cats[i % 2], ok=oks[i], score=float(oks[i])) for i in ids),
    )
    (folder / "scores.json").write_text(json.dumps({"benchmark": "toolassess", "mode": mode, "records": N - drop}))
    write_run_manifest(
        root / "run.json",
        RunManifest(
            tasks={"toolassess": RunTask(benchmark="toolassess", cases=N - drop, prompt_version=prompt)},
            repeat=repeat,
            repeats=None if repeat is None else 3,
        ),
    )
    return root


HALF = [i % 3 != 0 for i in range(N)]


def test_identical_runs_show_no_difference(tmp_path):
    a, b = make_run(tmp_path / "a", HALF), make_run(tmp_path / "b", HALF)
    (comparison,) = compare_runs([a, b])
    assert comparison.allowed == []
    assert [f.category for f in comparison.figures] == [None, "awareness", "selection"]
    for f in comparison.figures:
        assert f.difference == 0.0 and f.only_a == f.only_b == 0 and f.p_value == 1.0 and f.within_noise


def test_a_better_run_is_flagged(tmp_path):
    a, b = make_run(tmp_path / "a", [i < 5 for i in range(N)]), make_run(tmp_path / "b", [True] * N)
    head = compare_runs([a, b])[0].figures[0]
    assert (head.cases, head.only_a, head.only_b) == (N, 0, N - 5)
    assert head.difference == pytest.approx((N - 5) / N)
    assert head.interval[0] > 0 and head.p_value == pytest.approx(2 * 0.5**25) and not head.within_noise


def test_a_few_flips_are_within_noise(tmp_path):
    flipped = [not v if i in (1, 4) else v for i, v in enumerate(HALF)]
    a, b = make_run(tmp_path / "a", HALF), make_run(tmp_path / "b", flipped)
    head = compare_runs([a, b])[0].figures[0]
    assert head.only_a + head.only_b == 2 and head.within_noise and head.interval[0] <= 0 <= head.interval[1]


def _changed(root, change):
    if change == "prompt":
        return make_run(root, HALF, prompt="ta@v2")
    if change == "cases":
        return make_run(root, HALF, drop=1)
    if change == "split":
        return make_run(root, HALF, gold_of=lambda i: -1 if i == 0 else i)
    return make_run(root, HALF, mode="official")


@pytest.mark.parametrize("case", REFUSALS, ids=[c["why"] for c in REFUSALS])
def test_mismatched_runs_are_refused(tmp_path, case):
    a = make_run(tmp_path / "a", HALF)
    b = _changed(tmp_path / "b", case["input"]["change"])
    with pytest.raises(UserError) as exc:
        compare_runs([a, b])
    assert case["expected"]["message"] in str(exc.value) and f"--allow {case['expected']['kind']}" in str(exc.value)
    allowed = compare_runs([a, b], CompareOptions(allow=frozenset({case["expected"]["kind"]})))[0].allowed
    assert allowed == [case["expected"]["message"].replace("task ", "", 1)]


def test_cli_refusal_is_one_line_and_exit_2(tmp_path):
    a, b = make_run(tmp_path / "a", HALF), make_run(tmp_path / "b", HALF, prompt="ta@v2")
    proc = subprocess.run(
        [console_script(), "compare", str(a), str(b)], capture_output=True, text=True, env=clean_env(), timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert "prompt version ta@v1 vs ta@v2" in one_error_line(proc.stderr) and "--allow prompt" in proc.stderr
    out = tmp_path / "cmp.json"
    proc = subprocess.run(
        [console_script(), "compare", str(a), str(b), "--allow", "prompt", "--out", str(out)],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "within noise" in proc.stdout
    assert json.loads(out.read_text())[0]["allowed"] == ["toolassess: prompt version ta@v1 vs ta@v2"]


def test_noise_floor_of_repeats(tmp_path):
    """Three repeats: 2, 4 and 2 cases flip between the pairs (1, 2), (1, 3), (2, 3) of 30."""
    first = HALF
    second = [not v if i in (0, 1) else v for i, v in enumerate(HALF)]
    third = [not v if i in (2, 3) else v for i, v in enumerate(HALF)]
    runs = [make_run(tmp_path / f"repeat-{n}", oks, repeat=n) for n, oks in enumerate((first, second, third), 1)]
    (figure,) = noise_floor(runs)
    assert (figure.task, figure.repeats, figure.cases) == ("toolassess", 3, N)
    rate = (2 + 2 + 4) / 3 / N
    assert figure.flip_rate == pytest.approx(rate, abs=1e-6)
    assert figure.min_detectable_difference == pytest.approx((1.959964 + 0.841621) * (rate / N) ** 0.5, abs=1e-5)
    proc = subprocess.run(
        [console_script(), "compare", *map(str, runs)], capture_output=True, text=True, env=clean_env(), timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert f"toolassess: {100 * rate:.1f}% of {N} cases flip between two repeats" in proc.stdout
