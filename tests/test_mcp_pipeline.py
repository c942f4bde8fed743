"""A benchmark of a third-party MCP server's tools, end to end (issue 29): ``mcp-server-sqlite``
(PyPI) on a fresh copy of a state template. Its tools are imported with ``tools import mcp``, twelve
requests and their gold chains are built by the ``queries`` and ``chains`` graphs, checked by
replay on a new server, reviewed in a real Label Studio (the real observations and the end-state
change shown), finalized, and the local model is evaluated on the split with two trials per case
(pass^k). The construction models are scripted (pure functions of the messages: graph logic);
every tool call runs on the real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import clean_env, console_script
from mcp_servers import STORE_PROBES, sqlite_server_command, store_template
from scripted_chat import ScriptedChat, by_task

from benchsmith.construction import RoleModels, inspect_samples, run_graph
from benchsmith.eval import TaskOptions, run_eval, run_selftest, score_run
from benchsmith.models import DEFAULT_LOCAL_MODEL, ModelClient, resolve_model, start_local_server, stop_local_server
from benchsmith.schemas import Sample, read_jsonl

TASKS = [
    json.loads(line)
    for line in (Path(__file__).parent / "fixtures" / "construct" / "mcp_sqlite_tasks.jsonl").read_text().splitlines()
    if line.strip()
]


def _task_of(messages: list[dict]) -> tuple[dict, int]:
    """The task whose request the conversation is about, and how many of its steps are done."""
    at = max(i for i, m in enumerate(messages) if m["role"] == "human" and m["content"].startswith("Request: "))
    request = messages[at]["content"].removeprefix("Request: ").splitlines()[0]
    task = next(t for t in TASKS if t["query"] == request)
    done = sum(1 for m in messages[at + 1 :] if m["role"] == "human" and m["content"].startswith("Step "))
    return task, done


def _scripted() -> ScriptedChat:
    queue = [t["query"] for t in TASKS]

    def generate(last: str, messages: list[dict]) -> str:
        return json.dumps({"query": queue.pop(0)})

    def refine(last: str, messages: list[dict]) -> str:
        return json.dumps({"solvable": True, "query": last.removeprefix("Draft: ").strip()})

    def plan(last: str, messages: list[dict]) -> str:
        task, done = _task_of(messages)
        if done >= len(task["calls"]):
            return json.dumps({"done": True, "thought": "The request is done."})
        return json.dumps({"done": False, "thought": f"Make call {done + 1}."})

    def act(last: str, messages: list[dict]) -> str:
        task, _ = _task_of(messages)
        n = int(last.rsplit("Make call ", 1)[1].rstrip(".")) - 1
        call = task["calls"][n]
        return json.dumps({"action": call["name"], "arguments": call["arguments"], "thought": f"call {n + 1}"})

    return ScriptedChat(
        script=by_task(
            generate=generate,
            refine=refine,
            plan=plan,
            act=act,
            review='{"verdict": "success", "decision": "continue"}',
        )
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The catalog imported from the server, then queries -> chains -> checks; the checked folder."""
    root = tmp_path_factory.mktemp("mcp-pipeline")
    template = store_template(root / "state")
    command = sqlite_server_command(Path("{work}") / "store.db")
    probes = [a for p in STORE_PROBES for a in ("--probe", p)]
    proc = subprocess.run(
        [console_script(), "tools", "import", "mcp", "--out", str(root / "catalog"), "--name", "store"]
        + ["--template", str(template), *probes, "--", *command],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    models = RoleModels(default=_scripted())
    queries = run_graph(
        "queries", root / "catalog", root / "queries", models=models, options={"n": len(TASKS), "k": 6}, concurrency=1
    )
    assert queries.samples == len(TASKS), queries.describe()
    chains = run_graph("chains", root / "queries", root / "chains", models=models, concurrency=1)
    assert chains.samples == len(TASKS), chains.describe()
    summary = inspect_samples(root / "chains" / "samples.jsonl", root / "checked", concurrency=1)
    assert summary["accepted"] == len(TASKS) >= 10, summary
    return root / "checked"


def test_every_gold_chain_ran_on_the_server_and_records_where_it_leaves_it(built):
    samples = read_jsonl(built / "accepted.jsonl", Sample)
    by_query = {s.query: s for s in samples}
    for task in TASKS:
        sample = by_query[task["query"]]
        assert [s.call.name for s in sample.gold] == [c["name"] for c in task["calls"]]
        assert all(s.observation is not None for s in sample.gold)  # the server's own answers
        meta = sample.metadata
        assert meta["environment"]["kind"] == "mcp"
        changed = meta["start_state"] != meta["expected_state"]
        assert changed == task["writes"], task["query"]
        replay = next(c for c in sample.verification.checks if c.name == "executability")
        assert replay.ok and "the recorded end state reached" in (replay.reason or ""), replay
    count = by_query["How many items does the store sell?"].gold[0].observation
    assert "5" in json.dumps(count)
    stapler = by_query["Add a stapler priced at 4.5 with 10 in stock to the store's items."].metadata
    assert "stapler" in stapler["expected_state"]["probes"][0] and "stapler" not in stapler["start_state"]["probes"][0]


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchsmith.cli", *args], env=env, capture_output=True, text=True, timeout=900
    )


