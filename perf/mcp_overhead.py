"""What a live MCP environment costs: a tool call through benchsmith's ``mcp`` environment against
a local stdio server, beside a direct call of the same tool function, and the fresh server started
for every episode beside a short episode's calls.

    python perf/mcp_overhead.py [--rounds 7] [--calls 200] [--episode-calls 3]

The server is ``mcp-server-sqlite`` (PyPI; installed into its own venv under the cache on first
use, as the tests do) on a copy of a two-row database. Per round, alternating:
  direct   - ``SqliteDatabase._execute_query`` (the server's own tool function) in the server's
             interpreter, ``--calls`` times, on the same database: the tool's cost without MCP
  via mcp  - ``McpToolEnvironment.call("read_query", ...)`` on an open environment, ``--calls``
             times: the round trip (JSON-RPC over stdio, the SDK on both sides, references, labels)
  opening  - open + close of the environment (template copied, server started and initialised,
             tools listed, server stopped, folder removed): what every chain step, replay and
             episode pays once
  start-up - the server's interpreter importing the server module, alone: the part of an opening
             that is the server's own
Prints medians per call, the ratio via mcp / direct, and what share of a short episode's tool
time (``--episode-calls`` calls) the opening takes.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = "SELECT id, name FROM item ORDER BY id"
DIRECT = """
import sys, time
from mcp_server_sqlite.server import SqliteDatabase
db = SqliteDatabase(sys.argv[1])
n = int(sys.argv[2])
t0 = time.perf_counter()
for _ in range(n):
    db._execute_query(sys.argv[3])
print((time.perf_counter() - t0) / n)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7, help="alternating rounds (default 7)")
    ap.add_argument("--calls", type=int, default=200, help="calls per round and side (default 200)")
    ap.add_argument("--episode-calls", type=int, default=3, help="tool calls of a short episode (default 3)")
    args = ap.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from mcp_servers import shop_environment, sqlite_server_command

    from benchsmith.construction import EnvContext, close_environment, open_environment

    root = shop_environment(Path(tempfile.mkdtemp(prefix="bs-mcp-bench-")))
    descriptor = {"kind": "mcp", "file": str(root / "environment.json")}
    server_python = Path(sqlite_server_command(root / "x.db")[0]).parent / "python"
    db_copy = root / "direct.db"
    db_copy.write_bytes((root / "state" / "shop.db").read_bytes())

    direct, via, opening, imports = [], [], [], []
    for r in range(args.rounds):
        for side in ("direct", "mcp") if r % 2 == 0 else ("mcp", "direct"):
            if side == "direct":
                out = subprocess.run(
                    [str(server_python), "-c", DIRECT, str(db_copy), str(args.calls), QUERY],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                direct.append(float(out.stdout.strip()))
                t0 = time.perf_counter()  # what the server itself needs before it can answer: its imports
                subprocess.run([str(server_python), "-c", "import mcp_server_sqlite.server"], check=True)
                imports.append(time.perf_counter() - t0)
                continue
            t0 = time.perf_counter()
            env = open_environment(descriptor, EnvContext())
            t1 = time.perf_counter()
            try:
                for i in range(args.calls):
                    env.call("read_query", {"query": QUERY}, f"out_{i}")
                t2 = time.perf_counter()
            finally:
                close_environment(env)
            t3 = time.perf_counter()
            via.append((t2 - t1) / args.calls)
            opening.append((t1 - t0) + (t3 - t2))
    d, v, o = statistics.median(direct), statistics.median(via), statistics.median(opening)
    own = statistics.median(imports)
    episode = o + args.episode_calls * v
    print(f"mcp-server-sqlite, {args.rounds} alternating rounds of {args.calls} calls (medians)")
    print(f"  {'direct call (the tool function)':<40} {d * 1e3:9.3f} ms")
    print(f"  {'call via the mcp environment':<40} {v * 1e3:9.3f} ms   {v / d:7.1f}x direct")
    print(f"  {'opening: fresh server, start + stop':<40} {o * 1e3:9.1f} ms   {o / v:7.1f}x a call")
    print(f"  {'  of which the server itself starting':<40} {own * 1e3:9.1f} ms   (its interpreter and imports)")
    print(f"  {'  of which benchsmith and the SDK client':<40} {(o - own) * 1e3:9.1f} ms")
    print(
        f"  a short episode of {args.episode_calls} calls: {episode * 1e3:.1f} ms, the opening "
        f"{100 * o / episode:.0f}% of it"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
