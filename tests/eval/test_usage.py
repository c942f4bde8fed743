"""Usage and cost (issue 30): what a run's calls cost is summed exactly from its replies.jsonl into
run.json and scores.json, priced from a ``--prices`` table (cached prompt tokens at their own price),
per correct case too; a reply cut by its output budget is ``output_budget_exhausted`` (with the
reasoning tokens the endpoint reported), never a transport error; the run's ``--seed`` reaches every
request and is recorded per reply. Through the CLI, against a real HTTP endpoint on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runs import ANSWER, cli, eval_run, replies
from fake_openai import FakeOpenAI, completion
from helpers import EVAL_FIXTURES, build_slot_split, pair_lines

PRICES = EVAL_FIXTURES / "usage_prices.json"


def _reply(body: dict) -> dict:
    """Usage that differs per request (a pure function of it); every third request is cut at its
    budget, mid-thought, with reasoning tokens reported."""
    n = len(json.dumps(body["messages"]))
    prompt, cached, completion_tokens = 100 + n % 53, (n % 4) * 10, 5 + n % 7
    cut = n % 3 == 0
    out = completion('{"decision": "no_to' if cut else ANSWER, finish_reason="length" if cut else "stop")
    out["usage"] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": 3 if cut else 0},
    }
    return out


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    root = tmp_path_factory.mktemp("usage")
    split = build_slot_split(root, pair_lines()[:6])
    seeds: list[object] = []

    def reply(body: dict) -> dict:
        seeds.append(body.get("seed"))
        return _reply(body)

    out = root / "run"
    with FakeOpenAI(reply) as ep:
        run = eval_run(split, out, ep.base_url, "--limit", "9", "--seed", "5", "--prices", str(PRICES))
    assert run.returncode == 0, run.stdout + run.stderr
    assert seeds and set(seeds) == {5}, seeds  # the run's seed reached every request
    score = cli("eval", "score", "--run", str(out), "--resamples", "200")
    assert score.returncode == 0, score.stdout + score.stderr
    return out, replies(out / "toolassess" / "replies.jsonl")


def _summed(lines: list[dict]) -> dict[str, int]:
    turns = [t for line in lines for t in line["turns"] if not t["shared"]]
    return {
        "calls": len(turns),
        "prompt_tokens": sum(t["usage"]["prompt_tokens"] for t in turns),
        "cached_prompt_tokens": sum(t["usage"].get("cached_tokens", 0) for t in turns),
        "completion_tokens": sum(t["usage"]["completion_tokens"] for t in turns),
        "reasoning_tokens": sum(t["usage"].get("reasoning_tokens", 0) for t in turns),
        "output_budget_exhausted": sum(t["finish_reason"] == "length" for t in turns),
    }


def test_usage_is_summed_exactly_from_the_replies(scored) -> None:
    out, lines = scored
    expected = _summed(lines)
    assert expected["output_budget_exhausted"] > 0 and expected["cached_prompt_tokens"] > 0
    run_usage = json.loads((out / "run.json").read_text())["tasks"]["toolassess"]["usage"]["assistant"]
    score_usage = json.loads((out / "toolassess" / "scores.json").read_text())["usage"]["assistant"]
    for usage in (run_usage, score_usage):
        assert {k: usage[k] for k in expected} == expected
        assert usage["model"] == "fake"
        assert 0 < usage["latency_p50_s"] <= usage["latency_p90_s"] <= usage["latency_p99_s"]


def test_cost_is_priced_from_the_table(scored) -> None:
    out, lines = scored
    u = _summed(lines)
    total = (
        (u["prompt_tokens"] - u["cached_prompt_tokens"]) * 2.5
        + u["cached_prompt_tokens"] * 1.25
        + u["completion_tokens"] * 10
    ) / 1e6
    scores = json.loads((out / "toolassess" / "scores.json").read_text())
    correct = sum(json.loads(x)["ok"] for x in (out / "toolassess" / "records.jsonl").read_text().splitlines())
    cost = scores["cost"]
    assert cost["currency"] == "EUR" and cost["total"] == pytest.approx(total, rel=1e-12)
    assert cost["successes"] == correct > 0 and cost["per_success"] == pytest.approx(total / correct, rel=1e-12)
    assert cost["unpriced"] == [] and scores["usage"]["assistant"]["cost"] == pytest.approx(total, rel=1e-12)
    assert json.loads((out / "run.json").read_text())["tasks"]["toolassess"]["cost"]["total"] == pytest.approx(total)


def test_a_reply_cut_at_its_budget_is_its_own_error_type(scored) -> None:
    _, lines = scored
    cut = [line for line in lines if line["turns"] and line["turns"][-1]["finish_reason"] == "length"]
    assert cut
    for line in cut:
        assert line["status"] == "format_error"
        assert line["error"]["type"] == "output_budget_exhausted"
        assert "3 of them reasoning" in line["error"]["message"]
    whole = [line for line in lines if line["turns"] and line["turns"][-1]["finish_reason"] == "stop"]
    assert whole and all(line["status"] == "ok" for line in whole)


def test_every_reply_records_its_seed_and_role(scored) -> None:
    _, lines = scored
    turns = [t for line in lines for t in line["turns"]]
    assert turns and all(t["seed"] == 5 and t["role"] == "assistant" for t in turns)


def test_an_unreadable_price_table_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "prices.json"
    bad.write_text(json.dumps({"per_million_tokens": {"fake": {"prompt": -1, "completion": 1}}}))
    proc = cli("eval", "score", "--run", str(tmp_path), "--prices", str(bad))
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "per_million_tokens" in proc.stderr


def test_repeats_ask_the_same_cases_with_fresh_seeds(tmp_path: Path) -> None:
    split = build_slot_split(tmp_path, pair_lines()[:6])
    asked: list[tuple[object, str]] = []

    def reply(body: dict) -> str:
        asked.append((body.get("seed"), json.dumps(body["messages"])))
        return ANSWER

    out = tmp_path / "run"
    with FakeOpenAI(reply) as ep:
        run = eval_run(split, out, ep.base_url, "--limit", "3", "--seed", "5", "--repeats", "2")
    assert run.returncode == 0, run.stdout + run.stderr
    manifests = [json.loads((out / f"repeat-{n}" / "run.json").read_text()) for n in (1, 2)]
    assert [(m["repeat"], m["repeats"], m["model"]["seed"]) for m in manifests] == [(1, 2, 5), (2, 2, 6)]
    by_seed = {seed: sorted(m for s, m in asked if s == seed) for seed in (5, 6)}
    assert len(asked) == 6 and by_seed[5] == by_seed[6]  # the same three requests, each seed once
