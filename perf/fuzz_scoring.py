"""Slowest record and peak extra memory of every benchmark scorer on fuzzed model outputs.

For each scorer of every registered benchmark (the cases and the output generators of
tests/fuzz_outputs.py, the same as tests/test_fuzz_scorers.py) and each mode, this scores N
fuzzed outputs (default 10,000) record by record through ``score_cases`` with the default
per-record budget and prints the slowest record (its time, the generator and the output size),
the mean time, how many records were over budget, and the peak extra memory: the peak resident
set size while scoring that scorer and mode (``VmHWM`` after resetting it through
``/proc/self/clear_refs``) minus the resident set size before. The embedding model is loaded
before any timing (model loading is not a record's cost). ``--readers`` also times the JSONL
readers and the reply parser on fuzzed input.

Targets (issue 12): under 1 s per record, under 200 MB extra.

    python perf/fuzz_scoring.py [--n 10000] [--only teval,bfcl:ast] [--seed 0] [--readers 300]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzz_outputs import KINDS, Group, fuzz_output, scorer_groups  # noqa: E402

from benchsmith.eval import score_cases  # noqa: E402

MODES = ("strict", "official")
TARGET_SECONDS, TARGET_MB = 1.0, 200


def _status_kb(key: str) -> int | None:
    try:
        m = re.search(rf"^{key}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(m.group(1)) if m else None


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def measure(group: Group, mode: str, n: int, seed: int) -> dict:
    exact = _reset_peak()
    base_kb = _status_kb("VmRSS") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    slowest, total, worst = 0.0, 0.0, ("", 0, "")
    errors: Counter[str] = Counter()
    crash = ""
    for i in range(n):
        rnd = random.Random(f"{seed}/{group.name}/{i}")
        case, output, kind = fuzz_output(rnd, group)
        start = time.perf_counter()
        (record,) = score_cases(group.bench, [case], {case.id: output}, mode).records  # type: ignore[arg-type]
        spent = time.perf_counter() - start
        total += spent
        errors[record.error_type or "ok"] += 1
        if record.error_type == "scorer_error" and not crash:
            crash = f"{kind} output #{i}: {record.reason[:150]}"
        if spent > slowest:
            slowest, worst = spent, (kind, len(output), record.error_type or "ok")
    peak_kb = (_status_kb("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) or 0
    return {
        "slowest": slowest,
        "worst": worst,
        "mean": total / n,
        "extra_mb": max(0, peak_kb - (base_kb or 0)) / 1024,
        "over_budget": errors["over_budget"],
        "scorer_error": errors["scorer_error"],
        "crash": crash,
        "memory": "VmHWM" if exact else "ru_maxrss",
    }


class _Stopped(Exception):
    pass


def _stop(signum: int, frame: object) -> None:
    raise _Stopped


def _read_all(preds: Any) -> None:
    """Every prediction of a :class:`~benchsmith.eval.scoring.Predictions` read back, then the file closed."""
    with preds:
        for rid in preds.offsets:
            preds.get(rid)


def readers(n: int, seed: int, limit: float) -> None:
    """The reply parser and the JSONL readers on fuzzed text: the slowest call of each (a call
    still running after ``limit`` seconds is stopped and reported as such)."""
    import signal

    from benchsmith.eval.scoring import Predictions, read_json_lines
    from benchsmith.models import ParseError, read_json_reply
    from benchsmith.schemas import CheckResult, UserError, iter_jsonl_lenient

    seed_reply = '{"tool_calls": [{"name": "f", "arguments": {"a": 1}}]}'
    slow: dict[str, tuple[float, str, int, bool]] = {}
    previous = signal.signal(signal.SIGALRM, _stop)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "f.jsonl"
            for i in range(n):
                rnd = random.Random(f"{seed}/readers/{i}")
                kind = rnd.choice(sorted(KINDS))
                text = KINDS[kind](rnd, seed_reply)
                path.write_bytes(
                    "\n".join([text, '{"id": "a", "result": ' + text + "}"]).encode("utf-8", "surrogatepass")
                )
                for name, call in (
                    ("read_json_reply", lambda text=text: read_json_reply(text)),
                    ("Predictions", lambda: _read_all(Predictions(path))),
                    ("read_json_lines", lambda: read_json_lines(path, fix="-")),
                    ("iter_jsonl_lenient", lambda: iter_jsonl_lenient(path, CheckResult)),
                ):
                    stopped = False
                    start = time.perf_counter()
                    signal.setitimer(signal.ITIMER_REAL, limit)
                    try:
                        call()
                    except (ParseError, UserError):
                        pass
                    except _Stopped:
                        stopped = True
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                    spent = time.perf_counter() - start
                    if spent > slow.get(name, (0.0, "", 0, False))[0]:
                        slow[name] = (spent, kind, len(text), stopped)
    finally:
        signal.signal(signal.SIGALRM, previous)
    for name, (spent, kind, size, stopped) in sorted(slow.items()):
        note = f" - stopped after {limit:.0f} s" if stopped else ""
        print(f"{name:24s} slowest {spent * 1000:9.1f} ms  ({kind}, {size:,} chars){note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="fuzzed outputs per scorer and mode")
    ap.add_argument("--only", default="", help="comma-separated prefixes of scorer names (bfcl, teval:plan, ...)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--readers",
        type=int,
        default=0,
        metavar="N",
        help="also time the JSONL readers and the reply parser on N fuzzed inputs",
    )
    ap.add_argument(
        "--reader-limit",
        type=float,
        default=30.0,
        metavar="S",
        help="stop a reader call after S seconds (a safety net: none should come near it)",
    )
    args = ap.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("BENCHSMITH_CACHE", str(Path(tmp) / "cache"))  # fuzzed text stays out of ~/.cache
        groups = scorer_groups(Path(tmp))
        wanted = [
            g
            for name, g in sorted(groups.items())
            if not args.only or any(name.startswith(p) for p in args.only.split(","))
        ]
        for g in wanted:  # load the embedding model and the libraries before any timing
            for mode in MODES:
                score_cases(g.bench, g.cases[:1], {c.id: g.bench.gold_prediction(c) for c in g.cases[:1]}, mode)
        print(f"{len(wanted)} scorers x {len(MODES)} modes x {args.n:,} fuzzed outputs (seed {args.seed})")
        print(
            f"{'scorer':26s} {'mode':8s} {'slowest':>9s} {'(generator, size, verdict)':44s} {'mean':>8s} "
            f"{'over budget':>11s} {'extra MB':>8s}"
        )
        worst_s, worst_mb, crashes = 0.0, 0.0, 0
        for g in wanted:
            for mode in MODES:
                r = measure(g, mode, args.n, args.seed)
                kind, size, verdict = r["worst"]
                print(
                    f"{g.name:26s} {mode:8s} {r['slowest'] * 1000:7.1f}ms {f'({kind}, {size:,}, {verdict})':44s} "
                    f"{r['mean'] * 1000:6.2f}ms {r['over_budget']:11d} {r['extra_mb']:8.1f}",
                    flush=True,
                )
                if r["scorer_error"]:
                    print(f"    {r['scorer_error']} scorer error(s), first: {r['crash']}")
                worst_s, worst_mb = max(worst_s, r["slowest"]), max(worst_mb, r["extra_mb"])
                crashes += r["scorer_error"]
        print(
            f"slowest record {worst_s:.3f} s (target < {TARGET_SECONDS} s); peak extra memory {worst_mb:.0f} MB "
            f"(target < {TARGET_MB} MB; {r['memory']}); scorer errors {crashes}"
        )
    if args.readers:
        readers(args.readers, args.seed, args.reader_limit)
    print(f"total time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
