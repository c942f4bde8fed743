"""docs/architecture.md's "How to add a benchmark", followed: a toy benchmark in one folder
(tests/fixtures/toy_benchmark: benchmark, scorer, deriver, report view, run task), loaded as a
plug-in with $BENCHSMITH_PLUGINS, goes through the CLI like a built-in one: list, derive, selftest,
score, run (against a real OpenAI-compatible endpoint on 127.0.0.1), score the run, report.
Its scorer cases are a data fixture (tests/fixtures/toy_benchmark/scorer_cases.jsonl)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import build_slot_split, endpoint_env, pair_lines

TOY = Path(__file__).resolve().parent / "fixtures" / "toy_benchmark"
NAME = "toy_first_tool"


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "benchsmith.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=endpoint_env(BENCHSMITH_PLUGINS=str(TOY), **env),
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("toy"), pair_lines()[:6])


@pytest.fixture(scope="module")
def derived(split: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("toy-derived") / "d"
    proc = _cli("eval", "derive", "--split", str(split), "--out", str(out), "--only", NAME)
    assert proc.returncode == 0, proc.stderr
    return out


def test_the_plugin_is_listed_with_its_task_and_deriver() -> None:
    proc = _cli("eval", "list")
    assert proc.returncode == 0, proc.stderr
    assert f"{NAME}: tasks {NAME}; derivers {NAME}; export -; scorers 1" in proc.stdout
    plain = subprocess.run(
        [sys.executable, "-m", "benchsmith.cli", "eval", "list"],
        capture_output=True,
        text=True,
        timeout=300,
        env=endpoint_env(),
    )
    assert NAME not in plain.stdout  # nothing of it is registered without the plug-in


def test_derive_and_selftest(derived: Path, tmp_path: Path) -> None:
    report = json.loads((derived / "derive_report.json").read_text(encoding="utf-8"))
    assert report["derived"][NAME]["benchmark"] == NAME and report["derived"][NAME]["records"]
    proc = _cli("eval", "selftest", "--benchmark", NAME, "--data", str(derived / NAME), "--out", str(tmp_path / "st"))
    assert proc.returncode == 0, proc.stderr
    scores = json.loads((tmp_path / "st" / "scores.json").read_text(encoding="utf-8"))
    assert scores["accuracy"] == 1.0 and scores["gold_failing"] == 0


def test_score_a_predictions_file(derived: Path, tmp_path: Path) -> None:
    cases = [json.loads(x) for x in (derived / NAME / "cases.jsonl").read_text(encoding="utf-8").splitlines() if x]
    preds = tmp_path / "preds.jsonl"
    # the first case right, every other one wrong
    preds.write_text(
        "".join(
            json.dumps({"id": c["id"], "result": c["first_tool"] if i == 0 else "no_such_tool"}) + "\n"
            for i, c in enumerate(cases)
        ),
        encoding="utf-8",
    )
    proc = _cli(
        "eval",
        "score",
        "--benchmark",
        NAME,
        "--data",
        str(derived / NAME),
        "--predictions",
        str(preds),
        "--out",
        str(tmp_path / "s"),
    )
    assert proc.returncode == 0, proc.stderr
    scores = json.loads((tmp_path / "s" / "scores.json").read_text(encoding="utf-8"))
    assert scores["correct"] == 1 and scores["total"] == len(cases) > 1


def _reply(body: dict) -> str:
    first = body["messages"][-1]["content"].split("Tools:\n- ", 1)[1].split(":", 1)[0]
    return json.dumps({"tool": first})


def test_run_score_and_report_through_the_cli(derived: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    with FakeOpenAI(_reply) as ep:
        proc = _cli(
            "eval",
            "run",
            "--split",
            str(derived),
            "--tasks",
            NAME,
            "--out",
            str(run),
            "--model",
            "fake",
            "--calling",
            "prompt",
            BENCHSMITH_BASE_URL=ep.base_url,
        )
    assert proc.returncode == 0, proc.stderr
    proc = _cli("eval", "score", "--run", str(run))
    assert proc.returncode == 0, proc.stderr
    scores = json.loads((run / NAME / "scores.json").read_text(encoding="utf-8"))
    assert 0.0 < scores["accuracy"] <= 1.0  # the fake model names the first tool listed
    proc = _cli("report", str(run), "--out", str(tmp_path / "rep"))
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert NAME in html and "Toy first tool" in html  # the task's section and its view's radar axis
    board = (tmp_path / "rep" / "leaderboard.csv").read_text(encoding="utf-8")
    assert "accuracy" in board


def _scorer_cases() -> list[dict]:
    path = TOY / "scorer_cases.jsonl"
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.fixture(autouse=True, scope="module")
def _registries_as_before():
    """The scorer cases import the plug-in in this process: its names leave the registries afterwards,
    so tests that run later see the built-ins only."""
    from benchsmith.eval import BENCHMARKS, TASKS
    from benchsmith.eval.scoring import SCORERS

    before = {id(r): set(r) for r in (BENCHMARKS, SCORERS, TASKS)}
    yield
    for registry in (BENCHMARKS, SCORERS, TASKS):
        for name in set(registry) - before[id(registry)]:
            del registry[name]
    for module in [m for m in sys.modules if m == "toy_benchmark" or m.startswith("toy_benchmark.")]:
        del sys.modules[module]


@pytest.mark.parametrize("row", _scorer_cases(), ids=lambda r: r["name"])
def test_scorer_case(row: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TOY.parent))
    from toy_benchmark import first_tool_scorer

    from benchsmith.eval import EvalCase

    case = EvalCase(id="x", benchmark=NAME, category="single", gold=row["gold"])
    for mode, expected in row["expect"].items():
        record = first_tool_scorer(case, row["prediction"], mode)
        assert (record.ok, record.error_type) == (expected["ok"], expected["error_type"]), mode
