"""The agent benchmark's scorer on fixture cases (tests/fixtures/eval/agent_cases.jsonl: a packaged
scenario, an episode prediction, the expected verdict, error type and process accuracy; a null
prediction is the scenario's gold)."""

from __future__ import annotations

import json

import pytest
from helpers import EVAL_FIXTURES

from benchsmith.eval import get_benchmark
from benchsmith.eval.agent._plugin import AgentRow, agent_metrics

ROWS = [json.loads(x) for x in (EVAL_FIXTURES / "agent_cases.jsonl").read_text().splitlines() if x.strip()]
BENCH = get_benchmark("agent")
CASES = {c.id: c for c in BENCH.load("sandbox")}


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
@pytest.mark.parametrize("mode", ["strict", "official"])
def test_agent_scorer_cases(row, mode):
    case = CASES[row["scenario"]]
    pred = row["prediction"]
    text = BENCH.gold_prediction(case) if pred is None else pred if isinstance(pred, str) else json.dumps(pred)
    rec = BENCH.score(case, text, mode)
    want = row["expect"]
    assert (rec.ok, rec.error_type) == (want["ok"], want["error_type"]), rec.reason
    if want["process"] is not None:
        assert rec.details["process"] == pytest.approx(want["process"])


def test_every_packaged_scenarios_gold_passes():
    assert all(BENCH.score(c, BENCH.gold_prediction(c), "strict").ok for c in CASES.values())


def test_metrics_are_a_function_of_the_rows():
    """A user simulator failure is counted as an episode but never charged; end reasons and the
    episodes the user never stopped are counted; both modes give the same figures."""
    rows = [
        AgentRow(id="a", category="scenario", ok=True, score=1.0, error_type=None, process=1.0, end="user_turn_budget"),
        AgentRow(id="b", category="dialogue", ok=False, score=0.0, error_type="gave_up", process=0.5, end="user_stop"),
        AgentRow(
            id="c", category="scenario", ok=False, score=0.0, error_type="user_simulator_failure", end="user_failure"
        ),
        AgentRow(id="d", category="scenario", ok=False, score=0.0, error_type="missing_prediction"),
    ]
    out = agent_metrics(rows, "strict")
    assert out == agent_metrics(rows, "official") and "reliability" not in out
    assert (out["episodes"], out["counted_episodes"], out["user_simulator_failures"]) == (4, 3, 1)
    assert out["end_state_accuracy"] == 1 / 3 and out["process_accuracy"] == 0.5
    assert out["categories"]["scenario"] == {"n": 2, "correct": 1, "end_state_accuracy": 0.5, "process_accuracy": 0.5}
    assert out["error_types"] == {"gave_up": 1, "missing_prediction": 1, "user_simulator_failure": 1}
    assert out["end_reasons"] == {"unknown": 1, "user_failure": 1, "user_stop": 1, "user_turn_budget": 1}
    assert out["user_never_stopped"] == 1
