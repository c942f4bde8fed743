"""The local models side by side, in one run on one commit: prompt and generation tokens/s on this
machine's threads, the server's peak RSS, and (with ``--main-job``) the main job's stage times.

For each model (default: every registered one) its server is started with the main job's settings
(``plan_local_server`` on every core), then ``--rounds`` rounds send the same requests to every
model in turn (A B C, then B C A, ...: this machine's speed drifts, so no model gets all the quiet
minutes). A request is one long prompt (a tool catalog, about ``--prompt-tokens`` tokens, never
the same prefix twice so the prompt cache cannot replay it) and a fixed-length reply (``--gen``
tokens, ``ignore_eos``). Speeds are llama.cpp's own ``timings`` of each reply; the server's peak
RSS is its ``VmHWM`` after every round; the weights file's size is listed beside it.

``--main-job`` then runs ``benchsmith demo`` once per model (``BENCHSMITH_LOCAL_MODEL``) into a
fresh folder and prints its ``timings.json`` and headline scores side by side (about 10-15 minutes
per model on 2 cores).

    python perf/local_models.py [--models gemma3-270m,qwen2.5-coder-0.5b] [--rounds 3] [--main-job] [--json PATH]

Measure on an idle machine: llama.cpp uses every core.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchsmith.models import (
    LOCAL_MODELS,
    ensure_local_model,
    local_server_status,
    start_local_server,
    stop_local_server,
)

WORDS = (
    "album artist track invoice genre playlist customer employee media price quantity total "
    "country city composer milliseconds bytes title name date"
).split()


def catalog_prompt(tokens: int, salt: int) -> str:
    """A tool-catalog-like prompt of roughly ``tokens`` tokens; ``salt`` changes its first line so no
    two requests share a cached prefix."""
    lines = [f"Request {salt}: which tool answers the question? Tools:"]
    i = 0
    while len(" ".join(lines)) < tokens * 4:  # about 4 characters per token for this text
        w = WORDS[i % len(WORDS)], WORDS[(i * 7 + salt) % len(WORDS)]
        lines.append(f"- get_{w[0]}_{w[1]}_{i}(id: int, {w[1]}: str): returns the {w[0]} of one {w[1]} by id.")
        i += 1
    return "\n".join(lines)


def vm_hwm_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def one_request(url: str, model: str, prompt: str, gen: int) -> dict[str, float]:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": gen,
        "temperature": 0,
        "ignore_eos": True,
        "cache_prompt": False,
    }
    r = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=600)
    r.raise_for_status()
    t = r.json()["timings"]
    return {
        "prompt_n": t["prompt_n"],
        "prompt_tps": t["prompt_per_second"],
        "gen_n": t["predicted_n"],
        "gen_tps": t["predicted_per_second"],
    }


def speeds(models: list[str], rounds: int, prompt_tokens: int, gen: int, requests: int) -> dict[str, Any]:
    servers = {}
    started = []
    for name in models:
        ensure_local_model(name)
        was = local_server_status(name)
        info = start_local_server(model=name, wait=120)
        servers[name] = info
        if was is None:
            started.append(name)
        print(
            f"{name}: server pid {info.pid}, {info.parallel} slots x {info.ctx_per_slot} tokens, "
            f"{info.threads} threads",
            flush=True,
        )
    out: dict[str, Any] = {n: {"runs": [], "peak_rss_mb": None} for n in models}
    salt = 0
    try:
        for r in range(rounds):
            order = models[r % len(models) :] + models[: r % len(models)]
            for name in order:
                info = servers[name]
                for _ in range(requests):
                    salt += 1
                    out[name]["runs"].append(one_request(info.url, name, catalog_prompt(prompt_tokens, salt), gen))
                hwm = vm_hwm_mb(info.pid)
                out[name]["peak_rss_mb"] = max(filter(None, [out[name]["peak_rss_mb"], hwm]), default=None)
            print(f"round {r + 1}/{rounds} done ({' '.join(order)})", flush=True)
    finally:
        for name in started:
            stop_local_server(model=name)
    for name in models:
        runs = out[name]["runs"]
        out[name]["prompt_tps"] = round(statistics.median(x["prompt_tps"] for x in runs), 1)
        out[name]["gen_tps"] = round(statistics.median(x["gen_tps"] for x in runs), 1)
        out[name]["prompt_n"] = round(statistics.median(x["prompt_n"] for x in runs))
        out[name]["threads"] = servers[name].threads
        out[name]["file_mb"] = round(Path(ensure_local_model(name)).stat().st_size / 1e6, 1)
    return out


def watch_server_rss(name: str, stop: threading.Event, peak: list[float]) -> None:
    """Keep the largest VmHWM of ``name``'s server (the main job starts and stops its own)."""
    while not stop.wait(2.0):
        info = local_server_status(name)
        hwm = vm_hwm_mb(info.pid) if info is not None else None
        if hwm is not None:
            peak[0] = max(peak[0], hwm)


