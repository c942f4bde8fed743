"""Evaluator speed and memory: score full benchmark sets with several prediction sets.

For each benchmark whose data is available (ACEBench EN and BFCL v4 from the shared data
folder; GTA and ToolAssess cases derived from the default NL2API split, replicated 10 times; T-Eval
cases derived from it and replicated to a T-Eval-sized run) this prints cases/second per
prediction set and mode, and the process's peak RSS.

    python perf/eval_speed.py [--shared-data PATH] [--teval-cases 23305] [--only bfcl,gta,...]

Prediction sets: the gold itself, the gold with its first number or quoted value changed,
the gold cut in half (malformed), and an empty answer.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import tempfile
import time
from pathlib import Path

from benchsmith.eval import get_benchmark, score_cases


def perturbations(gold: str) -> dict[str, str]:
    changed = re.sub(r"\d+", lambda m: str(int(m.group()) + 1), gold, count=1)
    if changed == gold:
        changed = re.sub(r"'([^']*)'", r"'\1x'", gold, count=1)
    return {"gold": gold, "value_changed": changed, "truncated": gold[: len(gold) // 2], "empty": ""}


def bench(name: str, data: Path, rounds: int = 1, replicate: int = 1) -> None:
    b = get_benchmark(name)
    t0 = time.perf_counter()
    cases = b.load(data)
    load_s = time.perf_counter() - t0
    cases = [
        c.model_copy(update={"id": f"{c.id}~{i}"}) if replicate > 1 else c for i in range(replicate) for c in cases
    ]
    sets: dict[str, dict[str, str]] = {}
    for case in cases:
        for kind, text in perturbations(b.gold_prediction(case)).items():
            sets.setdefault(kind, {})[case.id] = text
    print(f"{name}: {len(cases)} cases from {data} (load {load_s:.2f}s)")
    for mode in ("official", "strict"):
        for kind, preds in sets.items():
            t0 = time.perf_counter()
            for _ in range(rounds):
                run = score_cases(b, cases, preds, mode)  # type: ignore[arg-type]
            dt = (time.perf_counter() - t0) / rounds
            ok = sum(r.ok for r in run.records)
            print(f"  {mode:8s} {kind:14s} {len(cases) / dt:10.0f} cases/s   pass {ok}/{len(cases)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared-data", default=os.environ.get("BENCHSMITH_SHARED_DATA"))
    ap.add_argument("--teval-cases", type=int, default=23305)
    ap.add_argument("--only", default="acebench,bfcl,gta,toolassess,teval", help="comma-separated benchmarks to time")
    ap.add_argument(
        "--derived",
        default=None,
        help="an existing `benchsmith eval derive` folder to time (default: derive the SLOT split afresh); "
        "the same folder lets two versions be timed on the same cases",
    )
    args = ap.parse_args()
    only = set(args.only.split(","))
    if args.shared_data:
        root = Path(args.shared_data)
        for name, sub in (("acebench", "acebench_en"), ("bfcl", "bfcl_v4")):
            if name in only and (root / sub).is_dir():
                bench(name, root / sub)
    else:
        print("no shared data folder: skipping ACEBench and BFCL (set BENCHSMITH_SHARED_DATA)")
    if only & {"gta", "toolassess", "teval"}:
        derived_runs(args.teval_cases, only, Path(args.derived) if args.derived else None)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak RSS: {peak_kb / 1024:.0f} MB")


def derived_runs(n_cases: int, only: set[str], given: Path | None) -> None:
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db, default_pairs_path
    from benchsmith.eval import derive_all

    with tempfile.TemporaryDirectory() as tmp:
        if given is not None:
            derived = given
        else:
            split = Path(tmp) / "slot"
            build_split(chinook_db(), default_pairs_path(), split, BuildOptions(style="slot"))
            derived = Path(tmp) / "derived"
            derive_all(split, derived, sorted(only & {"gta", "toolassess", "teval"}))
        # "cold" = an empty embedding cache (a fresh folder), not the user's ~/.cache/benchsmith/embeddings
        os.environ["BENCHSMITH_CACHE"] = str(Path(tmp) / "cache")
        for name in ("gta", "toolassess"):
            if name in only:
                bench(name, derived / name, replicate=10)
        if "teval" in only:
            teval_run(derived / "teval", n_cases)


def teval_run(derived: Path, n_cases: int) -> None:
    b = get_benchmark("teval")
    base = b.load(derived)
    cases = [c.model_copy(update={"id": f"{c.id}~{i}"}) for i in range(-(-n_cases // len(base))) for c in base][
        :n_cases
    ]
    preds = {c.id: b.gold_prediction(c) for c in cases}
    for label, mode in (
        ("cold embedding cache", "strict"),
        ("warm embedding cache", "strict"),
        ("warm embedding cache", "official"),
    ):
        t0 = time.perf_counter()
        run = score_cases(b, cases, preds, mode)  # type: ignore[arg-type]
        dt = time.perf_counter() - t0
        print(
            f"teval {mode}: {len(cases)} cases ({len(base)} distinct) {label}: {dt:.1f}s, "
            f"{len(cases) / dt:.0f} cases/s, overall {run.scores.get('overall')}"
        )


if __name__ == "__main__":
    main()
