"""What keeping a chain's server open between its steps saves: ``construct chains`` on a live MCP
server, a chain of n inserts built with ``keep_environment`` on (one server for the chain) and
off (a fresh server per step, replaying the steps before it), alternating.

    python perf/mcp_chain_steps.py [--rounds 3] [--steps 1 3 6]

The server is ``mcp-server-sqlite`` (PyPI; its own venv under the cache, as the tests install it)
on a copy of the shop's two-row database; the construction models are scripted (no model time),
so the figures are the tool side of a chain: openings and calls. Prints the median wall time of a
chain per length and side, and the ratio off / on.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ITEMS = "abcdefghij"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    ap.add_argument("--steps", type=int, nargs="+", default=[1, 3, 6], help="chain lengths (default 1 3 6)")
    args = ap.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from mcp_servers import shop_environment
    from scripted_chat import ScriptedChat, by_task

    from benchsmith.construction import RoleModels, run_graph

    root = shop_environment(Path(tempfile.mkdtemp(prefix="bs-chain-bench-")))
    tool = {
        "name": "write_query",
        "description": "Run an INSERT, UPDATE or DELETE on the shop database.",
        "parameters": {
            "properties": {"query": {"type": "string", "description": "the SQL statement"}},
            "required": ["query"],
        },
    }

    def models(n: int) -> RoleModels:
        def plan(last: str, messages: list[dict]) -> str:
            start = max(i for i, m in enumerate(messages) if m["content"].startswith("Request: "))
            done = sum(m["content"].startswith("Step ") for m in messages[start:]) >= n
            return json.dumps({"done": done, "thought": "done" if done else "insert the next item"})

        def act(last: str, messages: list[dict]) -> str:
            name = ITEMS[last.count("$out_")]
            query = f"INSERT INTO item (name) VALUES ('{name}')"
            return json.dumps({"action": "write_query", "arguments": {"query": query}, "thought": "insert"})

        review = '{"verdict": "success", "decision": "continue"}'
        return RoleModels(default=ScriptedChat(script=by_task(plan=plan, act=act, review=review)))

    def build(n: int, keep: bool, where: Path) -> float:
        item = {
            "query": "Add some items to the shop.",
            "tools": [tool],
            "metadata": {"environment": {"kind": "mcp", "file": str(root / "environment.json")}},
            "provenance": {"source": "perf", "method": "hand", "created_at": "2026-11-29T00:00:00Z"},
        }
        items = where / "items.jsonl"
        items.write_text(json.dumps(item) + "\n")
        t0 = time.perf_counter()
        summary = run_graph(
            "chains", items, where / "out", models=models(n), options={"keep_environment": keep, "step_budget": n + 1}
        )
        took = time.perf_counter() - t0
        assert summary.samples == 1, summary
        return took

    times: dict[tuple[int, bool], list[float]] = {(n, k): [] for n in args.steps for k in (True, False)}
    for r in range(args.rounds):
        for n in args.steps:
            order = (True, False) if r % 2 == 0 else (False, True)  # alternate which side goes first
            for keep in order:
                times[(n, keep)].append(build(n, keep, Path(tempfile.mkdtemp(prefix="bs-chain-run-"))))
    print(f"{'steps':>5}  {'kept open':>10}  {'fresh per step':>14}  {'ratio':>6}   (median of {args.rounds}, s)")
    for n in args.steps:
        on, off = statistics.median(times[(n, True)]), statistics.median(times[(n, False)])
        print(f"{n:>5}  {on:>10.2f}  {off:>14.2f}  {off / on:>5.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
