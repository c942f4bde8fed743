"""Prompt lengths a run actually sent, per task, as the server counted them, and the local server
plan they imply (``benchsmith.models.plan_local_server``).

Reads every ``<task>/replies.jsonl`` of one or more run folders (``benchsmith eval run --out``; the
main job writes ``out/demo/run`` and ``out/demo/run-direct``) and prints, per task, the requests,
the longest / mean / 95th-percentile prompt in tokens (``usage.prompt_tokens``), the prompt tokens
the server took from a slot's cache (``usage.cached_tokens``, recorded since 0.2), the
reply tokens, and the summed request latency. ``MEASURED_PROMPT_TOKENS`` in
models/_private/sizing.py holds the longest prompts this printed for the main job.

    python perf/prompt_sizes.py RUN_DIR [RUN_DIR ...] [--cores N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from benchsmith.models import plan_local_server


def task_figures(replies: Path) -> dict[str, float | int]:
    prompts: list[int] = []
    cached = completion = 0
    latency = 0.0
    with replies.open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            for turn in rec.get("turns") or []:
                usage = turn.get("usage") or {}
                if "prompt_tokens" not in usage:
                    continue
                prompts.append(int(usage["prompt_tokens"]))
                cached += int(usage.get("cached_tokens") or 0)
                completion += int(usage.get("completion_tokens") or 0)
                latency += float(turn.get("latency_s") or 0.0)
    prompts.sort()
    n = len(prompts)
    return {
        "requests": n,
        "max": prompts[-1] if n else 0,
        "mean": round(sum(prompts) / n) if n else 0,
        "p95": prompts[min(n - 1, int(0.95 * n))] if n else 0,
        "prompt_tokens": sum(prompts),
        "cached_tokens": cached,
        "completion_tokens": completion,
        "latency_s": round(latency, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows: dict[str, dict] = {}
    for run in args.runs:
        for replies in sorted(run.glob("*/replies.jsonl")):
            name = replies.parent.name if len(args.runs) == 1 else f"{run.name}/{replies.parent.name}"
            rows[name] = task_figures(replies)
    if not rows:
        print(f"no */replies.jsonl under {', '.join(map(str, args.runs))}", file=sys.stderr)
        return 2
    print(
        f"{'task':<28}{'requests':>9}{'max':>8}{'mean':>8}{'p95':>8}{'prompt':>10}{'cached':>10}{'reply':>8}"
        f"{'latency s':>11}"
    )
    for name, r in rows.items():
        print(
            f"{name:<28}{r['requests']:>9}{r['max']:>8}{r['mean']:>8}{r['p95']:>8}{r['prompt_tokens']:>10}"
            f"{r['cached_tokens']:>10}{r['completion_tokens']:>8}{r['latency_s']:>11}"
        )
    total = {
        k: sum(r[k] for r in rows.values())
        for k in ("requests", "prompt_tokens", "cached_tokens", "completion_tokens", "latency_s")
    }
    share = total["cached_tokens"] / total["prompt_tokens"] if total["prompt_tokens"] else 0.0
    print(
        f"{'all':<28}{total['requests']:>9}{'':>24}{total['prompt_tokens']:>10}{total['cached_tokens']:>10}"
        f"{total['completion_tokens']:>8}{round(total['latency_s'], 1):>11}"
    )
    print(f"prompt tokens served from a slot's cache: {share:.1%}")
    longest = max(r["max"] for r in rows.values())
    plan = plan_local_server(args.cores, longest_prompt=longest)
    print(f"plan for {args.cores} cores: {plan.parallel} slots x {plan.ctx_per_slot} tokens ({plan.reason})")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "tasks": rows,
                    "total": total,
                    "cached_share": share,
                    "plan": {"parallel": plan.parallel, "ctx_per_slot": plan.ctx_per_slot},
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
