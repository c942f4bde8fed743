"""Realistic run folders (docs/eval/runs.md) without a model, for the report tests and the screenshot script.

A tiny SLOT split is built from the first Chinook pairs; T-Eval, GTA, ToolAssess and ACEBench-special
cases are derived from it. A fake "model" answers each case with the gold prediction, another
case's gold (a wrong answer), a truncated gold (unparseable), garbage, a format error or a
transport error, with probabilities set by its ``quality``; the run is then scored with
``benchsmith.eval.run_score`` exactly like ``benchsmith eval score --run`` would.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ROOT / "construction" / "nl2api" / "data" / "chinook_pairs.jsonl"

#: task -> (benchmark, folder of its data relative to the workspace)
TASKS = {
    "nl2api": ("nl2api", "split"),
    "teval": ("teval", "derived/teval"),
    "gta": ("gta", "derived/gta"),
    "toolassess": ("toolassess", "derived/toolassess"),
    "acebench_special": ("acebench", "derived/acebench_special"),
}

SCRIPT = "<script>alert(1)</script>"
LONG = "A" * 2000  # a reply longer than the report's preview


def build_workspace(root: Path, n_pairs: int = 5) -> Path:
    """``root/split`` (a SLOT split of the first ``n_pairs`` pairs) and ``root/derived/*``."""
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db
    from benchsmith.eval import derive_all

    root.mkdir(parents=True, exist_ok=True)
    lines = [line for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()][:n_pairs]
    (root / "pairs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = build_split(
        chinook_db(), root / "pairs.jsonl", root / "split", BuildOptions(style="slot", name="chinook-slot")
    )
    assert report["verified"] == n_pairs, report
    derive_all(root / "split", root / "derived")
    return root


def _turn(
    messages: list[dict[str, Any]], raw: str, rng: random.Random, tool_calls: list | None = None, parsed: Any = None
) -> dict[str, Any]:
    prompt = sum(len(str(m.get("content", ""))) for m in messages) // 4 + 50
    return {
        "messages": messages,
        "raw": raw,
        "tool_calls": tool_calls or [],
        "parsed": parsed,
        "latency_s": round(rng.uniform(0.2, 2.5), 3),
        "usage": {"prompt_tokens": prompt, "completion_tokens": max(1, len(raw) // 4)},
        "shared": False,
    }


def _question(case) -> str:  # noqa: ANN001 - an EvalCase
    for key in ("query", "question", "instruction"):
        if isinstance(case.input.get(key), str):
            return case.input[key]
    return json.dumps(case.input, ensure_ascii=False)[:400]


def make_run(
    workspace: Path,
    out: Path,
    model: str,
    quality: float,
    seed: int,
    *,
    mode: str = "prompt",
    tasks: tuple[str, ...] = tuple(TASKS),
    limit: int | None = None,
    script_case: bool = False,
    score: bool = True,
    created_at: str = "2026-11-23T11:30:00Z",
) -> Path:
    """Write a run folder for a fake model and score it. ``quality`` is the share of gold answers."""
    from benchsmith.eval import get_benchmark, run_score

    rng = random.Random(f"{model}:{seed}")
    out.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "format": "benchsmith.run/v1",
        "run_id": f"{created_at.replace(':', '-')}-{model}",
        "model": {
            "name": model,
            "base_url": "http://127.0.0.1:8731/v1",
            "local": True,
            "temperature": 0.0,
            "max_tokens": 512,
            "seed": 0,
            "timeout": 60.0,
        },
        "mode": mode,
        "split": str((workspace / "split").resolve()),
        "concurrency": 2,
        "created_at": created_at,
        "updated_at": created_at.replace("11:30", "11:34"),
        "status": "complete",
        "tasks": {},
    }
    any_transport = False
    for task in tasks:
        bench_name, folder = TASKS[task]
        bench = get_benchmark(bench_name)
        data = workspace / folder
        cases = bench.load(data)
        # one case per id (T-Eval's reason/retrieve/understand records share ids and one prediction)
        unique: dict[str, Any] = {}
        for c in cases:
            unique.setdefault(c.id, c)
        chosen = list(unique.values())[:limit] if limit else list(unique.values())
        golds = [bench.gold_prediction(c) for c in chosen]
        version = f"{task}/v1-{hashlib.sha256(task.encode()).hexdigest()[:8]}"
        tdir = out / task
        tdir.mkdir(parents=True, exist_ok=True)
        replies, predictions = [], []
        counts = {"ok": 0, "format_error": 0, "transport_error": 0}
        for k, (case, gold) in enumerate(zip(chosen, golds)):
            roll = rng.random()
            messages = [
                {"role": "system", "content": f"You solve {bench_name} tasks. Answer in the requested format."},
                {"role": "user", "content": _question(case)},
            ]
            status, error, result, turns = "ok", None, None, []
            if script_case and k == 0:
                raw = f"I think the answer is {SCRIPT} & <b>bold</b>"
                result = raw
            elif script_case and k == 1:
                raw = result = LONG
            elif roll < quality:
                raw, result = f"```json\n{gold}\n```" if rng.random() < 0.3 else gold, gold
            elif roll < quality + (1 - quality) * 0.35:
                other = golds[(k + 1) % len(golds)]
                raw = result = other if other != gold else "{}"
            elif roll < quality + (1 - quality) * 0.6:
                raw = result = gold[: max(1, len(gold) // 2)]
            elif roll < quality + (1 - quality) * 0.8:
                raw = "I'm sorry, I cannot help with that request."
                status, error = "format_error", {"type": "format_error", "message": "no JSON object in the reply"}
                result = None
            elif roll < quality + (1 - quality) * 0.9 and k > 0:
                raw = None
                status, error = "transport_error", {"type": "transport_error", "message": "timed out after 60.0 s"}
                any_transport = True
            else:
                raw = result = "lorem ipsum " * rng.randint(1, 80)
            if raw is not None:
                if task == "nl2api":  # a ReAct case: a tool call, its observation, then the final answer
                    first = _turn(
                        messages,
                        "Thought: I will filter the data first.\nAction: filter_data",
                        rng,
                        tool_calls=[{"name": "filter_data", "arguments": {"data_source": "$data_1$"}}],
                    )
                    observed = messages + [
                        {"role": "assistant", "content": first["raw"]},
                        {"role": "tool", "content": "label filtered_2: 42 rows"},
                    ]
                    turns = [first, _turn(observed, raw, rng)]
                else:
                    turns = [_turn(messages, raw, rng, parsed=None)]
            counts[status] += 1
            key = hashlib.sha256(f"{case.id}{model}{version}".encode()).hexdigest()
            replies.append(
                {
                    "id": case.id,
                    "key": key,
                    "model": model,
                    "prompt_version": version,
                    "status": status,
                    "result": result,
                    "error": error,
                    "turns": turns,
                    "started_at": created_at,
                    "finished_at": created_at,
                }
            )
            if status != "transport_error":
                predictions.append({"id": case.id, "result": result if result is not None else ""})
        with open(tdir / "cases.jsonl", "w", encoding="utf-8") as fh:
            for c in chosen:
                fh.write(c.model_dump_json() + "\n")
        with open(tdir / "replies.jsonl", "w", encoding="utf-8") as fh:
            for r in replies:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        with open(tdir / "predictions.jsonl", "w", encoding="utf-8") as fh:
            for p in predictions:
                fh.write(json.dumps(p, ensure_ascii=False) + "\n")
        turns_all = [t for r in replies for t in r["turns"]]
        meta["tasks"][task] = {
            "benchmark": bench_name,
            "data": str(data.resolve()),
            "cases": len(chosen),
            "prompt_version": version,
            "done": len(chosen),
            "status_counts": counts,
            "model_calls": len(turns_all),
            "prompt_tokens": sum(t["usage"]["prompt_tokens"] for t in turns_all),
            "completion_tokens": sum(t["usage"]["completion_tokens"] for t in turns_all),
            "wall_s": round(sum(t["latency_s"] for t in turns_all) / 2, 2),
        }
        if score:
            run_score(bench_name, data, tdir / "predictions.jsonl", tdir)
    meta["status"] = "partial" if any_transport else "complete"
    (out / "run.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return out


def make_two_runs(root: Path, n_pairs: int = 5) -> tuple[Path, Path, Path]:
    """(workspace, run of a good model, run of a weak model with the <script> and the long replies)."""
    ws = build_workspace(root / "ws", n_pairs)
    a = make_run(ws, root / "runs" / "model-a", "model-a", quality=0.8, seed=1)
    b = make_run(
        ws,
        root / "runs" / "model-b",
        "model-b",
        quality=0.35,
        seed=2,
        script_case=True,
        created_at="2026-11-24T09:30:00Z",
    )
    return ws, a, b
