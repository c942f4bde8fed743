"""The main job's MCP part: a third-party MCP server (``mcp-server-sqlite``, PyPI) on a small store
database as a tool source: its tools imported, queries and gold chains built with the local model
on fresh copies of the database, checked by replay; review and evaluation take it from there."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Callable

Echo = Callable[[str], None]

#: the server and the SDK it is built on (1.x: it does not start on the 2.x SDK benchsmith uses),
#: installed into their own venv under the cache on first use
SQLITE_MCP_SERVER = ["mcp-server-sqlite==2025.4.25", "mcp==1.30.0"]
#: read-only calls whose results are the store's state (the database file's digest is part of it too)
STORE_PROBES = (
    'read_query={"query": "SELECT id, name, price, stock FROM items ORDER BY id"}',
    'read_query={"query": "SELECT id, item_id, qty FROM orders ORDER BY id"}',
    "list_tables",
)
#: requests a user of the store would send: the generator's examples (the small local model copies
#: the prompt's generic weather example without them)
EXAMPLES = [
    "How many pencils does the store have in stock?",
    "Add a ruler priced at 1.2 with 15 in stock to the store's items.",
    "Which items cost less than 1 each?",
    "Lower the price of the notebook to 2.",
]
ITEMS = [(1, "pen", 1.5, 40), (2, "ink", 3.0, 12), (3, "eraser", 0.75, 30), (4, "pencil", 0.5, 100)]
ORDERS = [(1, 1, 3), (2, 2, 1), (3, 5, 2)]


def sqlite_server_command(db: str | Path, echo: Echo | None = None) -> list[str]:
    """The command starting ``mcp-server-sqlite`` on ``db`` (installing it under the cache the first time)."""
    from benchsmith.models import cache_root
    from benchsmith.models.procs import ensure_venv

    venv = ensure_venv(cache_root() / "mcp-servers" / "mcp-server-sqlite-2025.4.25", SQLITE_MCP_SERVER, echo)
    return [str(venv / "bin" / "mcp-server-sqlite"), "--db-path", str(db)]


def store_template(folder: Path) -> Path:
    """A state template: ``folder/store.db`` with five items and three orders; the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "store.db"
    if db.exists():
        db.unlink()
    con = sqlite3.connect(db)
    with con:
        con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, stock INTEGER)")
        con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES items(id), qty INTEGER)")
        con.executemany("INSERT INTO items VALUES (?, ?, ?, ?)", [*ITEMS, (5, "notebook", 2.25, 25)])
        con.executemany("INSERT INTO orders VALUES (?, ?, ?)", ORDERS)
    con.close()
    return folder


def construct_mcp(out: Path, models: Any, n: int, *, concurrency: int, echo: Echo = print) -> Path:
    """The store's tools imported from the live server, ``n`` queries and their gold chains built on
    fresh copies of the database, then checked (a replay on a new server must reach each chain's
    end state); ``out/checked`` (its ``accepted.jsonl`` goes to review)."""
    from benchsmith.construction import inspect_samples, run_graph
    from benchsmith.construction.checks import CheckContext
    from benchsmith.construction.mcp import import_mcp_tools, parse_probe
    from benchsmith.schemas import Bars, McpServer, write_json

    catalog = out / "catalog"
    if not (catalog / "environment.json").is_file():
        server = McpServer(name="store", command=sqlite_server_command("{work}/store.db", echo))
        tools = import_mcp_tools(server, catalog, store_template(out / "state"), [parse_probe(p) for p in STORE_PROBES])
        write_json(catalog / "examples.json", EXAMPLES)
        echo(f"MCP server mcp-server-sqlite on a copy of {out / 'state'}: {len(tools)} tools -> {catalog}")
    with Bars() as bars:
        queries = run_graph(
            "queries",
            catalog,
            out / "queries",
            models=models,
            options={"n": n, "k": 3},
            concurrency=concurrency,
            progress=bars.add("mcp queries").update,
        )
    for line in queries.describe():
        echo(line)
    with Bars() as bars:
        chains = run_graph(
            "chains",
            out / "queries",
            out / "chains",
            models=models,
            options={"step_budget": 3, "max_retries": 1},
            concurrency=concurrency,
            progress=bars.add("mcp chains").update,
        )
    for line in chains.describe():
        echo(line)
    s = inspect_samples(
        out / "chains" / "samples.jsonl",
        out / "checked",
        context=CheckContext(require_environment=True),
        concurrency=concurrency,
    )
    by = ", ".join(f"{k}={v}" for k, v in s["rejected_by_check"].items()) or "none"
    echo(
        f"check {out / 'checked'}: {s['total']} chains on the live server, {s['accepted']} accepted for review "
        f"(each replayed on a new server to its recorded end state), {s['rejected']} rejected (by: {by})"
    )
    return out / "checked"
