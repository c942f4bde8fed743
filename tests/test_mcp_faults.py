"""kill -9 of construction and of evaluation on a live MCP environment (``mcp-server-sqlite`` on a
copy of the shop template, issue 29): the re-run finishes every item and every episode exactly
once, with the end states a clean run gives, and the killed run's servers are gone with it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from mcp_kill_helpers import ITEMS
from mcp_servers import shop_environment

from benchsmith.construction import close_environment, open_environment, state_of
from benchsmith.eval import score_run
from benchsmith.schemas import Sample, read_jsonl

HERE = Path(__file__).parent
TOOLS = [
    {
        "name": "write_query",
        "description": "Run an INSERT, UPDATE or DELETE on the shop database.",
        "parameters": {
            "properties": {"query": {"type": "string", "description": "the SQL statement"}},
            "required": ["query"],
        },
    }
]
PROVENANCE = {"source": "test", "method": "hand", "created_at": "2026-11-29T00:00:00Z"}


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> Path:
    return shop_environment(tmp_path_factory.mktemp("mcp-faults"))


def _insert(item: str) -> dict:
    return {"name": "write_query", "arguments": {"query": f"INSERT INTO item (name) VALUES ('{item}')"}}


def _servers() -> list[str]:
    """The MCP servers running on a work folder (any left by a killed run would be orphans)."""
    out = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "mcp-server-sqlite" in line and "benchsmith-mcp-work-" in line]


def _work_of(pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"benchsmith-mcp-work-{pid}-*"))


def _kill_when(proc: subprocess.Popen, ready, what: str) -> None:
    deadline = time.monotonic() + 180
    while not ready():
        assert proc.poll() is None, f"the run ended before the kill: {proc.returncode}"
        assert time.monotonic() < deadline, f"no progress: {what}"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the run and every server it started
    proc.wait()


# ---------------------------------------------------------------- construction ----
def _reply(body: dict) -> str:
    system, messages = body["messages"][0]["content"], body["messages"]
    if system.startswith("You review one step"):
        return '{"verdict": "success", "decision": "continue"}'
    request = next(m["content"] for m in reversed(messages) if m["content"].startswith("Request: "))
    item = re.search(r"Add a (\w+)", request).group(1)
    if system.startswith("You plan how to solve"):
        done = messages[-1]["content"].startswith("Step ")
        return json.dumps({"done": done, "thought": f"The {item} is in." if done else f"Insert the {item}."})
    if system.startswith("You turn one planned step"):
        call = _insert(item)
        return json.dumps({"action": call["name"], "arguments": call["arguments"], "thought": "insert"})
    raise AssertionError(system[:60])


def test_kill_9_during_construct_chains_on_a_live_server_then_rerun_yields_every_item_once(shop, tmp_path):
    env = {"kind": "mcp", "file": str(shop / "environment.json")}
    queries = tmp_path / "queries.jsonl"
    items = [
        Sample.model_validate(
            {"query": f"Add a {item} to the shop's items.", "tools": TOOLS, "metadata": {"environment": env}}
            | {"provenance": PROVENANCE}
        )
        for item in (*ITEMS, "chair", "vase")
    ]
    queries.write_text("".join(s.model_dump_json() + "\n" for s in items), encoding="utf-8")
    out = tmp_path / "chains"
    args = [sys.executable, "-m", "benchsmith.cli", "construct", "chains", str(queries), "--out", str(out)]
    args += ["--model", "fake", "--concurrency", "2", "--timeout", "30"]
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHSMITH_", "OPENAI_"))}
    with FakeOpenAI(_reply, delay=0.3) as ep:
        run_env["BENCHSMITH_BASE_URL"] = ep.base_url
        proc = subprocess.Popen(
            args, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
        _kill_when(proc, lambda: sum(ep.prompts.values()) >= 9, "construct chains")
        assert sum(ep.prompts.values()) < 4 * len(items), "the kill must land midway"
        time.sleep(0.5)
        assert not _servers(), "a server outlived the killed run"
        done = subprocess.run(args, env=run_env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    assert not _work_of(proc.pid)  # the re-run removed what the killed one could not
    made = read_jsonl(out / "samples.jsonl", Sample)
    pool = [json.loads(x) for x in (out / "error_pool.jsonl").read_text().splitlines() if x.strip()]
    ids = Counter([s.provenance.source_id for s in made] + [r["item_id"] for r in pool])
    assert set(ids) == {s.id for s in items} and set(ids.values()) == {1}, "every item exactly once"
    assert len(made) == len(items), pool
    for sample in made:  # each inserted its own item once, on its own copy of the template
        item = re.search(r"Add a (\w+)", sample.query).group(1)
        rows = sample.metadata["expected_state"]["probes"][0]
        assert rows.count(f"'{item}'") == 1 and rows.count("'name'") == 3, rows


# ---------------------------------------------------------------- evaluation ----
def _split(shop: Path, folder: Path) -> Path:
    """An agent split over the shop environment: one case per item, its expected state what the
    gold insert leaves on a fresh server."""
    folder.mkdir()
    rows = []
    for item in ITEMS:
        opened = open_environment({"kind": "mcp", "file": str(shop / "environment.json")})
        try:
            call = _insert(item)
            opened.call(call["name"], call["arguments"], "w")
            expected = state_of(opened)
        finally:
            close_environment(opened)
        rows.append(
            {
                "query": f"Add a {item} to the shop's items.",
                "tools": TOOLS,
                "gold": [{"call": {**_insert(item), "label": "w"}}],
                "provenance": PROVENANCE,
                "metadata": {
                    "scenario_id": f"shop-{item}",
                    "goal": f"Add a {item} to the shop's items.",
                    "environment": {"kind": "mcp", "file": str(shop / "environment.json")},
                    "expected_state": expected,
                },
            }
        )
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_kill_9_mid_episode_on_a_live_server_then_resume_finishes_every_episode_once(shop, tmp_path):
    split = _split(shop, tmp_path / "split")
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "mcp_kill_helpers.py"), str(out), str(split), "0.3"],
        env={**os.environ, "PYTHONPATH": str(HERE)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    journal = out / "agent" / "episodes.jsonl"
    _kill_when(proc, lambda: journal.is_file() and len(journal.read_text().splitlines()) >= 6, "eval run")
    replies = out / "agent" / "replies.jsonl"
    before = replies.read_text().splitlines() if replies.is_file() else []
    assert len(before) < 2 * len(ITEMS), "the kill came too late to test anything"
    time.sleep(0.5)
    assert not _servers(), "a server outlived the killed run"
    assert _work_of(proc.pid), "the killed run left no work folder: nothing to clean up"
    subprocess.run(
        [sys.executable, str(HERE / "mcp_kill_helpers.py"), str(out), str(split), "0"],
        env={**os.environ, "PYTHONPATH": str(HERE)},
        check=True,
        timeout=600,
    )
    assert not _work_of(proc.pid)  # the re-run removed what the killed one could not
    records = [json.loads(x) for x in replies.read_text().splitlines()]
    assert len(records) == 2 * len(ITEMS) and set(Counter(r["id"] for r in records).values()) == {1}
    lines = [json.loads(x) for x in journal.read_text().splitlines() if x.strip().endswith("}")]
    per_key: dict[str, list[int]] = {}
    for x in lines:
        per_key.setdefault(x["key"], []).append(x["n"])
    assert all(ns == list(range(len(ns))) for ns in per_key.values()), "a journaled turn was written twice"
    scores = score_run(out)["agent"]
    # a resumed episode replays its journaled calls on a fresh server: the item is in exactly once
    assert scores["end_state_accuracy"] == 1.0 and scores["episodes"] == 2 * len(ITEMS), scores
    assert scores["reliability"]["pass^k"]["2"] == 1.0
