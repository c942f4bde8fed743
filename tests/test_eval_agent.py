"""The agent benchmark's scorer on fixture cases (tests/fixtures/eval/agent_cases.jsonl: a packaged
scenario, an episode prediction, the expected verdict, error type and process accuracy; a null
prediction is the scenario's gold)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchsmith.eval import get_benchmark

ROWS = [
    json.loads(x)
    for x in (Path(__file__).parent / "fixtures" / "eval" / "agent_cases.jsonl").read_text().splitlines()
    if x.strip()
]
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
