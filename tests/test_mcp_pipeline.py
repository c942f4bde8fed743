"""Benchmarks of third-party MCP servers' tools, end to end (issue 29), for two servers no one here
wrote: ``mcp-server-sqlite`` (PyPI) on a copy of a database and ``@modelcontextprotocol/server-
filesystem`` (npm, on node) on a copy of a folder, each started fresh from its state template for
every run. Its tools are imported with ``tools import mcp``, twelve requests and their gold chains
are built by the ``queries`` and ``chains`` graphs, checked by replay on a new server, reviewed in
a real Label Studio (the real observations and the end-state change shown), finalized, and the
local model is evaluated on the split with two trials per case (pass^k). The construction models
are scripted (pure functions of the messages: graph logic); every tool call runs on the real
server. The requests are data (tests/fixtures/construct/mcp_*_tasks.jsonl)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from helpers import clean_env, console_script
from mcp_servers import (
    FILES_PROBES,
    STORE_PROBES,
    files_template,
    filesystem_server_command,
    sqlite_server_command,
    store_template,
)
from scripted_chat import ScriptedChat, by_task

from benchsmith.construction import RoleModels, inspect_samples, run_graph
from benchsmith.eval import TaskOptions, run_eval, run_selftest, score_run
from benchsmith.models import DEFAULT_LOCAL_MODEL, ModelClient, resolve_model
from benchsmith.schemas import Sample, read_jsonl

FIXTURES = Path(__file__).parent / "fixtures" / "construct"


@dataclass(frozen=True)
class Server:
    """A third-party server, the state template it starts from, its probes and its tasks."""

    name: str
    command: Callable[[Path], list[str]]  # the command on the work folder {work}
    template: Callable[[Path], Path]
    probes: tuple[str, ...]
    tasks: str

    def task_list(self) -> list[dict]:
        lines = (FIXTURES / self.tasks).read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]


SERVERS = {
    "sqlite": Server(
        "store",
        lambda work: sqlite_server_command(work / "store.db"),
        store_template,
        STORE_PROBES,
        "mcp_sqlite_tasks.jsonl",
    ),
    "filesystem": Server("files", filesystem_server_command, files_template, FILES_PROBES, "mcp_files_tasks.jsonl"),
}


def _task_of(tasks: list[dict], messages: list[dict]) -> tuple[dict, int]:
    """The task whose request the conversation is about, and how many of its steps are done."""
    at = max(i for i, m in enumerate(messages) if m["role"] == "human" and m["content"].startswith("Request: "))
    request = messages[at]["content"].removeprefix("Request: ").splitlines()[0]
    task = next(t for t in tasks if t["query"] == request)
    done = sum(1 for m in messages[at + 1 :] if m["role"] == "human" and m["content"].startswith("Step "))
    return task, done


def _scripted(tasks: list[dict]) -> ScriptedChat:
    queue = [t["query"] for t in tasks]

    def generate(last: str, messages: list[dict]) -> str:
        return json.dumps({"query": queue.pop(0)})

    def refine(last: str, messages: list[dict]) -> str:
        return json.dumps({"solvable": True, "query": last.removeprefix("Draft: ").strip()})

    def plan(last: str, messages: list[dict]) -> str:
        task, done = _task_of(tasks, messages)
        if done >= len(task["calls"]):
            return json.dumps({"done": True, "thought": "The request is done."})
        return json.dumps({"done": False, "thought": f"Make call {done + 1}."})

    def act(last: str, messages: list[dict]) -> str:
        task, _ = _task_of(tasks, messages)
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


def _describe_parameters(path: Path) -> None:
    """What a user does about the ``tool_docs`` check's ``undocumented_parameter`` (the filesystem
    server leaves ``path`` undescribed): describe each such parameter in the imported tools.json."""
    tools = json.loads(path.read_text(encoding="utf-8"))
    for tool in tools:
        for name, schema in tool["parameters"]["properties"].items():
            if not schema.get("description") and "enum" not in schema:
                schema["description"] = f"The {name.replace('_', ' ')}, relative to the project folder"
    path.write_text(json.dumps(tools), encoding="utf-8")


@pytest.fixture(scope="module", params=sorted(SERVERS))
def server(request) -> Server:
    return SERVERS[request.param]


@pytest.fixture(scope="module")
def built(server, tmp_path_factory) -> Path:
    """The catalog imported from the server, then queries -> chains -> checks; the checked folder."""
    root = tmp_path_factory.mktemp(f"mcp-{server.name}")
    template = server.template(root / "state")
    tasks = server.task_list()
    probes = [a for p in server.probes for a in ("--probe", p)]
    proc = subprocess.run(
        [console_script(), "tools", "import", "mcp", "--out", str(root / "catalog"), "--name", server.name]
        + ["--template", str(template), *probes, "--", *server.command(Path("{work}"))],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    _describe_parameters(root / "catalog" / "tools.json")
    models = RoleModels(default=_scripted(tasks))
    queries = run_graph(
        "queries", root / "catalog", root / "queries", models=models, options={"n": len(tasks), "k": 20}, concurrency=1
    )
    assert queries.samples == len(tasks), queries.describe()
    chains = run_graph("chains", root / "queries", root / "chains", models=models, concurrency=1)
    assert chains.samples == len(tasks), chains.describe()
    summary = inspect_samples(root / "chains" / "samples.jsonl", root / "checked", concurrency=1)
    assert summary["accepted"] == len(tasks) >= 10, summary
    return root / "checked"


def test_every_gold_chain_ran_on_the_server_and_records_where_it_leaves_it(server, built):
    by_query = {s.query: s for s in read_jsonl(built / "accepted.jsonl", Sample)}
    for task in server.task_list():
        sample = by_query[task["query"]]
        assert [s.call.name for s in sample.gold] == [c["name"] for c in task["calls"]]
        meta = sample.metadata
        assert meta["environment"]["kind"] == "mcp"
        assert (meta["start_state"] != meta["expected_state"]) == task["writes"], task["query"]
        if task.get("observed"):  # what the server answered, not a simulation
            assert task["observed"] in json.dumps(sample.gold[-1].observation), (task, sample.gold[-1])
        if task.get("changed"):
            after, before = json.dumps(meta["expected_state"]), json.dumps(meta["start_state"])
            assert (task["changed"] in after) != (task["changed"] in before), task  # added, or removed
        replay = next(c for c in sample.verification.checks if c.name == "executability")
        assert replay.ok and "the recorded end state reached" in (replay.reason or ""), replay


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


def test_review_shows_the_real_observations_and_the_end_state_change(server, reviewed, label_studio):
    client = label_studio.client()
    shown = {}
    for project in client.projects.list():
        for t in client.tasks.list(project=project.id):
            if t.data.get("query"):
                shown[t.data["query"]] = t.data
    tasks = server.task_list()
    for task in tasks:
        data = shown[task["query"]]
        if task["writes"]:
            assert "from the start state:" in data["state_text"] and task["changed"] in data["state_text"], data
        else:
            assert data["state_text"].startswith("no change"), data["state_text"]
            observation = data["steps"][-1]["observation"]
            assert task["observed"] in observation, observation
    final = read_jsonl(reviewed / "samples.jsonl", Sample)
    assert len(final) == len(tasks) and all(s.verification.method == "expert-review" for s in final)


def test_the_finalized_split_carries_its_environment(server, built, reviewed, tmp_path):
    """The split runs wherever it is copied: its environment file and state template came along."""
    envs = {s.metadata["environment"]["file"] for s in read_jsonl(reviewed / "samples.jsonl", Sample)}
    assert len(envs) == 1 and next(iter(envs)).startswith("environments/"), envs
    manifest = json.loads((reviewed / "manifest.json").read_text())
    assert next(iter(envs)) in manifest["files"]
    moved = shutil.copytree(reviewed, tmp_path / "elsewhere")
    catalog = built.parent / "catalog"
    catalog.rename(catalog.with_name("catalog-away"))  # nothing outside the split is used
    try:
        # the gold of every case reaches its end state (or its milestones, for a question) on a new server
        selftest = run_selftest("agent", moved, tmp_path / "selftest")
    finally:
        catalog.with_name("catalog-away").rename(catalog)
    assert selftest["records"] == len(server.task_list()) and selftest["gold_failing"] == 0, selftest


def test_the_split_is_evaluated_on_fresh_servers_with_pass_k(server, reviewed, local, tmp_path):
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
