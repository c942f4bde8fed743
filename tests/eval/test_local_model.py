"""Integration: the evaluation runner against the real local default model (Qwen2.5-Coder 0.5B
Instruct on xllamacpp, 127.0.0.1). A weak model: its scores are low, but every case must end with a recorded
reply (answered, unreadable or refused — never lost), the end-to-end task must really execute
tools, and scoring and the report must work on what it produced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import build_slot_split, pair_lines

from benchsmith.eval import TaskOptions, run_eval, score_run
from benchsmith.eval.report import write_report
from benchsmith.models import DEFAULT_LOCAL_MODEL, ModelClient, resolve_model


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("localsplit"), pair_lines()[:6])


def test_the_local_model_runs_every_task_kind_end_to_end(local, split: Path, tmp_path: Path) -> None:
    cfg = resolve_model(DEFAULT_LOCAL_MODEL, None, timeout=240.0, max_tokens=160)
    assert cfg.local and cfg.base_url == local.base_url
    out = tmp_path / "run"
    res = run_eval(
        split,
        ModelClient(cfg),
        {"name": cfg.name, "base_url": cfg.base_url, "local": True},
        out,
        tasks=["nl2api", "toolassess", "gta", "acebench_special"],
        limit=2,
        concurrency=2,
        calling="prompt",
        progress=False,
        options=TaskOptions(calling="prompt", max_tokens=160, step_budget=3),
    )
    assert res.status == "complete"
    for name, info in res.tasks.items():
        c = info.status_counts
        assert c["transport_error"] == 0 and c["pending"] == 0, (name, c)
        assert info.done == info.cases == 2, (name, info)
        assert info.model_calls > 0 and info.completion_tokens > 0
    # JSON-constrained decoding: single-call replies parse (a reply cut at max_tokens may not)
    ta = [json.loads(x) for x in (out / "toolassess" / "replies.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" for r in ta), [r["turns"][0]["raw"] for r in ta]
    # end to end: several real steps per case, tool observations fed back
    e2e = [json.loads(x) for x in (out / "nl2api" / "replies.jsonl").read_text().splitlines()]
    assert all(1 <= len(r["turns"]) <= 3 for r in e2e)
    later = [t for r in e2e for t in r["turns"][1:]]
    assert any(
        m["content"].startswith(("Output $out_", "Error")) for t in later for m in t["messages"] if m["role"] == "user"
    )
    scores = score_run(out)
    assert set(scores) == set(res.tasks)
    for s in scores.values():
        assert s["records"] == 2 and s["transport_errors"] == 0
    report = write_report([out], tmp_path / "report")
    html = Path(report["files"]["html"]).read_text(encoding="utf-8")
    assert DEFAULT_LOCAL_MODEL in html and "<svg" in html


def test_the_local_model_plays_agent_episodes_against_itself_as_the_user(local, tmp_path: Path) -> None:
    cfg = resolve_model(DEFAULT_LOCAL_MODEL, None, timeout=240.0, max_tokens=160)
    out = tmp_path / "agent-run"
    res = run_eval(
        "sandbox",
        ModelClient(cfg),
        cfg.describe(),
        out,
        tasks=["agent"],
        limit=2,
        concurrency=2,
        calling="prompt",
        progress=False,
        user_client=ModelClient(cfg),
        user_model=cfg.describe(),
        options=TaskOptions(calling="prompt", max_tokens=160, trials=2, max_turns=2, max_steps=2),
    )
    info = res.tasks["agent"]
    assert info.done == info.cases == 4 and info.status_counts["transport_error"] == 0, info
    assert info.model_calls > 0 and info.user_model_calls > 0
    replies = [json.loads(x) for x in (out / "agent" / "replies.jsonl").read_text().splitlines()]
    for r in replies:
        episode = json.loads(r["result"])["episode"]
        assert episode["end"] in ("user_stop", "user_failure", "user_turn_budget", "step_budget"), episode
    journal = [json.loads(x) for x in (out / "agent" / "episodes.jsonl").read_text().splitlines()]
    assert sum(1 for x in journal if x["event"]["who"] == "end") == 4
    assert any(
        x["event"]["who"] == "user" and x["event"].get("text") for x in journal
    )  # the local model spoke as the user
    scores = score_run(out)["agent"]
    assert scores["reliability"]["trials"] == 2 and scores["episodes"] == 4
    report = write_report([out], tmp_path / "report")
    html = Path(report["files"]["html"]).read_text()
    assert "Agent episodes" in html and cfg.name in html
