"""Push 10,000 tasks to a real Label Studio and pull 10,000 annotations back, timed.

    python perf/annotation_speed.py [--n 10000] [--keep]

Starts its own Label Studio on 127.0.0.1 (from the migrated template, a temporary data dir),
builds ``n`` query samples, and times:
  push  - Workspace.push(stage="review"): projects, payloads (with rule checks), imports in batches
  pull  - Workspace.pull() of ``--annotations`` annotations (two reviewers on half as many tasks, imported
          with their tasks beforehand, not timed): fetched, stored, and every item advanced by the protocol
Targets (issue 6): push < 60 s, pull < 30 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000, help="tasks to push (default 10000)")
    ap.add_argument(
        "--annotations",
        type=int,
        default=10_000,
        help="annotations to pull (default 10000: two reviewers on half as many tasks)",
    )
    ap.add_argument("--keep", action="store_true", help="leave the server running and print its data dir")
    args = ap.parse_args()

    from benchsmith.annotation._private.configs import Review, result_for
    from benchsmith.annotation._private.lsclient import LabelStudio
    from benchsmith.annotation._private.server import resolve_label_studio, start_label_studio, stop_label_studio
    from benchsmith.annotation._private.workflow import Workspace
    from benchsmith.schemas import Sample, write_jsonl

    root = Path(tempfile.mkdtemp(prefix="bs-annot-bench-"))
    tools = [
        {
            "name": "get_weather",
            "description": "The weather forecast for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name"}},
                "required": ["city"],
            },
        }
    ]
    now = datetime.now(timezone.utc)
    samples = [
        Sample(
            query=f"What is the weather in city number {i} tomorrow?",
            tools=tools,
            answer={"kind": "reference", "references": [f"Sunny in city {i}."]},
            provenance={"source": "bench", "method": "bench", "created_at": now},
        )
        for i in range(args.n)
    ]
    write_jsonl(root / "samples.jsonl", samples)
    load0 = os.getloadavg()[0]
    t = time.perf_counter()
    info = start_label_studio(data_dir=root / "ls")
    started = time.perf_counter() - t
    try:
        acc = resolve_label_studio(data_dir=root / "ls")
        ls = LabelStudio(acc.url, acc.token)
        ws = Workspace(root / "ws")
        ws.load(root / "samples.jsonl")
        t = time.perf_counter()
        report = ws.push(ls, "review")
        push_s = time.perf_counter() - t
        (pid,) = report.projects.values()
        assert len(ls.task_keys(pid)) == report.pushed, "every pushed task is on the server once"
        # pull: a second workspace whose 10k tasks already carry two reviewers' annotations. They are
        # imported together with their tasks (setup, not timed): the community edition has no bulk
        # annotation endpoint and posts about 20 annotations/s one by one.
        from benchsmith.annotation._private.configs import label_config

        result = result_for("query", Review(decision="accept"))
        uids = [ls.ensure_user(name) for name in ("bench-reviewer-1", "bench-reviewer-2")]
        ws2 = Workspace(root / "ws2")
        ws2.load(root / "samples.jsonl")
        items = ws2.store.items()[: max(1, args.annotations // 2)]
        t = time.perf_counter()
        pid2 = ls.create_project("bench pull", label_config("query", "review"), maximum_annotations=2)
        ws2.store.add_project("review", 1, "query", pid2, "bench")
        for i in range(0, len(items), 2000):
            batch = items[i : i + 2000]
            payloads = [
                {
                    "data": {
                        "bs_id": it["sample_id"],
                        "query": it["sample"]["query"],
                        "tools_text": "get_weather",
                        "setup_text": "",
                        "answer": "",
                        "check_summary": "",
                    },
                    "annotations": [{"result": result, "completed_by": u} for u in uids],
                }
                for it in batch
            ]
            ids = ls.import_tasks(pid2, payloads)
            ws2.store.add_tasks("review", 1, pid2, {it["sample_id"]: tid for it, tid in zip(batch, ids)})
        annotate_s = time.perf_counter() - t
        t = time.perf_counter()
        pulled = ws2.pull(ls)
        pull_s = time.perf_counter() - t
        again_t = time.perf_counter()
        again = ws2.pull(ls)
        again_s = time.perf_counter() - again_t
    finally:
        if not args.keep:
            stop_label_studio(data_dir=root / "ls")
    print(f"Label Studio {info.version} on {info.url}: up in {started:.1f} s; load average {load0:.2f} at the start")
    print(
        f"push {report.pushed} tasks:           {push_s:7.1f} s  ({report.pushed / push_s:,.0f} tasks/s)   target < 60 s: "
        f"{'met' if push_s < 60 else 'NOT met'}"
    )
    print(
        f"  (setup for the pull: {len(items)} tasks with {2 * len(items)} annotations imported in {annotate_s:.1f} s)"
    )
    print(
        f"pull {pulled['new_annotations']} annotations:     {pull_s:7.1f} s  ({pulled['new_annotations'] / pull_s:,.0f} "
        f"annotations/s)   target < 30 s: {'met' if pull_s < 30 else 'NOT met'}; items moved {pulled['moved']}"
    )
    print(f"pull again (nothing open): {again_s:7.2f} s, {again['new_annotations']} new")
    if args.keep:
        print(f"server left running; data dir {root / 'ls'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
