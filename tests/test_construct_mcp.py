"""MCP servers as tool sources: tool conversion and results (fixture cases), then real servers:
``mcp-server-sqlite`` from PyPI (stdio) and the SDK-built notes server (stdio and HTTP, timeouts,
crashes), and the ``tools import mcp`` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import clean_env, nesting_depth, one_error_line
from mcp_servers import free_port, notes_server_command, sqlite_server_command, start_notes_http

from benchsmith.construction.mcp import McpSession, import_mcp_tools, observation_of, tool_from_mcp
from benchsmith.schemas import EnvironmentFault, McpServer, RuntimeFault, ToolError, UserError, read_mcp_server

FIXTURES = Path(__file__).parent / "fixtures" / "construct"
TOOL_CASES = [json.loads(line) for line in open(FIXTURES / "mcp_tools.jsonl", encoding="utf-8")]
RESULT_CASES = [json.loads(line) for line in open(FIXTURES / "mcp_results.jsonl", encoding="utf-8")]


@pytest.mark.parametrize("case", TOOL_CASES, ids=[c["why"] for c in TOOL_CASES])
def test_tool_from_mcp(case):
    if "error" in case:
        with pytest.raises(UserError, match=case["error"].replace("[", r"\[").replace("$", r"\$")):
            tool_from_mcp(case["input"], domain="srv")
        return
    tool = tool_from_mcp(case["input"], domain="srv")
    if case.get("depth_cut"):  # a recursive schema is inlined to a bounded depth, never forever
        assert 10 < nesting_depth(tool.parameters.properties) < 200
        return
    assert tool.model_dump(mode="json", exclude_none=True) == case["expected"]


@pytest.mark.parametrize("case", RESULT_CASES, ids=[c["why"] for c in RESULT_CASES])
def test_observation_of(case):
    cap = case.get("max_chars", 1000)
    if "error" in case:
        with pytest.raises(ToolError) as caught:
            observation_of(case["input"], "t", cap)
        assert caught.value.code == case["error"]
        return
    assert observation_of(case["input"], "t", cap) == case["expected"]


def test_a_tool_without_hints_is_written_as_before():
    """Tools of other sources keep their bytes (and so their samples' content ids): no "hints": null."""
    tool = tool_from_mcp({"name": "t", "description": "d", "input_schema": {"type": "object"}}, domain="srv")
    assert "hints" not in tool.model_dump() and "hints" not in tool.model_dump_json()


def test_server_spec_needs_one_way_in(tmp_path):
    for bad in ({"name": "s"}, {"name": "s", "command": ["x"], "url": "http://127.0.0.1:1/mcp"}):
        with pytest.raises(ValueError, match="give a command"):
            McpServer(**bad)
    with pytest.raises(ValueError, match="not environment variable names"):
        McpServer(name="s", command=["x"], env=["NOT-A-NAME"])
    (tmp_path / "server.json").write_text('{"name": "s", "url": "ftp://host/mcp"}')
    with pytest.raises(UserError, match="server.json"):
        read_mcp_server(tmp_path / "server.json")


# ---- mcp-server-sqlite (PyPI), a stateful server written elsewhere --------------------------------
@pytest.fixture(scope="module")
def sqlite_command():
    """How to start mcp-server-sqlite on a database file (installed into its venv on first use)."""
    return sqlite_server_command


def test_sqlite_server_tools_and_calls(tmp_path, sqlite_command):
    server = McpServer(name="sqlite", command=sqlite_command(tmp_path / "shop.db"))
    tools = import_mcp_tools(server, tmp_path / "catalog")
    names = [t.name for t in tools]
    assert {"read_query", "write_query", "create_table", "list_tables", "describe_table"} <= set(names)
    written = json.loads((tmp_path / "catalog" / "tools.json").read_text())
    assert [t["name"] for t in written] == names and all(t["domain"] == "sqlite" for t in written)
    assert read_mcp_server(tmp_path / "catalog" / "server.json") == server
    with McpSession(server) as session:
        assert session.call("create_table", {"query": "CREATE TABLE item (id INTEGER, name TEXT)"})
        session.call("write_query", {"query": "INSERT INTO item VALUES (1, 'pen'), (2, 'ink')"})
        rows = session.call("read_query", {"query": "SELECT name FROM item ORDER BY id"})
    assert "pen" in rows and "ink" in rows
    # the state lives in the database file: a new connection (a new process) sees it
    with McpSession(server) as session:
        assert "item" in session.call("list_tables", {})


def test_tools_import_mcp_command(tmp_path, sqlite_command):
    out = tmp_path / "catalog"
    cmd = [sys.executable, "-m", "benchsmith.cli", "tools", "import", "mcp", "--out", str(out), "--"]
    done = subprocess.run([*cmd, *sqlite_command(tmp_path / "a.db")], capture_output=True, text=True, env=clean_env())
    assert done.returncode == 0, done.stderr
    assert "tools from MCP server mcp-server-sqlite" in done.stdout
    assert {t["name"] for t in json.loads((out / "tools.json").read_text())} >= {"read_query", "write_query"}
    # no server: a user's mistake (exit 2); a server that cannot start: a fault (exit 3), one line each
    none = subprocess.run(cmd[:-1] + ["--out", str(tmp_path / "b")], capture_output=True, text=True, env=clean_env())
    assert none.returncode == 2 and "give a command" in one_error_line(none.stderr)
    dead = [sys.executable, "-c", "import sys; print('cannot open the database', file=sys.stderr); sys.exit(4)"]
    failed = subprocess.run([*cmd, *dead], capture_output=True, text=True, env=clean_env())
    assert failed.returncode == 3
    line = one_error_line(failed.stderr)
    assert "did not start" in line and "cannot open the database" in line


# ---- the notes server (the SDK's MCPServer): stdio, HTTP, timeouts, crashes -----------------------
def test_notes_server_over_stdio(tmp_path):
    server = McpServer(name="notes", command=notes_server_command(tmp_path / "notes.json"), call_timeout=5)
    with McpSession(server) as session:
        tools = {t.name: t for t in session.tools()}
        assert tools["add_note"].parameters.required == ["title", "text"]
        assert tools["add_note"].returns is not None  # the SDK declares an output schema
        assert session.call("add_note", {"title": "a", "text": "x"}) == {"result": "saved a"}
        with pytest.raises(ToolError) as bad:
            session.call("add_note", {"title": 1})
        assert bad.value.code == "tool_error" and "title" in str(bad.value)
        assert "x" in json.dumps(session.call("get_note", {"title": "a"}))
        with pytest.raises(EnvironmentFault, match=r"notes: tools/call slow got no reply within 5 s"):
            session.call("slow", {"seconds": 30})  # a hang is the server's fault, not the caller's
        with pytest.raises(EnvironmentFault, match="notes: tools/call crash failed"):
            session.call("crash", {})


def test_notes_server_over_http(tmp_path):
    port = free_port()
    proc = start_notes_http(tmp_path / "notes.json", port)
    try:
        server = McpServer(name="notes-http", url=f"http://127.0.0.1:{port}/mcp")
        with McpSession(server) as session:
            assert {t.name for t in session.tools()} == {"add_note", "get_note", "slow", "crash"}
            assert session.call("add_note", {"title": "h", "text": "over http"}) == {"result": "saved h"}
        assert json.loads((tmp_path / "notes.json").read_text()) == {"h": "over http"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_server_that_never_answers_fails_within_its_start_timeout(tmp_path):
    server = McpServer(name="mute", command=[sys.executable, "-c", "import time; time.sleep(60)"], start_timeout=2)
    with pytest.raises(RuntimeFault, match="mute did not start"):
        with McpSession(server):
            pass


def test_an_http_header_reads_its_value_from_the_environment(monkeypatch):
    monkeypatch.delenv("BENCHSMITH_TEST_MCP_TOKEN", raising=False)
    server = McpServer(name="h", url="http://127.0.0.1:9/mcp", headers={"Authorization": "BENCHSMITH_TEST_MCP_TOKEN"})
    with pytest.raises(UserError, match=r"\$BENCHSMITH_TEST_MCP_TOKEN"):
        with McpSession(server):
            pass