@pytest.fixture(scope="module")
def reviewed(built, label_studio, tmp_path_factory) -> Path:
    """The checked samples reviewed in Label Studio (simulated reviewers) and finalized."""
    root = tmp_path_factory.mktemp("mcp-review")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHSMITH_", "LABEL_STUDIO_"))}
    env.update(label_studio.env(), BENCHSMITH_ANNOTATION_WORKSPACE=str(root / "ws"))
    for args in (
        ["annotate", "push", "--split", str(built / "accepted.jsonl")],
        ["annotate", "simulate"],
        ["annotate", "pull"],
        ["annotate", "finalize", "--out", str(root / "final")],
    ):
        r = _cli(args, env)
        assert r.returncode == 0, (args, r.stderr)
    return root / "final"


def test_review_shows_the_real_observations_and_the_end_state_change(reviewed, label_studio):
    client = label_studio.client()
    tasks = [t for p in client.projects.list() for t in client.tasks.list(project=p.id) if t.data.get("bs_id")]
    shown = {t.data["query"]: t.data for t in tasks if t.data.get("query")}
    stapler = shown["Add a stapler priced at 4.5 with 10 in stock to the store's items."]
    assert "1 change" in stapler["state_text"] or "changes" in stapler["state_text"]
    assert "stapler" in stapler["state_text"] and "files.store.db" in stapler["state_text"]
    assert shown["How many items does the store sell?"]["state_text"].startswith("no change")
    count = shown["How many items does the store sell?"]["steps"][0]["observation"]
    assert "5" in count  # what the server answered, not a simulation
    final = read_jsonl(reviewed / "samples.jsonl", Sample)
    assert len(final) == len(TASKS) and all(s.verification.method == "expert-review" for s in final)


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model-state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHSMITH_MODEL_STATE_DIR", str(folder))
        mp.delenv("OPENAI_API_KEY", raising=False)
        info = start_local_server(threads=1, parallel=2, wait=120)  # one thread: see tests/test_models_local.py
        try:
            yield info
        finally:
            stop_local_server()


def test_the_split_is_evaluated_on_fresh_servers_with_pass_k(reviewed, local, tmp_path):
    # the gold of every case reaches its end state (or its milestones, for a question) on a new server
    selftest = run_selftest("agent", reviewed, tmp_path / "selftest")
    assert selftest["records"] == len(TASKS) and selftest["gold_failing"] == 0, selftest
    cfg = resolve_model(DEFAULT_LOCAL_MODEL, None, timeout=240.0, max_tokens=160)
    work = {p.name for p in Path(tempfile.gettempdir()).glob("benchsmith-mcp-work-*")}
    res = run_eval(
        reviewed,
        ModelClient(cfg),
        cfg.describe(),
        tmp_path / "run",
        tasks=["agent"],
        limit=3,
        concurrency=2,
        calling="prompt",
        progress=False,
        user_client=ModelClient(cfg),  # the local model also plays the user
        user_model=cfg.describe(),
        options=TaskOptions(calling="prompt", max_tokens=160, trials=2, max_turns=2, max_steps=2),
    )
    info = res.tasks["agent"]
    assert info.done == info.cases == 6 and info.status_counts["transport_error"] == 0, info
    assert info.model_calls > 0
    scores = score_run(tmp_path / "run")["agent"]
    assert scores["episodes"] == 6 and scores["reliability"]["trials"] == 2
    assert set(scores["reliability"]["pass^k"]) == {"1", "2"}
    assert {p.name for p in Path(tempfile.gettempdir()).glob("benchsmith-mcp-work-*")} == work  # all stopped
