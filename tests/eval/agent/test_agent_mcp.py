"""The agent benchmark on a live MCP server (issue 29): a scenario whose environment is
``mcp-server-sqlite`` on a fresh copy of a state template is scored by replaying the predicted
calls on a new server and comparing the end state the probes read; every server and work folder
is gone afterwards."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from mcp_servers import shop_environment

from benchsmith.eval import get_benchmark

BENCH = get_benchmark("agent")
INSERT = {"name": "write_query", "arguments": {"query": "INSERT INTO item VALUES (3, 'cup')"}, "label": "w"}


def _work_folders() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("benchsmith-mcp-work-*")}


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    root = shop_environment(tmp_path_factory.mktemp("agent-mcp"))
    sample = {
        "query": "Add a cup to the shop's items.",
        "tools": [
            {
                "name": "write_query",
                "description": "Run an INSERT, UPDATE or DELETE on the shop database.",
                "parameters": {"properties": {"query": {"type": "string"}}, "required": ["query"]},
            }
        ],
        "gold": [{"call": INSERT}],
        "provenance": {"source": "test", "method": "hand", "created_at": "2026-11-29T00:00:00Z"},
        "metadata": {
            "scenario_id": "shop-add-cup",
            "goal": "Add a cup to the shop's items.",
            "environment": {"kind": "mcp", "file": str(root / "environment.json")},
            # what the probe reads once the cup is in (mcp-server-sqlite answers with Python's repr of the rows)
            "expected_state": {
                "probes": ["[{'id': 1, 'name': 'pen'}, {'id': 2, 'name': 'ink'}, {'id': 3, 'name': 'cup'}]"]
            },
        },
    }
    path = root / "samples.jsonl"
    path.write_text(json.dumps(sample) + "\n", "utf-8")
    (loaded,) = BENCH.load(str(path))
    return loaded


def _prediction(*calls) -> str:
    return json.dumps({"calls": list(calls), "episode": {"end": "user_stop"}})


def test_the_gold_calls_reach_the_expected_end_state(case):
    before = _work_folders()
    record = BENCH.score(case, BENCH.gold_prediction(case), "strict")
    assert record.ok, record.reason
    assert _work_folders() == before  # the replay's server and work folder are gone


@pytest.mark.parametrize(
    "calls",
    [
        [],
        [{**INSERT, "arguments": {"query": "INSERT INTO item VALUES (3, 'mug')"}}],
        [INSERT, {"name": "write_query", "arguments": {"query": "DELETE FROM item WHERE id = 1"}, "label": "d"}],
    ],
    ids=["nothing done", "the wrong item", "one change too many"],
)
def test_another_end_state_fails(case, calls):
    record = BENCH.score(case, _prediction(*calls), "strict")
    assert not record.ok, record