def main_job(models: list[str], root: Path) -> dict[str, Any]:
    out = {}
    for name in models:
        folder = root / name
        env = {**os.environ, "BENCHSMITH_LOCAL_MODEL": name}
        stop, peak = threading.Event(), [0.0]
        watcher = threading.Thread(target=watch_server_rss, args=(name, stop, peak), daemon=True)
        watcher.start()
        t0 = time.monotonic()
        res = subprocess.run(
            [sys.executable, "-m", "benchsmith.cli", "demo", "--out", str(folder)],
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - t0
        stop.set()
        watcher.join()
        (root / f"{name}.log").write_text(res.stdout + res.stderr)
        timings = json.loads((folder / "timings.json").read_text()) if (folder / "timings.json").is_file() else {}
        lines = [line.strip() for line in res.stdout.splitlines()]
        scores = next((line for line in lines if line.startswith("scores (strict)")), "")
        construct = [line for line in lines if line.split(" ", 1)[0] in ("queries", "chains", "check", "dialogues")]
        review = [line for line in lines if "new items" in line]
        out[name] = {
            "exit": res.returncode,
            "wall_s": round(wall, 1),
            "timings": timings,
            "scores": scores,
            "construct": construct,
            "review": review,
            "server_peak_rss_mb": round(peak[0]) or None,
        }
        print(f"{name}: main job exit {res.returncode} in {wall:.0f} s (log {root / f'{name}.log'})", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(LOCAL_MODELS), help="comma-separated local model names")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=2, help="requests per model per round")
    ap.add_argument("--prompt-tokens", type=int, default=1500)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--main-job", action="store_true", help="also run `benchsmith demo` once per model")
    ap.add_argument("--no-speeds", action="store_true", help="skip the token-rate rounds (with --main-job)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; models {', '.join(models)}", flush=True
    )
    result: dict[str, Any] = {}
    if not args.no_speeds:
        result["speeds"] = speeds(models, args.rounds, args.prompt_tokens, args.gen, args.requests)
    if args.main_job:
        result["main_job"] = main_job(models, Path(tempfile.mkdtemp(prefix="bs-local-models-")))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if "speeds" in result:
        print_speeds(models, result["speeds"])
    if args.main_job:
        print_main_job(models, result["main_job"])


def print_speeds(models: list[str], s: dict[str, Any]) -> None:
    print(f"\n{'model':<22} {'file MB':>8} {'threads':>7} {'prompt tok/s':>13} {'gen tok/s':>10} {'peak RSS MB':>12}")
    for name in models:
        v = s[name]
        print(
            f"{name:<22} {v['file_mb']:>8.1f} {v['threads']:>7} {v['prompt_tps']:>13.1f} {v['gen_tps']:>10.1f} "
            f"{v['peak_rss_mb'] or 0:>12.0f}"
        )
    base = models[0]
    for name in models[1:]:
        print(
            f"  {name} / {base}: prompt {s[name]['prompt_tps'] / s[base]['prompt_tps']:.2f}x, "
            f"generation {s[name]['gen_tps'] / s[base]['gen_tps']:.2f}x"
        )


def print_main_job(models: list[str], runs: dict[str, Any]) -> None:
    stages = ("build", "dataset", "derive", "construct", "review", "evaluate")
    print(f"\n{'model':<22} " + " ".join(f"{st:>9}" for st in stages) + f" {'total':>9}  exit")
    for name in models:
        m = runs[name]
        st = m["timings"].get("stages_s", {})
        cells = " ".join(f"{st.get(k, float('nan')):>9.0f}" for k in stages)
        print(f"{name:<22} {cells} {m['timings'].get('total_s', float('nan')):>9.0f}  {m['exit']}")
        print(f"  server peak RSS {m['server_peak_rss_mb']} MB; {m['scores']}")
        for line in m["construct"] + m["review"]:
            print(f"  {line}")


if __name__ == "__main__":
    main()
