"""A tool server that fails during evaluation (issue 29): one that does not start, dies mid-call,
hangs past its call timeout or answers with a line that is not MCP. The case is played again on a
fresh server from its journaled turns (``TaskOptions.environment_retries``); a fault that goes
away leaves one finished episode, scored as if nothing happened, and one that stays is recorded
as ``environment_error``: never scored, never charged to the model, retried by the next run, and
``eval run`` exits 3 naming the server and the call.

The server is the tests' notes server (the ``mcp`` SDK's MCPServer) started with ``--fault
KIND:N:COUNTER``: its first N ``add_note`` calls (or starts) fail that way. Cases:
tests/fixtures/eval/environment_faults.jsonl.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import cli
from episode_helpers import Reply, Scripted, call, say
from fake_openai import FakeOpenAI
from helpers import EVAL_FIXTURES, endpoint_env
from mcp_servers import NOTES_SERVER

from benchsmith.construction import close_environment, open_environment, state_of
from benchsmith.eval import TaskOptions, run_eval, score_run
from benchsmith.schemas import McpEnvironment, McpServer, write_mcp_environment

CASES = [json.loads(line) for line in (EVAL_FIXTURES / "environment_faults.jsonl").read_text().splitlines()]
NOTE = {"title": "milk", "text": "buy 2"}
GOAL = "Save a note titled milk saying buy 2."
TOOLS = [
    {
        "name": "add_note",
        "description": "Store a note under a title.",
        "parameters": {
            "properties": {"title": {"type": "string"}, "text": {"type": "string"}},
            "required": ["title", "text"],
        },
    }
]


def _environment(folder: Path, fault: str | None = None) -> Path:
    """An ``mcp`` environment file for the notes server on a copy of ``state/`` (an empty notes
    file), its end state the digest of the work folder; ``fault`` is the server's ``--fault``."""
    (folder / "state").mkdir(parents=True, exist_ok=True)
    (folder / "state" / "notes.json").write_text("{}")
    command = [sys.executable, str(NOTES_SERVER), "{work}/notes.json", *(["--fault", fault] if fault else [])]
    path = folder / ("faulty.json" if fault else "environment.json")
    write_mcp_environment(
        path,
        McpEnvironment(
            server=McpServer(name="notes", command=command, call_timeout=3, start_timeout=20),
            template="state",
            digest=True,
        ),
    )
    return path


def _split(folder: Path, fault: str) -> Path:
    """A one-case agent split whose environment is the faulty server; its expected end state is
    what the gold call leaves on the clean one."""
    env = open_environment({"kind": "mcp", "file": str(_environment(folder))})
    try:
        env.call("add_note", dict(NOTE), "n")
        expected = state_of(env)
    finally:
        close_environment(env)
    sample = {
        "query": GOAL,
        "tools": TOOLS,
        "gold": [{"call": {"name": "add_note", "arguments": NOTE, "label": "n"}}],
        "provenance": {"source": "test", "method": "hand", "created_at": "2026-11-29T00:00:00Z"},
        "metadata": {
            "scenario_id": "notes-milk",
            "goal": GOAL,
            "environment": {"kind": "mcp", "file": str(_environment(folder, fault))},
            "expected_state": expected,
        },
    }
    (folder / "samples.jsonl").write_text(json.dumps(sample) + "\n")
    return folder


def _user(messages: list[dict], kw: dict) -> Reply:
    if any(m["role"] == "assistant" for m in messages):
        return say("Thanks. finish conversation")
    return say("Please save a note titled milk saying buy 2.")


def _assistant(messages: list[dict], kw: dict) -> Reply:
    return say("Saved.") if messages[-1]["role"] == "tool" else call(("add_note", dict(NOTE)))


@pytest.mark.parametrize("case", CASES, ids=[f"{c['input']['fault']}x{c['input']['times']}" for c in CASES])
def test_a_failing_server_is_never_charged_to_the_model(case, tmp_path):
    fault, times = case["input"]["fault"], case["input"]["times"]
    counter = tmp_path / "faults"
    split = _split(tmp_path / "split", f"{fault}:{times}:{counter}")
    assistant = Scripted(_assistant)
    out = tmp_path / "run"
    result = run_eval(
        split,
        assistant,
        {"name": "scripted"},
        out,
        tasks=["agent"],
        calling="tools",
        concurrency=1,
        progress=False,
        user_client=Scripted(_user),
        user_model={"name": "scripted-user"},
        options=TaskOptions(calling="tools", environment_retries=2),
    )
    (reply,) = [json.loads(x) for x in (out / "agent" / "replies.jsonl").read_text().splitlines()]
    expected = case["expected"]
    assert reply["status"] == expected["status"], reply
    assert int(counter.read_text()) == min(times, 3)  # the first try and both retries, no more
    journal_file = out / "agent" / "episodes.jsonl"  # none when no server ever started
    journal = [json.loads(x) for x in journal_file.read_text().splitlines()] if journal_file.is_file() else []
    assert [e["n"] for e in journal] == list(range(len(journal))), "a journaled turn was written twice"
    ps = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
    assert str(counter) not in ps, "a faulty server outlived its episode"
    if expected["status"] == "ok":
        assert result.status == "complete"
        # the retry resumed from the journal: the model was asked once per turn, not once per try
        assert assistant.calls == 2
        scores = score_run(out)["agent"]
        assert scores["end_state_accuracy"] == 1.0 and scores["episodes"] == 1, scores
    else:
        assert result.status == "partial"
        assert reply["error"]["type"] == "environment" and expected["message"] in reply["error"]["message"]
        assert reply["result"] is None  # nothing to score: the model is not charged
        assert (out / "agent" / "predictions.jsonl").read_text() == ""
        scores = score_run(out)["agent"]
        assert scores["episodes"] == 0 and scores["environment_errors"] == 1, scores  # left out, not failed


