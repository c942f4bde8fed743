"""``benchsmith construct ...`` as a user runs it, against a real OpenAI-compatible endpoint on
127.0.0.1 whose replies are a pure function of the request: queries -> chains -> check, options
from the environment, bad input as one red line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import build_slot_split, endpoint_env, pair_lines


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("constructcli"), pair_lines()[:10])


def reply(body: dict) -> str:
    system, last = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system.startswith("You write realistic requests"):
        return '{"query": "How many rows does the data have in total?"}'
    if system.startswith("You improve a draft"):
        return '{"solvable": true, "query": "How many rows does this data have in total?"}'
    if system.startswith("You plan how to solve"):
        return (
            '{"done": true, "thought": "Counted."}'
            if last.startswith("Step ")
            else '{"done": false, "thought": "Count."}'
        )
    if system.startswith("You turn one planned step"):
        return '{"action": "aggregate_data", "arguments": {"data_source": "$data_1$", "aggregation": "count"}, "thought": "c"}'
    if system.startswith("You review one step"):
        return '{"verdict": "success", "decision": "finish"}'
    if system.startswith("You check one sample"):
        odd = int(last.split("Answer: [[", 1)[1].split("]", 1)[0]) % 2  # rejects odd counts
        return '{"vote": "reject", "reason": "odd"}' if odd else '{"vote": "accept", "reason": "fine"}'
    raise AssertionError(system[:50])


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchsmith.cli", "construct", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_queries_chains_check_pipeline(split: Path, tmp_path: Path) -> None:
    with FakeOpenAI(reply) as ep:
        env = endpoint_env(BENCHSMITH_BASE_URL=ep.base_url, BENCHSMITH_MODEL="fake")
        q = _run(["queries", str(split), "--out", str(tmp_path / "q")], {**env, "BENCHSMITH_CONSTRUCT_OPTIONS": "n=6"})
        assert q.returncode == 0, q.stderr
        assert "6 items" in q.stdout and "per accepted sample" in q.stdout
        c = _run(
            ["chains", str(tmp_path / "q" / "samples.jsonl"), "--out", str(tmp_path / "c"), "--split", str(split)], env
        )
        assert c.returncode == 0, c.stderr
        made = _lines(tmp_path / "c" / "samples.jsonl")
        assert made and all(s["gold"][0]["call"]["name"] == "aggregate_data" for s in made)
        k = _run(
            [
                "check",
                str(tmp_path / "c" / "samples.jsonl"),
                "--out",
                str(tmp_path / "k"),
                "--split",
                str(split),
                "--no-dedupe",
            ],
            env,
        )
        assert k.returncode == 0, k.stderr
    summary = json.loads((tmp_path / "k" / "check_summary.json").read_text())
    accepted, pool = _lines(tmp_path / "k" / "accepted.jsonl"), _lines(tmp_path / "k" / "error_pool.jsonl")
    assert len(accepted) + len(pool) == len(made) == summary["total"]
    assert summary["vote"]["model_calls"] == summary["rules"]["accepted"]  # one voter, one call per sample voted on
    # the voter rejects odd counts: those (and only those) are pooled by model_vote
    voted_out = [r for r in pool if r["rejected_by"] == "model_vote"]
    assert voted_out and all(r["sample"]["answer"]["value"][0][0] % 2 == 1 for r in voted_out)
    assert accepted and all(s["answer"]["value"][0][0] % 2 == 0 for s in accepted)
    # executability re-ran each accepted gold chain on the real database
    for s in accepted:
        checks = {c["name"]: c for c in s["verification"]["checks"]}
        assert checks["executability"]["ok"] and checks["executability"]["code"] != "skipped"


def test_bad_input_is_one_red_line(tmp_path: Path) -> None:
    bad = tmp_path / "in.jsonl"
    bad.write_text('{"query": "x"}\nnot json\n')
    r = _run(
        ["chains", str(bad), "--out", str(tmp_path / "c"), "--model", "fake", "--base-url", "http://127.0.0.1:9/v1"],
        endpoint_env(),
    )
    assert r.returncode == 2 and "in.jsonl" in r.stderr and "line 2" in r.stderr.lower().replace(":2", " line 2")
    r = _run(["queries", str(tmp_path / "missing"), "--out", str(tmp_path / "q")], endpoint_env())
    assert r.returncode == 2 and "does not exist" in r.stderr and "Traceback" not in r.stderr
    r = _run(["queries", str(bad), "--out", str(tmp_path / "q"), "--role", "poet=x"], endpoint_env())
    assert r.returncode == 2 and "bad role model" in r.stderr
