"""The episode runner's speed, measured side by side in one run.

* episodes/min against the local model (or ``--base-url``) at concurrency 1 and at concurrency 4,
  on the same packaged sandbox scenarios (the same model plays the user), each in a fresh run
  folder; the ratio shows what running episodes of different samples concurrently buys;
* the runner's own overhead per turn against a zero-latency scripted endpoint (an in-process
  client whose reply is a pure function of the messages): ``run_eval`` wall time / turns, where a
  turn is one journaled event (a user message, an assistant reply or a tool turn), with the journal
  fsync'd as in real runs. Target (issue 14): < 5 ms per turn.

    python perf/episode_speed.py [--episodes 8] [--max-turns 3] [--overhead-episodes 200]
                                 [--base-url URL --model NAME] [--skip-model]

Measure on an idle machine: llama.cpp's threads collapse when the cores are busy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchsmith.eval import TaskOptions, run_eval


@dataclass
class _Reply:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0


class _Instant:
    """A zero-latency endpoint: the assistant calls the first tool twice per user message, then
    answers; the user asks twice, then says the stop phrase (about 12 turns per episode)."""

    def __init__(self, role: str) -> None:
        self.role = role

    async def acomplete(self, messages: list[dict[str, Any]], **kw: Any) -> _Reply:
        if self.role == "user":
            own = sum(1 for m in messages if m["role"] == "assistant")
            return _Reply(["I need help.", "One more thing.", "finish conversation"][min(own, 2)])
        since = 0
        for m in reversed(messages):
            if m["role"] == "user":
                break
            since += m["role"] == "tool"
        if since < 2:
            name = kw["tools"][0]["function"]["name"]
            return _Reply(tool_calls=[{"id": "x", "name": name, "arguments": {}}])
        return _Reply("Done. Anything else?")


def _events(run_dir: Path) -> int:
    path = run_dir / "agent" / "episodes.jsonl"
    return sum(1 for _ in path.open()) if path.is_file() else 0


def overhead(n: int, tmp: Path) -> dict[str, float]:
    """Runner overhead per turn against the zero-latency endpoint (scenarios reused round robin)."""
    out = tmp / "overhead"
    t0 = time.perf_counter()
    # trials multiply the packaged scenarios up to n episodes
    from benchsmith.eval import get_benchmark

    scenarios = len(get_benchmark("agent").load("sandbox"))
    trials = max(1, -(-n // scenarios))
    res = run_eval(
        "sandbox",
        _Instant("assistant"),
        {"name": "instant"},
        out,
        tasks=["agent"],
        calling="tools",
        concurrency=4,
        progress=False,
        options=TaskOptions(calling="tools", trials=trials),
        user_client=_Instant("user"),
        user_model={"name": "instant-user"},
    )
    wall = time.perf_counter() - t0
    turns = _events(out)
    return {
        "episodes": res.tasks["agent"]["cases"],
        "turns": turns,
        "wall_s": round(wall, 3),
        "ms_per_turn": round(1000 * wall / max(1, turns), 3),
    }


def model_speed(
    n: int, max_turns: int, concurrency: int, tmp: Path, base_url: str | None, model: str | None
) -> dict[str, float]:
    from benchsmith.models import DEFAULT_LOCAL_MODEL, ModelClient, resolve_model

    cfg = resolve_model(model or (None if base_url else DEFAULT_LOCAL_MODEL), base_url, timeout=600.0, max_tokens=256)
    mode = "prompt" if cfg.local else "tools"
    out = tmp / f"model-c{concurrency}"
    t0 = time.perf_counter()
    res = run_eval(
        "sandbox",
        ModelClient(cfg),
        cfg.describe(),
        out,
        tasks=["agent"],
        calling=mode,
        concurrency=concurrency,
        limit=n,
        progress=False,
        options=TaskOptions(calling=mode, max_tokens=256, max_turns=max_turns, max_steps=3),
        user_client=ModelClient(cfg),
        user_model=cfg.describe(),
    )
    wall = time.perf_counter() - t0
    info = res.tasks["agent"]
    return {
        "episodes": info["cases"],
        "turns": _events(out),
        "wall_s": round(wall, 1),
        "episodes_per_min": round(60 * info["cases"] / wall, 2),
        "model_calls": info["model_calls"] + info.get("user_model_calls", 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--max-turns", type=int, default=3)
    ap.add_argument("--overhead-episodes", type=int, default=200)
    ap.add_argument("--base-url", default=os.environ.get("BENCHSMITH_BASE_URL"))
    ap.add_argument("--model", default=os.environ.get("BENCHSMITH_MODEL"))
    ap.add_argument("--skip-model", action="store_true", help="only the overhead against the scripted endpoint")
    args = ap.parse_args()
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="episode-speed-") as d:
        tmp = Path(d)
        o = overhead(args.overhead_episodes, tmp)
        print(
            f"runner overhead (zero-latency scripted endpoint): {o['episodes']} episodes, {o['turns']} turns in "
            f"{o['wall_s']} s = {o['ms_per_turn']} ms per turn (target < 5 ms)"
        )
        figures: dict[str, Any] = {"overhead": o}
        if not args.skip_model:
            one = model_speed(args.episodes, args.max_turns, 1, tmp, args.base_url, args.model)
            four = model_speed(args.episodes, args.max_turns, 4, tmp, args.base_url, args.model)
            for c, f in ((1, one), (4, four)):
                print(
                    f"model, concurrency {c}: {f['episodes']} episodes ({f['turns']} turns, {f['model_calls']} model "
                    f"calls) in {f['wall_s']} s = {f['episodes_per_min']} episodes/min"
                )
            print(
                f"concurrency 4 / concurrency 1: {four['episodes_per_min'] / max(one['episodes_per_min'], 1e-9):.2f}x"
            )
            figures.update(concurrency_1=one, concurrency_4=four)
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