def test_eval_run_exits_3_naming_the_server_and_the_rerun_finishes_the_case_once(tmp_path):
    counter = tmp_path / "faults"
    split = _split(tmp_path / "split", f"crash:3:{counter}")  # the first run's three tries all crash
    out = tmp_path / "run"

    def reply(body: dict) -> str:
        messages = body["messages"]
        if body.get("response_format"):  # the assistant (JSON-constrained prompt calling)
            if any("saved milk" in str(m["content"]) for m in messages):
                return json.dumps({"message": "Saved."})
            return json.dumps({"tool_calls": [{"name": "add_note", "arguments": NOTE}]})
        done = any(m["role"] == "assistant" for m in messages)  # the user sees its own turns as the assistant's
        return "Thanks. finish conversation" if done else "Please save a note titled milk saying buy 2."

    with FakeOpenAI(reply) as ep:
        args = ["eval", "run", "--split", str(split), "--tasks", "agent", "--model", "fake", "--base-url"]
        args += [
            ep.base_url,
            "--user-model",
            f"fake@{ep.base_url}",
            "--calling",
            "prompt",
            "--out",
            str(out),
            "--max-retries",
            "0",
        ]
        first = cli(*args, env=endpoint_env(), timeout=300)
        assert first.returncode == 3, first.stdout + first.stderr
        line = first.stderr.strip().splitlines()[-1]
        assert "1 of 1 cases unfinished" in line and "environment errors" in line, line
        again = cli(*args, env=endpoint_env(), timeout=300)
        assert again.returncode == 0, again.stdout + again.stderr
    (failed, done) = [json.loads(x) for x in (out / "agent" / "replies.jsonl").read_text().splitlines()]
    assert failed["status"] == "environment_error" and done["status"] == "ok"
    assert "MCP server notes: tools/call add_note failed" in failed["error"]["message"]
    journal = [json.loads(x) for x in (out / "agent" / "episodes.jsonl").read_text().splitlines()]
    assert [e["n"] for e in journal] == list(range(len(journal))), "a journaled turn was written twice"
    assert score_run(out)["agent"]["end_state_accuracy"] == 1.0


# ---------------------------------------------------------------- construction ----
def _chains_reply(body: dict) -> str:
    """The construction models of the chains graph, scripted: plan one add_note, execute it, accept."""
    system, messages = body["messages"][0]["content"], body["messages"]
    if system.startswith("You review one step"):
        return '{"verdict": "success", "decision": "continue"}'
    request = next(m["content"] for m in reversed(messages) if m["content"].startswith("Request: "))
    title = request.split("titled ", 1)[1].split(" ", 1)[0]
    if system.startswith("You plan how to solve"):
        done = messages[-1]["content"].startswith("Step ")
        return json.dumps({"done": done, "thought": "Saved." if done else f"Save the note {title}."})
    if system.startswith("You turn one planned step"):
        args = {"title": title, "text": "buy 2"}
        return json.dumps({"action": "add_note", "arguments": args, "thought": "save it"})
    raise AssertionError(system[:60])


def test_construct_chains_leaves_an_item_whose_server_fails_unfinished_and_the_rerun_finishes_it(tmp_path):
    from benchsmith.schemas import Sample, read_jsonl

    counter = tmp_path / "faults"
    env = {"kind": "mcp", "file": str(_environment(tmp_path / "env", f"crash:2:{counter}"))}
    queries = tmp_path / "queries.jsonl"
    items = [
        Sample.model_validate(
            {
                "query": f"Save a note titled {title} saying buy 2.",
                "tools": TOOLS,
                "metadata": {"environment": env},
                "provenance": {"source": "test", "method": "hand", "created_at": "2026-11-29T00:00:00Z"},
            }
        )
        for title in ("milk", "eggs")
    ]
    queries.write_text("".join(s.model_dump_json() + "\n" for s in items), encoding="utf-8")
    out = tmp_path / "chains"
    args = ["construct", "chains", str(queries), "--out", str(out), "--model", "fake", "--concurrency", "1"]
    with FakeOpenAI(_chains_reply) as ep:
        first = cli(*args, env=endpoint_env(BENCHSMITH_BASE_URL=ep.base_url), timeout=300)
        assert first.returncode == 3, first.stdout + first.stderr
        line = first.stderr.strip().splitlines()[-1]
        assert "2 of 2 items unfinished because the model endpoint or a tool environment failed" in line, line
        assert "MCP server notes: tools/call add_note failed" in line, line
        again = cli(*args, env=endpoint_env(BENCHSMITH_BASE_URL=ep.base_url), timeout=300)
        assert again.returncode == 0, again.stdout + again.stderr
    made = read_jsonl(out / "samples.jsonl", Sample)
    assert sorted(s.query for s in made) == sorted(s.query for s in items), "every item exactly once"
    for sample in made:  # the end state the gold leaves: one note, written once
        assert sample.metadata["expected_state"] != sample.metadata["start_state"]
