"""The ``mcp`` tool environment (issue 29): a real third-party server (``mcp-server-sqlite``, PyPI)
started fresh for every opening on a copy of a state template, its state read by probe calls and
a digest of the work folder, and the ``executability`` check replaying a gold chain on it (a
changed observation is ``nondeterministic_replay``); the SDK-built notes server for the volatile
keys. Nothing here is a mock."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from mcp_servers import NOTES_SERVER, shop_environment, sqlite_server_command

from benchsmith.construction import EnvContext, close_environment, open_environment, without_volatile
from benchsmith.construction.checks import CheckContext, run_checks
from benchsmith.construction.mcp import McpToolEnvironment
from benchsmith.schemas import (
    McpEnvironment,
    McpServer,
    Sample,
    StateProbe,
    ToolError,
    UserError,
)

PROBE = StateProbe(name="read_query", arguments={"query": "SELECT id, name FROM item ORDER BY id"})


@pytest.fixture(scope="module")
def split(tmp_path_factory) -> Path:
    """A split folder holding a state template (a two-row database) and its environment file."""
    return shop_environment(tmp_path_factory.mktemp("mcp-env"))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _open(split: Path) -> McpToolEnvironment:
    env = open_environment({"kind": "mcp", "file": "environment.json"}, EnvContext(split=split))
    assert isinstance(env, McpToolEnvironment)
    return env


def test_every_opening_starts_from_the_template_and_leaves_nothing(split):
    template = _sha(split / "state" / "shop.db")
    env = _open(split)
    work = env.work
    try:
        before = env.state()
        assert "pen" in before["probes"][0] and "ink" in before["probes"][0]
        assert set(before["files"]) == {"shop.db"}
        env.call("write_query", {"query": "INSERT INTO item VALUES (3, 'cup')"}, "w1")
        after = env.state()
        assert "cup" in after["probes"][0]
        assert after["files"]["shop.db"] != before["files"]["shop.db"]
    finally:
        close_environment(env)
    assert work is not None and not work.exists()  # the work folder went with the server
    assert _sha(split / "state" / "shop.db") == template  # the template is never written
    again = _open(split)
    try:
        assert again.state() == before  # a fresh opening: the insert is gone
    finally:
        close_environment(again)


def test_references_to_earlier_outputs_are_filled_in_before_sending(split):
    env = _open(split)
    try:
        env.call("read_query", {"query": "SELECT 'SELECT name FROM item WHERE id = 2' AS q"}, "q")
        with pytest.raises(ToolError) as missing:
            env.call("read_query", {"query": "$nope$"}, "r")
        assert missing.value.code == "unresolved_reference"
    finally:
        close_environment(env)


def _sample(split: Path, observation) -> Sample:
    return Sample.model_validate(
        {
            "query": "Add a cup to the shop, then list the items.",
            "tools": [
                {
                    "name": "write_query",
                    "description": "Run an INSERT, UPDATE or DELETE.",
                    "parameters": {"properties": {"query": {"type": "string"}}, "required": ["query"]},
                },
                {
                    "name": "read_query",
                    "description": "Run a SELECT.",
                    "parameters": {"properties": {"query": {"type": "string"}}, "required": ["query"]},
                },
            ],
            "gold": [
                {
                    "call": {
                        "name": "write_query",
                        "arguments": {"query": "INSERT INTO item VALUES (3, 'cup')"},
                        "label": "w",
                    }
                },
                {
                    "call": {
                        "name": "read_query",
                        "arguments": {"query": "SELECT name FROM item ORDER BY id"},
                        "label": "r",
                    },
                    "observation": observation,
                },
            ],
            "metadata": {"environment": {"kind": "mcp", "file": "environment.json"}},
            "provenance": {"source": "test", "method": "hand", "created_at": "2026-11-29T00:00:00Z"},
        }
    )


def test_the_executability_check_replays_on_a_fresh_server(split):
    env = _open(split)
    try:
        env.call("write_query", {"query": "INSERT INTO item VALUES (3, 'cup')"}, "w")
        seen = env.call("read_query", {"query": "SELECT name FROM item ORDER BY id"}, "r")
    finally:
        close_environment(env)
    context = CheckContext(env=EnvContext(split=split), require_environment=True)
    good = run_checks(_sample(split, seen), ["executability"], context).results[0]
    assert good.ok and good.code != "skipped", good
    changed = (
        seen.replace("cup", "mug") if isinstance(seen, str) else json.loads(json.dumps(seen).replace("cup", "mug"))
    )
    bad = run_checks(_sample(split, changed), ["executability"], context).results[0]
    assert not bad.ok and bad.code == "nondeterministic_replay", bad


def test_volatile_keys_are_left_out_of_comparisons(tmp_path):
    value = {"id": 3, "at": "2026-11-29T04:00:00", "rows": [{"at": 1, "v": 2}], "meta": {"at": None, "k": 1}}
    assert without_volatile(value, ["at"]) == {"id": 3, "rows": [{"v": 2}], "meta": {"k": 1}}
    assert without_volatile(value, []) is value
    assert without_volatile(json.dumps(value), ["at", "rows", "meta"]) == {"id": 3}  # JSON text is read as JSON
    env = McpEnvironment(
        server=McpServer(name="notes", command=[sys.executable, str(NOTES_SERVER), "{work}/notes.json"]),
        probes=[StateProbe(name="get_note", arguments={"title": "a"})],
        volatile=["text"],
        digest=True,
    )
    opened = open_environment(env.model_dump(mode="json"), EnvContext(split=tmp_path))
    try:
        opened.call("add_note", {"title": "a", "text": "one"}, "n1")
        state = opened.state()
        assert state["probes"] == [{"title": "a"}] and set(state["files"]) == {"notes.json"}
        assert opened.compare_view({"title": "a", "text": "two"}) == {"title": "a"}
    finally:
        close_environment(opened)


def test_bad_environments_name_the_problem(split, tmp_path):
    with pytest.raises(UserError, match="environment.json"):
        open_environment({"kind": "mcp", "file": "environment.json"}, EnvContext(split=tmp_path))
    with pytest.raises(UserError, match="server"):
        open_environment({"kind": "mcp"}, EnvContext(split=tmp_path))
    spec = json.loads((split / "environment.json").read_text("utf-8"))
    spec["template"] = "no-such-folder"
    (tmp_path / "environment.json").write_text(json.dumps(spec), "utf-8")
    with pytest.raises(UserError, match="state template .* is not a folder"):
        open_environment({"kind": "mcp", "file": "environment.json"}, EnvContext(split=tmp_path))


# ---------------------------------------------------------------- construction on the real server ----
ASK = '{"query": "How many items does the shop database hold in its item table?"}'
REFINE = '{"solvable": true, "query": "How many items does the shop database hold in its item table?"}'
COUNT = '{"action": "read_query", "arguments": {"query": "SELECT COUNT(*) AS n FROM item"}, "thought": "count them"}'


def _plan(last: str, messages: list[dict]) -> str:
    if last.startswith("Step "):
        return '{"done": true, "thought": "The count is the answer."}'
    return '{"done": false, "thought": "Count the items."}'


@pytest.fixture(scope="module")
def catalog(split, tmp_path_factory) -> Path:
    """``benchsmith tools import mcp --template`` of the shop server: its tools and its environment."""
    import subprocess

    from helpers import clean_env, console_script

    out = tmp_path_factory.mktemp("catalog") / "shop"
    command = sqlite_server_command(Path("{work}") / "shop.db")
    proc = subprocess.run(
        [console_script(), "tools", "import", "mcp", "--out", str(out), "--name", "shop"]
        + ["--template", str(split / "state"), "--", *command],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert proc.returncode == 0, proc.stderr
    return out


def test_the_imported_catalog_runs_its_draws_on_the_server(catalog):
    import random

    from benchsmith.construction import draw_tools, load_catalog
    from benchsmith.schemas import read_mcp_environment

    spec = read_mcp_environment(catalog / "environment.json")
    assert spec.template is not None and (catalog / spec.template / "shop.db").is_file()
    entries = load_catalog(catalog)
    assert {e.id for e in entries} >= {"read_query", "write_query", "list_tables"}
    drawn = draw_tools(entries, 2, random.Random(1))
    assert len(drawn.tools) == 2 and drawn.environment == {
        "kind": "mcp",
        "file": str((catalog / "environment.json").resolve()),
    }
    env = open_environment(drawn.environment, EnvContext())
    try:
        assert "pen" in env.state().get("probes", [env.call("read_query", {"query": "SELECT name FROM item"})])[0]
    finally:
        close_environment(env)


def test_queries_then_chains_on_the_real_server_keep_real_observations(catalog, tmp_path):
    from scripted_chat import ScriptedChat, by_task

    from benchsmith.construction import RoleModels, run_graph
    from benchsmith.schemas import read_jsonl

    models = RoleModels(
        default=ScriptedChat(
            script=by_task(
                generate=ASK,
                refine=REFINE,
                plan=_plan,
                act=COUNT,
                review='{"verdict": "success", "decision": "continue"}',
            )
        )
    )
    queries = run_graph("queries", catalog, tmp_path / "q", models=models, options={"n": 1, "k": 6}, seed=3)
    assert queries.samples >= 1, queries
    chains = run_graph("chains", tmp_path / "q" / "samples.jsonl", tmp_path / "c", models=models, seed=3)
    assert chains.samples >= 1, chains
    for sample in read_jsonl(tmp_path / "c" / "samples.jsonl", Sample):
        assert sample.metadata["environment"]["kind"] == "mcp"
        step = sample.gold[0]
        assert step.call.name == "read_query" and "2" in json.dumps(step.observation)  # the template's two rows
        # the gold chain replays on a fresh server from the template, to the same observation
        replayed = run_checks(sample, ["executability"], CheckContext(require_environment=True)).results[0]
        assert replayed.ok and replayed.code != "skipped", replayed


def test_a_catalogs_example_requests_reach_the_draws_and_bad_ones_are_named(catalog, tmp_path):
    import random
    import shutil

    from benchsmith.construction import draw_tools, load_catalog

    folder = Path(shutil.copytree(catalog, tmp_path / "shop"))
    examples = ["How many items are in the shop?", "Add a mug to the shop.", "Which item is first?", "List the items."]
    (folder / "examples.json").write_text(json.dumps(examples), "utf-8")
    entries = load_catalog(folder)
    assert all(sorted(e.examples) == sorted(examples) for e in entries)
    assert len({e.examples[0] for e in entries}) > 1  # draws start the list at different places
    drawn = draw_tools(entries, 2, random.Random(1))
    assert 1 <= len(drawn.examples) <= 3 and set(drawn.examples) <= set(examples)
    (folder / "examples.json").write_text('{"q": 1}', "utf-8")
    with pytest.raises(UserError, match="examples.json: expected a JSON array of example requests"):
        load_catalog(folder)


def _steps_done(messages: list[dict]) -> int:
    """Steps of this request so far (the prompt's worked example has its own before the request)."""
    start = max(i for i, m in enumerate(messages) if m["content"].startswith("Request: "))
    return sum(m["content"].startswith("Step ") for m in messages[start:])


def _note_plan(last: str, messages: list[dict]) -> str:
    done = _steps_done(messages) >= 3
    return json.dumps({"done": done, "thought": "All saved." if done else "Save the next note."})


def _note_act(last: str, messages: list[dict]) -> str:
    title = "abc"[last.count("$out_")]  # "Outputs so far: $out_1$, ..."
    return json.dumps({"action": "add_note", "arguments": {"title": title, "text": f"note {title}"}, "thought": "save"})


@pytest.mark.parametrize("keep", [True, False])
def test_a_chain_keeps_its_server_between_steps(keep, tmp_path):
    """A three-step chain on a live server starts it once, not once per step with every kept step
    replayed; ``keep_environment=False`` does the latter, and both give the same sample."""
    from scripted_chat import ScriptedChat, by_task

    from benchsmith.construction import RoleModels, run_graph
    from benchsmith.schemas import read_jsonl, write_mcp_environment

    starts = tmp_path / "starts.log"
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "notes.json").write_text("{}")
    command = [sys.executable, str(NOTES_SERVER), "{work}/notes.json", "--starts", str(starts)]
    write_mcp_environment(
        tmp_path / "environment.json",
        McpEnvironment(server=McpServer(name="notes", command=command), template="state", digest=True),
    )
    item = {
        "query": "Save three notes titled a, b and c.",
        "tools": [
            {
                "name": "add_note",
                "description": "Store a note under a title.",
                "parameters": {
                    "properties": {
                        "title": {"type": "string", "description": "the title"},
                        "text": {"type": "string", "description": "the note"},
                    },
                    "required": ["title", "text"],
                },
            }
        ],
        "metadata": {"environment": {"kind": "mcp", "file": str(tmp_path / "environment.json")}},
        "provenance": {"source": "test", "method": "hand", "created_at": "2026-11-29T00:00:00Z"},
    }
    (tmp_path / "items.jsonl").write_text(json.dumps(item) + "\n")
    models = RoleModels(
        default=ScriptedChat(
            script=by_task(plan=_note_plan, act=_note_act, review='{"verdict": "success", "decision": "continue"}')
        )
    )
    out = tmp_path / "chains"
    summary = run_graph("chains", tmp_path / "items.jsonl", out, models=models, options={"keep_environment": keep})
    assert summary.samples == 1, summary
    (sample,) = read_jsonl(out / "samples.jsonl", Sample)
    assert [g.call.arguments["title"] for g in sample.gold] == ["a", "b", "c"]
    assert [g.observation for g in sample.gold] == [{"result": f"saved {t}"} for t in "abc"]
    # one server for the chain; without keeping, one per step (each replaying the steps before it)
    assert len(starts.read_text().splitlines()) == (1 if keep else 3)
    assert sample.metadata["expected_state"] != sample.metadata["start_state"]


def test_a_kept_environment_is_given_back_only_when_it_ran_exactly_the_kept_calls(tmp_path):
    from benchsmith.construction import KeptEnvironments

    env = McpEnvironment(server=McpServer(name="notes", command=[sys.executable, str(NOTES_SERVER), "{work}/n.json"]))
    opened = open_environment(env.model_dump(mode="json"), EnvContext(split=tmp_path))
    kept = KeptEnvironments()
    step = ["add_note", {"title": "a", "text": "one"}, "out_1"]
    opened.call(*step)
    kept.keep("item-1", opened, [step])
    assert kept.take("item-1", [step]) is opened  # the next step goes on where this one left it
    failed = ["add_note", {"title": 1}, "out_2"]
    with pytest.raises(ToolError):
        opened.call(*failed)
    kept.keep("item-1", opened, [step, failed])  # tried, then not kept by the reviewer
    assert kept.take("item-1", [step]) is None  # it may hold the failed call's effects: closed, not reused
    assert opened.work is None  # its server stopped and its folder removed
    again = open_environment(env.model_dump(mode="json"), EnvContext(split=tmp_path))
    kept.keep("item-2", again, [])
    kept.release("item-2")  # the item's run ended
    assert again.work is None and kept.take("item-2", []) is None
