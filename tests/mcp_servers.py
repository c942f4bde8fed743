"""Real MCP servers for the tests.

* ``mcp-server-sqlite`` (PyPI, written by the MCP project, not here): it is built on the ``mcp``
  SDK 1.x, so it lives in a venv of its own under the cache, installed with pip the first time
  (about 20 s; ``benchsmith.models.procs.ensure_venv``), as the main job installs it.
* the notes server of tests/fixtures/construct (the official SDK's ``MCPServer``), for what a
  third-party server cannot be asked to do on cue: wait past a timeout, die mid-call, serve HTTP.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from benchsmith.demo import STORE_PROBES, store_template  # noqa: F401 (the tests' store is the main job's)
from benchsmith.demo import sqlite_server_command as demo_sqlite_server_command
from benchsmith.models import cache_root
from benchsmith.models.procs import file_lock

NOTES_SERVER = Path(__file__).parent / "fixtures" / "construct" / "mcp_notes_server.py"


def sqlite_server_command(db: Path) -> list[str]:
    """The command starting ``mcp-server-sqlite`` on ``db`` (installing the server the first time)."""
    return demo_sqlite_server_command(db)


def notes_server_command(state: Path) -> list[str]:
    """The command starting the notes server (stdio) on the JSON file ``state``."""
    return [sys.executable, str(NOTES_SERVER), str(state)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_notes_http(state: Path, port: int) -> subprocess.Popen[bytes]:
    """The notes server on streamable HTTP at http://127.0.0.1:PORT/mcp, once it accepts connections."""
    proc = subprocess.Popen(
        [*notes_server_command(state), "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"the notes server exited with {proc.returncode}") from None
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the notes server did not listen within 30 s")


def shop_environment(root: Path) -> Path:
    """A folder holding a state template (``state/shop.db``: a two-row ``item`` table) and an ``mcp``
    environment file for ``mcp-server-sqlite`` on a fresh copy of it, probing the items; the folder."""
    import sqlite3

    from benchsmith.schemas import McpEnvironment, McpServer, StateProbe, write_mcp_environment

    template = root / "state"
    template.mkdir(parents=True)
    con = sqlite3.connect(template / "shop.db")
    with con:
        con.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)")
        con.executemany("INSERT INTO item VALUES (?, ?)", [(1, "pen"), (2, "ink")])
    con.close()
    probe = StateProbe(name="read_query", arguments={"query": "SELECT id, name FROM item ORDER BY id"})
    env = McpEnvironment(
        server=McpServer(name="shop", command=sqlite_server_command(Path("{work}") / "shop.db")),
        template="state",
        probes=[probe],
        digest=True,
    )
    write_mcp_environment(root / "environment.json", env)
    return root


FILESYSTEM_SERVER = "@modelcontextprotocol/server-filesystem@2026.8.31"
FILES_PROBES = (
    'directory_tree={"path": "."}',
    'read_multiple_files={"paths": ["notes/todo.txt", "notes/ideas.md"]}',
)


def filesystem_server_command(root: str | Path) -> list[str]:
    """The command starting ``@modelcontextprotocol/server-filesystem`` (npm, run with this machine's
    node) on the folder ``root``, installing the package under the cache the first time."""
    prefix = cache_root() / "test-servers" / FILESYSTEM_SERVER.replace("@", "").replace("/", "-")
    marker = prefix / ".installed"
    if not marker.is_file():
        prefix.mkdir(parents=True, exist_ok=True)
        with file_lock(prefix.parent / "server-filesystem.lock"):
            if not marker.is_file():
                npm = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error"]
                subprocess.run([*npm, FILESYSTEM_SERVER], check=True)
                marker.write_text("ok\n", encoding="utf-8")
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    return ["node", str(entry), str(root)]


def files_template(folder: Path) -> Path:
    """A state template for the filesystem server: a few notes and a report (the tasks of
    tests/fixtures/construct/mcp_files_tasks.jsonl run on it); the folder."""
    files = {
        "README.txt": "Project files.\n",
        "notes/todo.txt": "buy milk\ncall Ana\n",
        "notes/ideas.md": "# Ideas\n- garden\n",
        "reports/q1.txt": "revenue 120\n",
    }
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder
