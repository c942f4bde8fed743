"""Scoring speed against the official evaluators: ACEBench's ``eval_main.py`` and BFCL's
``bfcl evaluate`` beside ``benchsmith eval score --mode official`` on the same prediction files.

    python perf/official_speed.py [--shared-data PATH] [--acebench-repo PATH --acebench-python PATH]
                                  [--bfcl-python PATH] [--benchsmith-python PATH] [--rounds 3]
                                  [--only acebench,bfcl,help] [--work DIR]

Inputs (prepared once, before any timing): the shared public data (``--shared-data``, default
$BENCHSMITH_SHARED_DATA: ``acebench_en/`` and ``bfcl_v4/``), one seeded prediction set per
benchmark from ``perf/parity/acebench_predictions.py`` and ``perf/parity/bfcl_predictions.py``
(``--rounds 1``; gold plus realistic mistakes; BFCL in the prompt format), and the same
predictions converted to each official evaluator's result-file layout:

- ACEBench: ``result_all/result_en/<model>/data_<category>_result.json`` (lines ``{id, result}``,
  agent lines ``{id, result: end state, process: calls}``, in the data file's order, which the
  evaluator compares by position), run in a work folder whose ``data_all/data_en`` links to the
  shared data, as ``eval_main.py --language en --model <model> --category <every category
  in the data>``;
- BFCL: ``<work>/result/<model>/BFCL_v4_<category>_result.json`` for a prompt-format model
  (``gpt-5-mini-2025-08-07``: its handler decodes with BFCL's default prompt decoder, as
  ``--bfcl-format prompt`` does), run as ``bfcl evaluate --model <model> --test-category <every
  category in the data> --result-dir ... --score-dir ...`` with BFCL_PROJECT_ROOT in the work
  folder. bfcl-eval reads its own packaged copy of the data: the script checks it equals the
  shared one.

Each measurement is one child process run alone; CPU is its user + sys time and peak RSS its
``ru_maxrss``, both from ``os.wait4`` (whole process: start-up and imports included; reported by
a small launcher process, as a child's ``ru_maxrss`` would otherwise include this script's RSS at
fork). Each side runs once as a warm-up (so both have a bytecode cache), then ``--rounds``
rounds alternating official, benchsmith, official, ... (machine speed drifts); the table shows medians, the
benchsmith/official ratios and the targets (issue: CPU at most 0.33x the official for ACEBench,
0.2x for BFCL, at no more memory; ``benchsmith --help`` under 0.15 s CPU). A sanity line per
benchmark shows both sides' accuracy on the set (ACEBench: the Summary; BFCL: correct / total
over the categories) and how many categories agree. A side that is not set up is skipped with
one line. MB here is MiB.

benchsmith runs as ``<--benchsmith-python> -m benchsmith.cli`` (default: this Python), with the
environment as given, so PYTHONPATH may point at another checkout's code; the first line
printed says where benchsmith was imported from.

Setting up the official evaluators, in scratch folders outside the repo (written against ACEBench
e6db74b, the shared data's commit, and bfcl-eval 2026.3.23, the release of gorilla 6ea5797):

    # ACEBench: eval_main.py needs only pandas and openpyxl (its other requirements are for inference)
    git clone https://github.com/ACEBench/ACEBench ~/.cache/benchsmith/official/ACEBench
    git -C ~/.cache/benchsmith/official/ACEBench checkout e6db74b
    python3.11 -m venv ~/.cache/benchsmith/official/acebench-venv
    ~/.cache/benchsmith/official/acebench-venv/bin/pip install pandas==2.2.3 openpyxl==3.1.5
    # BFCL: qwen-agent (a bfcl-eval dependency) imports soundfile without declaring it; pin torch to
    # a CPU build where the index has one (here torch==2.13.0+cpu) or pip pulls the CUDA build
    python3.11 -m venv ~/.cache/benchsmith/official/bfcl-venv
    ~/.cache/benchsmith/official/bfcl-venv/bin/pip install bfcl-eval==2026.3.23 soundfile
    # then
    python perf/official_speed.py --shared-data PATH --acebench-repo ~/.cache/benchsmith/official/ACEBench \\
        --acebench-python ~/.cache/benchsmith/official/acebench-venv/bin/python \\
        --bfcl-python ~/.cache/benchsmith/official/bfcl-venv/bin/python

The three official paths can also come from BENCHSMITH_ACEBENCH_REPO, BENCHSMITH_ACEBENCH_PYTHON
and BENCHSMITH_BFCL_PYTHON. Figures are noisy on a shared machine: run on a quiet one.

``--instructions`` adds one more line per benchmark: both sides run once more under valgrind's
callgrind and the line gives the instructions each executed and their ratio. Counted
instructions do not drift with the machine's speed (two runs of one side agree to about 0.1%),
so the line shows whether a change moved the work done when CPU seconds are too noisy to tell;
the target stays the one on CPU time (a CPU second is not a fixed number of instructions: C
code in pandas and numpy runs more instructions per cycle than the interpreter). Needs valgrind
on PATH; the official ACEBench side takes about a minute under it.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
ACE_MODEL = "speedcheck"  # any name without "FC" (an FC name switches eval_main to the FC decoder)
BFCL_MODEL = "gpt-5-mini-2025-08-07"  # a prompt-format model of bfcl-eval 2026.3.23
CPU_TARGETS = {"acebench": 0.33, "bfcl": 0.2}
FAMILY_ORDER = {"normal": 0, "special": 1, "agent": 2}
HELP_TARGET_S = 0.15


# ---- one measurement ----------------------------------------------------------------------------
@dataclass
class Usage:
    cpu_s: float
    rss_mb: float


@dataclass
class Side:
    label: str
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    reset: Callable[[], None] = lambda: None  # clears the outputs of the previous run (not timed)
    runs: list[Usage] = field(default_factory=list)

    def median(self) -> Usage:
        return Usage(statistics.median(u.cpu_s for u in self.runs), statistics.median(u.rss_mb for u in self.runs))


# A child's ru_maxrss starts from its parent's RSS at fork (Linux keeps the high-water mark across exec), and this
# process holds the predictions and data: each command is started by a small launcher, whose RSS (~11 MB, below a
# bare Python's) is then the floor, and which reports the command's usage from os.wait4.
LAUNCHER = """
import json, os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
with open(sys.argv[1], "w") as f:
    json.dump([proc.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss], f)
"""


def measure(side: Side, log: Path) -> Usage:
    """Run the side's command alone; its CPU time (user + sys) and peak RSS from the kernel."""
    side.reset()
    usage_file = log.with_suffix(".usage.json")
    usage_file.unlink(missing_ok=True)
    with log.open("wb") as out:
        launcher = [sys.executable, "-I", "-S", "-c", LAUNCHER, str(usage_file), *side.argv]
        subprocess.run(
            launcher, cwd=side.cwd, env=side.env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    rc, cpu_s, maxrss = json.loads(usage_file.read_text()) if usage_file.exists() else (-1, 0.0, 0)
    if rc != 0:
        tail = log.read_text("utf-8", errors="replace")[-2000:]
        sys.exit(f"{side.label} exited with {rc}: {' '.join(side.argv)}\n{tail}")
    kib = maxrss / (1024 if sys.platform == "darwin" else 1)  # Linux: KiB; macOS: bytes
    return Usage(cpu_s, kib / 1024)


def instructions(side: Side, log: Path) -> int:
    """Instructions the side's command executes (valgrind's callgrind, its own count; nothing timed)."""
    side.reset()
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *side.argv]
    proc = subprocess.run(argv, cwd=side.cwd, env=side.env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    log.write_text(proc.stdout + proc.stderr, "utf-8")
    counted = [line.split()[-1] for line in proc.stderr.splitlines() if "Collected :" in line]
    if proc.returncode != 0 or not counted:
        sys.exit(f"{side.label} under valgrind exited with {proc.returncode}: see {log}")
    return int(counted[-1])


def alternate(sides: list[Side], rounds: int, logs: Path) -> None:
    """One warm-up run of each side (bytecode caches), then the rounds, sides alternating."""
    for side in sides:
        measure(side, logs / f"{side.label}.warmup.log")
    for r in range(rounds):
        for side in sides:
            side.runs.append(measure(side, logs / f"{side.label}.{r}.log"))


def child_env(drop_pythonpath: bool = False, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # both sides are timed with a bytecode cache
    if drop_pythonpath:
        env.pop("PYTHONPATH", None)  # PYTHONPATH is for benchsmith's code; the official sides bring their own
    env.update(extra)
    return env


def run(argv: list[str], env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(argv)}\n{proc.stdout[-1000:]}{proc.stderr[-2000:]}")
    return proc.stdout


def rmtree(*paths: Path) -> Callable[[], None]:
    def reset() -> None:
        for p in paths:
            shutil.rmtree(p, ignore_errors=True)

    return reset


# ---- inputs -------------------------------------------------------------------------------------
def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def generate(bs_python: str, script: str, data: Path, out: Path) -> None:
    run([bs_python, str(REPO / "perf" / "parity" / script), "--data", str(data), "--out", str(out), "--rounds", "1"])


def data_files(folder: Path, prefix: str) -> dict[str, Path]:
    """category -> data file, for the files directly in the folder (answers live in a subfolder)."""
    return {p.stem[len(prefix) :]: p for p in sorted(folder.glob(f"{prefix}*.json"))}


def ace_result_files(data: Path, predictions: Path, results: Path) -> list[str]:
    """The predictions as eval_main.py's result files, in each data file's order; the categories."""
    preds = {r["id"]: r["result"] for r in read_jsonl(predictions)}
    # families in the order of eval_main.py's `--category test_all`
    categories = dict(
        sorted(data_files(data, "data_").items(), key=lambda kv: FAMILY_ORDER.get(kv[0].split("_")[0], 3))
    )
    for cat, path in categories.items():
        rows = []
        for record in read_jsonl(path):
            result = preds.get(record["id"], "")
            if cat.startswith("agent"):
                # benchsmith reads the inference record {result, process} as JSON text; the official file has its fields
                value = json.loads(result) if result else {}
                value = value if isinstance(value, dict) else {"process": value}
                rows.append(
                    {"id": record["id"], "result": value.get("result", []), "process": value.get("process", [])}
                )
            else:
                rows.append({"id": record["id"], "result": result})
        write_jsonl(results / f"data_{cat}_result.json", rows)
    return list(categories)


def bfcl_result_files(data: Path, predictions: Path, results: Path) -> list[str]:
    preds = {r["id"]: r["result"] for r in read_jsonl(predictions)}
    categories = data_files(data, "BFCL_v4_")
    for cat, path in categories.items():
        rows = [{"id": r["id"], "result": preds.get(r["id"], "")} for r in read_jsonl(path)]
        write_jsonl(results / f"BFCL_v4_{cat}_result.json", rows)
    return list(categories)


def bfcl_data_check(bfcl_python: str, shared: Path) -> str:
    """bfcl evaluate reads the data packaged with bfcl-eval: say whether it is the shared data."""
    code = "import bfcl_eval, os; print(os.path.join(os.path.dirname(bfcl_eval.__file__), 'data'))"
    packaged = Path(run([bfcl_python, "-c", code], child_env(drop_pythonpath=True)).strip())
    files = sorted(p.relative_to(shared) for p in shared.rglob("*.json"))
    differ = [str(f) for f in files if not (packaged / f).is_file() or not filecmp.cmp(shared / f, packaged / f, False)]
    if differ:
        return f"WARNING: bfcl-eval's packaged data differs from the shared data in {', '.join(differ)}"
    return f"bfcl-eval's packaged data equals the shared data ({len(files)} files)"


# ---- accuracy sanity ----------------------------------------------------------------------------
def bs_scores(out: Path) -> dict[str, Any]:
    return json.loads((out / "scores.json").read_text("utf-8"))


def first_line(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        return json.loads(f.readline())


def ace_accuracy(bs_out: Path, score_dir: Path, acebench_python: str, categories: list[str]) -> str:
    bs = bs_scores(bs_out)
    # the official Summary is only in its result.xlsx: read it with the official side's own openpyxl
    code = (
        "import sys, openpyxl; rows = list(openpyxl.load_workbook(sys.argv[1]).active.values); "
        "print([dict(zip(rows[0], r)) for r in rows[1:] if r[0] == sys.argv[2]][0]['Summary'])"
    )
    summary = run([acebench_python, "-c", code, str(score_dir / "result.xlsx"), ACE_MODEL]).strip()
    same = []
    for cat in categories:
        head = first_line(score_dir / ACE_MODEL / f"data_{cat}_score.json")
        official = head.get("accuracy", head.get("end_to_end_accuracy"))
        mine = bs["categories"].get(cat, {}).get("accuracy")
        if mine is not None and round(mine, 3) == round(official, 3):
            same.append(cat)
    differ = sorted(set(categories) - set(same))
    return (
        f"accuracy: official Summary {summary}, benchsmith summary {bs['summary']}; categories agreeing "
        f"(3 decimals) {len(same)}/{len(categories)}" + (f", differ: {', '.join(differ)}" if differ else "")
    )


def bfcl_accuracy(bs_out: Path, score_dir: Path, categories: list[str]) -> str:
    bs = bs_scores(bs_out)["categories"]
    found = {p.name[len("BFCL_v4_") : -len("_score.json")]: p for p in score_dir.rglob("BFCL_v4_*_score.json")}
    o_ok = o_n = b_ok = b_n = 0
    same, missing = [], []
    for cat in categories:
        if cat not in found:
            missing.append(cat)
            continue
        head = first_line(found[cat])
        o_ok, o_n = o_ok + head["correct_count"], o_n + head["total_count"]
        b_ok, b_n = b_ok + bs[cat]["correct"], b_n + bs[cat]["total"]
        if (head["correct_count"], head["total_count"]) == (bs[cat]["correct"], bs[cat]["total"]):
            same.append(cat)
    line = (
        f"accuracy (correct/total over the categories): official {o_ok}/{o_n} = {o_ok / max(o_n, 1):.4f}, "
        f"benchsmith {b_ok}/{b_n} = {b_ok / max(b_n, 1):.4f}; "
        f"categories with equal counts {len(same)}/{len(categories)}"
    )
    return line + (f"; NOT scored by the official evaluator: {', '.join(missing)}" if missing else "")


# ---- the benchmarks -----------------------------------------------------------------------------
def bs_side(bs_python: str, args: list[str], out: Path, work: Path) -> Side:
    argv = [bs_python, "-m", "benchsmith.cli", "eval", "score", *args, "--mode", "official", "--out", str(out)]
    return Side("benchsmith", argv, work, child_env(), rmtree(out))


def acebench(args: argparse.Namespace, data: Path, work: Path) -> tuple[list[Side], Callable[[], str]]:
    preds = work / "predictions"
    generate(args.benchsmith_python, "acebench_predictions.py", data, preds)
    bs_out = work / "benchsmith_out"
    bs = bs_side(
        args.benchsmith_python,
        ["--benchmark", "acebench", "--data", str(data), "--predictions", str(preds / "r0.jsonl")],
        bs_out,
        work,
    )
    if not (args.acebench_repo and args.acebench_python):
        print("ACEBench official: skipped (give --acebench-repo and --acebench-python; see the docstring)")
        return [bs], lambda: f"accuracy: benchsmith summary {bs_scores(bs_out)['summary']}"
    # eval_main.py reads and writes paths relative to its working folder (and writes ../result_excel)
    cwd = work / "official" / "run"
    categories = ace_result_files(data, preds / "r0.jsonl", cwd / "result_all" / "result_en" / ACE_MODEL)
    (cwd / "data_all").mkdir(parents=True, exist_ok=True)
    (cwd / "data_all" / "data_en").symlink_to(data.resolve(), target_is_directory=True)
    score_dir = cwd / "score_all" / "score_en"
    argv = [args.acebench_python, str(Path(args.acebench_repo) / "eval_main.py"), "--language", "en"]
    argv += ["--model", ACE_MODEL, "--category", *categories]

    def reset() -> None:
        rmtree(score_dir, work / "official" / "result_excel")()
        # agent_eval writes its process file before anything creates the model's folder (a crash if an agent
        # category came first)
        (score_dir / ACE_MODEL).mkdir(parents=True)

    official = Side("official", argv, cwd, child_env(drop_pythonpath=True), reset)
    return [official, bs], lambda: ace_accuracy(bs_out, score_dir, args.acebench_python, categories)


def bfcl(args: argparse.Namespace, data: Path, work: Path) -> tuple[list[Side], Callable[[], str]]:
    preds = work / "predictions"
    generate(args.benchsmith_python, "bfcl_predictions.py", data, preds)
    bs_out = work / "benchsmith_out"
    bs_args = ["--benchmark", "bfcl", "--bfcl-format", "prompt", "--data", str(data)]
    bs = bs_side(args.benchsmith_python, [*bs_args, "--predictions", str(preds / "prompt_r0.jsonl")], bs_out, work)
    if not args.bfcl_python:
        print("BFCL official: skipped (give --bfcl-python; see the docstring)")
        return [bs], lambda: f"accuracy: benchsmith overall {bs_scores(bs_out)['summary']['overall']:.4f}"
    print(bfcl_data_check(args.bfcl_python, data))
    root = work / "official"
    categories = bfcl_result_files(data, preds / "prompt_r0.jsonl", root / "result" / BFCL_MODEL)
    bfcl_cli = Path(args.bfcl_python).with_name("bfcl")  # the console script `bfcl` of that venv
    entry = [str(bfcl_cli)] if bfcl_cli.is_file() else [args.bfcl_python, "-m", "bfcl_eval"]
    argv = [*entry, "evaluate", "--model", BFCL_MODEL, "--test-category", ",".join(categories)]
    argv += ["--result-dir", str(root / "result"), "--score-dir", str(root / "score")]
    # the model's handler builds an OpenAI client, which wants a key; evaluate sends no request
    env = child_env(drop_pythonpath=True, BFCL_PROJECT_ROOT=str(root), OPENAI_API_KEY="unused-no-request-is-made")
    official = Side("official", argv, root, env, rmtree(root / "score"))
    return [official, bs], lambda: bfcl_accuracy(bs_out, root / "score", categories)


# ---- printing -----------------------------------------------------------------------------------
def runs_text(side: Side) -> str:
    return " ".join(f"{u.cpu_s:.2f}" for u in side.runs)


def report_instructions(sides: list[Side], logs: Path) -> None:
    counts = [instructions(side, logs / f"{side.label}.callgrind.log") for side in sides]
    line = ", ".join(f"{side.label} {n / 1e9:.3f} G" for side, n in zip(sides, counts))
    ratio = f"; ratio {counts[1] / counts[0]:.3f}x benchsmith / official" if len(counts) == 2 else ""
    print(f"  instructions (valgrind, one run each): {line}{ratio}")


def report(title: str, sides: list[Side], target: float, sanity: str) -> None:
    print(f"\n{title}")
    print(f"  {'side':12s} {'CPU s':>7s} {'peak RSS MB':>12s}   CPU s per round")
    for side in sides:
        m = side.median()
        print(f"  {side.label:12s} {m.cpu_s:7.2f} {m.rss_mb:12.0f}   {runs_text(side)}")
    if len(sides) == 2:
        off, bs = sides[0].median(), sides[1].median()
        cpu, rss = bs.cpu_s / off.cpu_s, bs.rss_mb / off.rss_mb
        print(f"  {'ratio':12s} {cpu:6.2f}x {rss:11.2f}x   benchsmith / official")
        print(
            f"  {'target':12s} {'<=' + str(target) + 'x':>7s} {'<=1.00x':>12s}   "
            f"CPU {'PASS' if cpu <= target else 'MISS'}, memory {'PASS' if rss <= 1.0 else 'MISS'}"
        )
    print(f"  {sanity}")


def bs_origin(bs_python: str) -> str:
    code = "import sys, benchsmith.cli as c; print(c.__file__, sys.version.split()[0])"
    return run([bs_python, "-c", code], child_env()).strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared-data", default=os.environ.get("BENCHSMITH_SHARED_DATA"))
    ap.add_argument("--acebench-repo", default=os.environ.get("BENCHSMITH_ACEBENCH_REPO"), help="an ACEBench checkout")
    ap.add_argument(
        "--acebench-python", default=os.environ.get("BENCHSMITH_ACEBENCH_PYTHON"), help="with pandas, openpyxl"
    )
    ap.add_argument("--bfcl-python", default=os.environ.get("BENCHSMITH_BFCL_PYTHON"), help="with bfcl-eval")
    ap.add_argument("--benchsmith-python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="acebench,bfcl,help", help="comma-separated: acebench, bfcl, help")
    ap.add_argument("--work", type=Path, default=None, help="keep the scratch files here (default: a tempdir)")
    ap.add_argument(
        "--instructions", action="store_true", help="also count each side's instructions once under valgrind"
    )
    args = ap.parse_args()
    only = set(args.only.split(","))
    if args.instructions and shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind on PATH (apt install valgrind), or run without it")
    print(f"benchsmith: {bs_origin(args.benchsmith_python)}; {args.rounds} rounds, medians")
    with tempfile.TemporaryDirectory(prefix="official_speed_") as tmp:
        work = args.work or Path(tmp)
        if args.work and work.exists():
            shutil.rmtree(work)
        shared = Path(args.shared_data) if args.shared_data else None
        benches = (("acebench", "acebench_en", acebench, "ACEBench EN"), ("bfcl", "bfcl_v4", bfcl, "BFCL v4"))
        for name, sub, setup, title in benches:
            if name not in only:
                continue
            if shared is None or not (shared / sub).is_dir():
                print(f"{title}: skipped (no {sub}/ in the shared data folder; give --shared-data)")
                continue
            sides, sanity = setup(args, shared / sub, work / name)
            alternate(sides, args.rounds, work / name)
            report(
                f"{title} ({shared / sub}): eval score --mode official vs the official evaluator",
                sides,
                CPU_TARGETS[name],
                sanity(),
            )
            if args.instructions:
                report_instructions(sides, work / name)
        if "help" in only:
            # `-m benchsmith.cli` does what the `benchsmith` console script does (and honours PYTHONPATH)
            side = Side("benchsmith", [args.benchsmith_python, "-m", "benchsmith.cli", "--help"], work, child_env())
            work.mkdir(parents=True, exist_ok=True)
            alternate([side], args.rounds, work)
            m = side.median()
            print(
                f"\nbenchsmith --help: {m.cpu_s:.3f} s CPU (rounds {runs_text(side)}), peak RSS {m.rss_mb:.0f} MB; "
                f"target < {HELP_TARGET_S} s: {'PASS' if m.cpu_s < HELP_TARGET_S else 'MISS'}"
            )


if __name__ == "__main__":
    main()
