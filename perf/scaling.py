"""Peak memory and wall time of ``nl2api build`` and ``eval score`` as the input grows, this tree
against the previous release, in one run.

Each measurement is one ``python -m benchsmith.cli ...`` child process, run alone (never in
parallel); its peak RSS is the child's own ``ru_maxrss`` from ``os.wait4`` and its wall time
includes interpreter start-up and imports. Inputs at Nx (prepared once per N, outside the timed
part, with this tree's code):

- build: the embedded default pairs over the Chinook database repeated N times; copy k > 0 gets
  id ``<id>~k`` and question ``<question> (copy k)`` (so its sample's content id differs too),
  built with ``--style slot`` (``--style``) and ``--workers 1``;
- score: the default pairs built as a SLOT split, its samples repeated N times (copy k > 0 with
  id ``<id>~k``), ACEBench cases derived from it (``eval derive --only acebench_special``;
  ``--benchmark gta|teval|toolassess`` picks another derived benchmark), scored with
  ``eval score --mode strict`` against the gold predictions with a seeded fraction (25%) altered
  (a value changed, the answer cut in half, or emptied) so that scoring does real work.

"previous" is the ``--baseline`` ref (default: tag v0.1.0, else commit 0c43f6a), extracted once with
``git archive`` into ~/.cache/benchsmith/perf/baseline-<sha>/src; "current" is the working tree this
script lives in. Both run with this Python (the project's venv) with their own code first on the
import path: a shim folder whose ``benchsmith/<package>`` entries are symlinks to the top-level
folders ``pyproject.toml`` maps onto the namespace (``[tool.setuptools.package-dir]``), set as
PYTHONPATH. A check child prints where each package was imported from; the script refuses to run
if either version does not import its own code (the editable install's finder must not win).

    python perf/scaling.py [--sizes 1,4,16,64] [--tasks build,score] [--no-baseline]
                           [--baseline REF] [--benchmark acebench] [--style slot]
                           [--work DIR] [--json PATH]

Prints one table (task, N, input size; previous wall s / peak RSS MB; current wall s / peak RSS MB;
current/previous ratios), each version's peak RSS growth from the smallest to the largest size,
whether the two versions' outputs are identical at each size (samples.jsonl, tools.json,
toolset.json, report.json; scores.json, records.jsonl; timestamps and report.json's seconds
aside, and for ``--style rest`` the endpoints' descriptions and the samples' content ids, which
this tree writes differently by design; else the first difference), and the checks against the
targets (issue 16):

- peak RSS grows by less than 20% from 1x to 64x (each task, current tree);
- scoring's peak RSS at 64x is at most its 1x peak plus 1 KB per record at 64x (issue 28: scoring
  keeps a list of slim typed rows, one per record, so some growth per record is by design);
- build >= 500 pairs/s per process on the default pairs: pairs / wall time of the current
  largest build (wall includes start-up, so this understates the rate) decides; also printed:
  pairs / the ``seconds`` the build reports itself in report.json, and pairs / the child's CPU
  time (user + sys; less sensitive to a busy machine than wall time).

MB here is MiB (KiB / 1024). Figures are noisy on a shared machine: run on a quiet one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CACHE = Path.home() / ".cache" / "benchsmith" / "perf"
DEFAULT_BASELINE = ("v0.1.0", "0c43f6a")
RSS_GROWTH_TARGET = 0.20
RSS_KB_PER_RECORD = 1.0  # scoring: at most this much more peak RSS per record (issue 28)
BUILD_RATE_TARGET = 500.0
ALTERED_FRACTION = 0.25


# ---- the two versions ---------------------------------------------------------------------------
@dataclass
class Version:
    label: str  # "previous" | "current"
    code_root: Path  # the folder holding cli/, eval/, ... and pyproject.toml
    shim: Path  # PYTHONPATH for its children
    describe: str  # what it is, for the printout
    imported: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        # BENCHSMITH_* variables would fill CLI options (or load plug-ins) in the children: dropped
        env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHSMITH_")}
        env["PYTHONPATH"] = str(self.shim)
        return env


def package_dirs(code_root: Path) -> dict[str, str]:
    """``{"cli": "cli", "eval": "eval", ...}``: the namespace's packages and their folders."""
    config = tomllib.loads((code_root / "pyproject.toml").read_text("utf-8"))
    mapping = config["tool"]["setuptools"]["package-dir"]
    out = {}
    for name, folder in mapping.items():
        if name.startswith("benchsmith.") and name.count(".") == 1:
            out[name.split(".", 1)[1]] = folder
    if not out:
        sys.exit(f"{code_root}/pyproject.toml maps no benchsmith.<package> folder ([tool.setuptools.package-dir])")
    return out


def make_shim(shim: Path, code_root: Path, relative: bool) -> None:
    """``shim/benchsmith/<package>`` -> the package's folder in ``code_root`` (no __init__.py: a
    namespace portion, like the installed one). Rebuilt when a link is missing or points elsewhere."""
    ns = shim / "benchsmith"
    wanted = {}
    for name, folder in package_dirs(code_root).items():
        target = code_root / folder
        wanted[name] = Path(os.path.relpath(target, ns)) if relative else target
    if (
        ns.is_dir()
        and all((ns / n).is_symlink() and Path(os.readlink(ns / n)) == t for n, t in wanted.items())
        and {p.name for p in ns.iterdir()} == set(wanted)
    ):
        return
    tmp = shim.parent / f".{shim.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "benchsmith").mkdir(parents=True)
    for name, target in wanted.items():
        # the link is made from tmp/benchsmith but used from shim/benchsmith: same depth, same parent
        os.symlink(target, tmp / "benchsmith" / name, target_is_directory=True)
    shutil.rmtree(shim, ignore_errors=True)
    tmp.replace(shim)


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout.strip()


def resolve_ref(ref: str | None) -> tuple[str, str]:
    """``(ref as named, full commit sha)``; the default is tag v0.1.0 if present, else 0c43f6a."""
    candidates = [ref] if ref else list(DEFAULT_BASELINE)
    for cand in candidates:
        try:
            return cand, git("rev-parse", "--verify", "-q", f"{cand}^{{commit}}")
        except subprocess.CalledProcessError:
            continue
    sys.exit(f"baseline {' / '.join(candidates)} is not a commit of {REPO}: pass --baseline REF")


def materialize_baseline(ref: str | None) -> Version:
    """The baseline's tree extracted once (``git archive``) under the cache, with its shim."""
    name, sha = resolve_ref(ref)
    home = CACHE / f"baseline-{sha[:12]}"
    src = home / "src"
    if not (home / ".complete").is_file():
        home.mkdir(parents=True, exist_ok=True)
        tmp = home / f".src.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        archive = subprocess.Popen(["git", "-C", str(REPO), "archive", sha], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(tmp)], stdin=archive.stdout, check=True)
        archive.stdout.close()  # type: ignore[union-attr]
        if archive.wait() != 0:
            sys.exit(f"git archive {sha} failed")
        shutil.rmtree(src, ignore_errors=True)
        tmp.replace(src)
        (home / ".complete").write_text(f"{name} {sha}\n", "utf-8")
    make_shim(home / "shim", src, relative=True)
    return Version("previous", src, home / "shim", f"{name} = {sha[:12]} ({src})")


def current_version(work: Path) -> Version:
    try:
        head = git("rev-parse", "--short=12", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (subprocess.CalledProcessError, FileNotFoundError):
        head, dirty = "?", False
    make_shim(work / "shim-current", REPO, relative=False)
    return Version(
        "current",
        REPO,
        work / "shim-current",
        f"working tree {REPO} (HEAD {head}{', with uncommitted changes' if dirty else ''})",
    )


CHECK = """
import importlib, json, sys
names = sys.argv[1].split(",")
out = {}
for n in names + ["construction.nl2api", "eval.acebench"]:
    m = importlib.import_module("benchsmith." + n)
    out[n] = m.__file__
import benchsmith
out["benchsmith.__path__"] = list(benchsmith.__path__)
print(json.dumps(out))
"""


def verify_imports(v: Version) -> None:
    """Refuse to go on unless a child with ``v``'s environment imports every package from ``v``'s code."""
    names = sorted(package_dirs(v.code_root))
    proc = subprocess.run(
        [sys.executable, "-c", CHECK, ",".join(names)], env=v.env(), cwd=v.shim, capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.exit(f"{v.label}: the import check child failed:\n{proc.stderr[-2000:]}")
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    root = v.code_root.resolve()
    wrong = {
        n: f
        for n, f in found.items()
        if n != "benchsmith.__path__" and not (f and Path(f).resolve().is_relative_to(root))
    }
    if wrong:
        sys.exit(
            f"{v.label} ({v.describe}) does not import its own code; refusing to run:\n"
            + "\n".join(f"  benchsmith.{n}: {f}" for n, f in wrong.items())
        )
    v.imported = found


# ---- inputs -------------------------------------------------------------------------------------
def prepare(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs in a child with the current tree's shim (``--_prepare``): writes the Nx inputs."""
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db, default_pairs_path
    from benchsmith.eval import derive_all, get_benchmark
    from benchsmith.eval.derive import DERIVED_BENCHMARK

    inputs = Path(spec["inputs"])
    inputs.mkdir(parents=True, exist_ok=True)
    pairs_path, db = Path(default_pairs_path()), Path(chinook_db())
    out: dict[str, Any] = {"db": str(db), "pairs": str(pairs_path), "build": {}, "score": {}}
    lines = [ln for ln in pairs_path.read_text("utf-8").splitlines() if ln.strip()]
    if "build" in spec["tasks"]:
        rows = [json.loads(ln) for ln in lines]
        for n in spec["sizes"]:
            path = inputs / f"pairs-{n}x.jsonl"
            with path.open("w", encoding="utf-8") as f:
                for k in range(n):
                    for i, row in enumerate(rows, 1):
                        if k == 0:  # 1x is the default pairs file itself, byte for byte
                            f.write(lines[i - 1] + "\n")
                            continue
                        pid = row.get("id") or f"line-{i}"
                        f.write(
                            json.dumps(
                                {**row, "id": f"{pid}~{k}", "question": f"{row['question']} (copy {k})"},
                                ensure_ascii=False,
                            )
                            + "\n"
                        )
            out["build"][str(n)] = {"pairs": str(path), "size": n * len(rows)}
    if "score" in spec["tasks"]:
        benchmark = spec["benchmark"]
        derivers = [d for d, b in DERIVED_BENCHMARK.items() if b == benchmark]
        if not derivers:
            raise SystemExit(
                f"no deriver makes {benchmark} cases; choose from {sorted(set(DERIVED_BENCHMARK.values()))}"
            )
        deriver = derivers[0]
        split1 = inputs / "split-slot-default"
        shutil.rmtree(split1, ignore_errors=True)  # never a split left by an older tree in --work
        build_split(db, pairs_path, split1, BuildOptions(style="slot"))
        sample_lines = [ln for ln in (split1 / "samples.jsonl").read_text("utf-8").splitlines() if ln.strip()]
        b = get_benchmark(benchmark)
        for n in spec["sizes"]:
            split = inputs / f"split-slot-default-{n}x"
            if split.exists():
                shutil.rmtree(split)
            split.mkdir()
            for p in split1.iterdir():
                if p.is_file() and p.name != "samples.jsonl" and not p.name.startswith("."):
                    shutil.copyfile(p, split / p.name)
            with (split / "samples.jsonl").open("w", encoding="utf-8") as f:
                for k in range(n):
                    for ln in sample_lines:
                        if k == 0:
                            f.write(ln + "\n")
                        else:
                            s = json.loads(ln)
                            s["id"] = f"{s['id']}~{k}"
                            f.write(json.dumps(s, ensure_ascii=False) + "\n")
            derived = inputs / f"derived-{n}x"
            derive_all(split, derived, [deriver], seed=0)
            data = derived / deriver
            cases = b.load(data)
            rng = random.Random(f"{spec['seed']}:{n}")
            altered = 0
            preds = inputs / f"predictions-{benchmark}-{n}x.jsonl"
            with preds.open("w", encoding="utf-8") as f:
                for case in cases:
                    text = b.gold_prediction(case)
                    if rng.random() < spec["fraction"]:
                        text = _alter(text, altered % 3)
                        altered += 1
                    f.write(json.dumps({"id": case.id, "result": text}, ensure_ascii=False) + "\n")
            shutil.rmtree(split)  # only the derived cases are scored
            out["score"][str(n)] = {
                "data": str(data),
                "predictions": str(preds),
                "size": len(cases),
                "altered": altered,
                "deriver": deriver,
            }
    return out


def _alter(gold: str, kind: int) -> str:
    """A wrong prediction: the first number (else quoted value) changed, the text cut in half, or empty."""
    if kind == 0:
        changed = re.sub(r"\d+", lambda m: str(int(m.group()) + 1), gold, count=1)
        if changed == gold:
            changed = re.sub(r"'([^']*)'", r"'\1x'", gold, count=1)
        return changed if changed != gold else gold + " (changed)"
    return gold[: len(gold) // 2] if kind == 1 else ""


def run_prepare(current: Version, inputs: Path, args: argparse.Namespace) -> dict[str, Any]:
    spec = {
        "inputs": str(inputs),
        "sizes": args.sizes,
        "tasks": args.tasks,
        "benchmark": args.benchmark,
        "seed": args.seed,
        "fraction": ALTERED_FRACTION,
    }
    inputs.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--_prepare", json.dumps(spec)],
        env=current.env(),
        cwd=inputs,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        sys.exit(f"preparing the inputs failed:\n{proc.stderr[-3000:]}")
    prepared = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"inputs prepared in {time.perf_counter() - t0:.1f} s (not timed below) in {inputs}")
    return prepared


# ---- one measurement ----------------------------------------------------------------------------
def measure(v: Version, argv: list[str], out: Path, logs: Path) -> dict[str, Any]:
    """Run ``python -m benchsmith.cli *argv`` alone; its wall time and its own peak RSS."""
    if out.exists():
        shutil.rmtree(out)  # a leftover build folder would resume from its journal
    out.parent.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    stem = f"{v.label}-{out.name}"
    with (logs / f"{stem}.out").open("wb") as so, (logs / f"{stem}.err").open("wb") as se:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchsmith.cli", *argv],
            env=v.env(),
            cwd=logs,
            stdout=so,
            stderr=se,
            stdin=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    proc.returncode = rc  # reaped here, not by Popen
    kib = usage.ru_maxrss / (1024 if sys.platform == "darwin" else 1)  # Linux: KiB; macOS: bytes
    result: dict[str, Any] = {
        "wall_s": round(wall, 3),
        "peak_rss_mb": round(kib / 1024, 1),
        "exit": rc,
        "user_s": round(usage.ru_utime, 3),
        "sys_s": round(usage.ru_stime, 3),
    }
    if rc != 0:
        result["error"] = (logs / f"{stem}.err").read_text("utf-8", errors="replace")[-1500:]
    return result


def build_argv(prepared: dict[str, Any], n: int, style: str, out: Path) -> list[str]:
    return [
        "nl2api",
        "build",
        "--db",
        prepared["db"],
        "--pairs",
        prepared["build"][str(n)]["pairs"],
        "--style",
        style,
        "--out",
        str(out),
        "--workers",
        "1",
    ]


def score_argv(prepared: dict[str, Any], n: int, benchmark: str, mode: str, out: Path) -> list[str]:
    s = prepared["score"][str(n)]
    return [
        "eval",
        "score",
        "--benchmark",
        benchmark,
        "--data",
        s["data"],
        "--predictions",
        s["predictions"],
        "--mode",
        mode,
        "--out",
        str(out),
    ]


def self_reported_seconds(out: Path) -> float | None:
    try:
        return float(json.loads((out / "report.json").read_text("utf-8"))["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# ---- comparing outputs --------------------------------------------------------------------------
TIMESTAMP = re.compile(r'"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"')
SECONDS = re.compile(r'("seconds"\s*:\s*)[-0-9.eE+]+')
COMPARED = {
    "build": ["samples.jsonl", "tools.json", "toolset.json", "endpoints.json", "report.json"],
    "score": ["scores.json", "records.jsonl"],
}


# REST endpoint descriptions state every step since issue 26 and the previous release's do not, so
# REST builds are compared without the endpoints' descriptions (they all begin "Returns ") and
# without the samples' content ids, which hash their tools' text
REST_DESCRIPTION = re.compile(r'"description": "Returns (?:[^"\\]|\\.)*"')
CONTENT_ID = re.compile(r'^\{"id": "bs-[0-9a-f]+"')


def _normal(line: str, rest: bool = False) -> str:
    line = SECONDS.sub(r"\1<s>", TIMESTAMP.sub('"<time>"', line.rstrip("\n")))
    if rest:
        line = CONTENT_ID.sub('{"id": "<id>"', REST_DESCRIPTION.sub('"description": "<endpoint description>"', line))
    return line


def compare(task: str, a: Path, b: Path, *, rest: bool = False) -> str:
    """ "identical" (timestamps and report.json's seconds aside; with ``rest``, endpoint
    descriptions and sample content ids aside), or the first difference; read line by line."""
    if not (a.is_dir() and b.is_dir()):
        return "not compared (a run left no output)"
    files_a = {p.name for p in a.iterdir() if not p.name.startswith(".")}
    files_b = {p.name for p in b.iterdir() if not p.name.startswith(".")}
    notes = []
    if files_a != files_b:
        notes.append(
            f"files only in previous: {sorted(files_a - files_b)}, only in current: {sorted(files_b - files_a)}"
        )
    for name in COMPARED[task]:
        pa, pb = a / name, b / name
        if not (pa.is_file() and pb.is_file()):
            continue  # reported with the file lists
        with pa.open(encoding="utf-8") as fa, pb.open(encoding="utf-8") as fb:
            i = 0
            while True:
                x, y = fa.readline(), fb.readline()
                i += 1
                if not x or not y:
                    if x or y:
                        return "; ".join(
                            notes + [f"{name}: {'previous' if x else 'current'} has more lines (from line {i})"]
                        )
                    break
                x, y = _normal(x, rest), _normal(y, rest)
                if x != y:
                    col = next((j for j, (c, d) in enumerate(zip(x, y)) if c != d), min(len(x), len(y)))
                    lo = max(0, col - 60)
                    return "; ".join(
                        notes
                        + [
                            f"{name} line {i} col {col + 1}: previous {x[lo : col + 60]!r} "
                            f"vs current {y[lo : col + 60]!r}"
                        ]
                    )
    names = ", ".join(n for n in COMPARED[task] if (a / n).is_file())
    aside = (
        "timestamps and seconds aside"
        if not rest
        else "timestamps, seconds, endpoint descriptions and content ids aside"
    )
    return "; ".join(notes) if notes else f"identical ({names}; {aside})"


# ---- the run ------------------------------------------------------------------------------------
def growth(rows: list[dict[str, Any]], task: str, label: str) -> float | None:
    pts = sorted(
        (r["n"], r[label]["peak_rss_mb"]) for r in rows if r["task"] == task and r.get(label) and r[label]["exit"] == 0
    )
    if len(pts) < 2:
        return None
    return pts[-1][1] / pts[0][1] - 1


def fmt(x: float | None, spec: str, width: int) -> str:
    return f"{'-' if x is None else format(x, spec):>{width}}"


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--_prepare":
        print(json.dumps(prepare(json.loads(sys.argv[2]))))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,4,16,64", help="input multiples, e.g. 1,4,16,64")
    ap.add_argument("--tasks", default="build,score", help="build,score")
    ap.add_argument("--baseline", default=None, help="git ref of the previous release (default v0.1.0, else 0c43f6a)")
    ap.add_argument("--no-baseline", action="store_true", help="measure this tree only")
    ap.add_argument("--style", default="slot", help="build style: slot | sel | rest")
    ap.add_argument(
        "--benchmark", default="acebench", help="derived benchmark to score: acebench | gta | teval | toolassess"
    )
    ap.add_argument("--mode", default="strict", help="scoring mode: strict | official")
    ap.add_argument("--seed", type=int, default=0, help="which predictions are altered")
    ap.add_argument(
        "--no-warmup",
        action="store_true",
        help="skip the untimed run at the smallest size per task and version (byte-code, page cache)",
    )
    ap.add_argument("--work", default=None, help="keep inputs and outputs in DIR (default: a temporary folder)")
    ap.add_argument("--json", default=None, help="write the figures to PATH")
    args = ap.parse_args()
    args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    args.tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    if not args.sizes or min(args.sizes) < 1:
        ap.error("--sizes needs positive integers")
    if not args.tasks or set(args.tasks) - {"build", "score"}:
        ap.error("--tasks is a list of build, score")

    tmp = None
    if args.work:
        work = Path(args.work).resolve()
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="benchsmith-scaling-")
        work = Path(tmp.name)
    try:
        run(args, work)
    finally:
        if tmp is not None:
            tmp.cleanup()


def run(args: argparse.Namespace, work: Path) -> None:
    current = current_version(work)
    versions = [current] if args.no_baseline else [materialize_baseline(args.baseline), current]
    for v in versions:
        verify_imports(v)
    print(f"python {sys.executable} ({platform.python_version()}), {os.cpu_count()} cores, {platform.platform()}")
    for v in versions:
        print(f"{v.label:8s}: {v.describe}; imports benchsmith.eval from {Path(v.imported['eval']).resolve()}")
    prepared = run_prepare(current, work / "inputs", args)

    def argv(task: str, n: int, out: Path) -> list[str]:
        return (
            build_argv(prepared, n, args.style, out)
            if task == "build"
            else score_argv(prepared, n, args.benchmark, args.mode, out)
        )

    logs = work / "logs"
    rows: list[dict[str, Any]] = []
    for task in args.tasks:
        if not args.no_warmup:
            for v in versions:
                measure(
                    v, argv(task, args.sizes[0], work / "warmup" / f"{task}-{v.label}"), work / "warmup" / "x", logs
                )
        for n in args.sizes:
            row: dict[str, Any] = {
                "task": task,
                "n": n,
                "size": prepared[task][str(n)]["size"],
                "unit": "pairs" if task == "build" else "records",
            }
            for v in versions:  # one child at a time
                out = work / "runs" / v.label / f"{task}-{n}x"
                res = measure(v, argv(task, n, out), out, logs)
                if task == "build":
                    res["self_seconds"] = self_reported_seconds(out)
                row[v.label] = res
                print(
                    f"  {task} {n}x {v.label}: {res['wall_s']:.2f} s, {res['peak_rss_mb']:.1f} MB"
                    + (f" (exit {res['exit']})" if res["exit"] else ""),
                    flush=True,
                )
            rows.append(row)

    identity = {}
    if len(versions) == 2:
        for task in args.tasks:
            for n in args.sizes:
                row = next(r for r in rows if r["task"] == task and r["n"] == n)
                if row["previous"]["exit"] or row["current"]["exit"]:
                    identity[f"{task} {n}x"] = "not compared (a run failed)"
                    continue
                identity[f"{task} {n}x"] = compare(
                    task,
                    work / "runs" / "previous" / f"{task}-{n}x",
                    work / "runs" / "current" / f"{task}-{n}x",
                    rest=task == "build" and args.style == "rest",
                )
    report(args, versions, prepared, rows, identity)


def report(
    args: argparse.Namespace,
    versions: list[Version],
    prepared: dict[str, Any],
    rows: list[dict[str, Any]],
    identity: dict[str, str],
) -> None:
    labels = [v.label for v in versions]
    print()
    head = f"{'task':6s} {'N':>4s} {'input':>16s}"
    for lab in labels:
        head += f" | {lab + ' wall s':>15s} {'RSS MB':>8s}"
    if len(labels) == 2:
        head += f" | {'wall cur/prev':>13s} {'RSS cur/prev':>12s}"
    print(head)
    print("-" * len(head))
    for r in rows:
        line = f"{r['task']:6s} {str(r['n']) + 'x':>4s} {str(r['size']) + ' ' + r['unit']:>16s}"
        for lab in labels:
            res = r[lab]
            if res["exit"]:
                line += f" | {'FAILED exit ' + str(res['exit']):>24s}"
            else:
                line += f" | {res['wall_s']:15.2f} {res['peak_rss_mb']:8.1f}"
        if len(labels) == 2:
            p, c = r["previous"], r["current"]
            ok = not p["exit"] and not c["exit"]
            line += (
                f" | {fmt(c['wall_s'] / p['wall_s'] if ok else None, '.2f', 13)}"
                f" {fmt(c['peak_rss_mb'] / p['peak_rss_mb'] if ok else None, '.2f', 12)}"
            )
        print(line)
    for r in rows:
        for lab in labels:
            if r[lab]["exit"]:
                print(
                    f"\n{r['task']} {r['n']}x {lab} failed (exit {r[lab]['exit']}):\n{r[lab].get('error', '').rstrip()}"
                )

    lo, hi = args.sizes[0], args.sizes[-1]
    print(f"\npeak RSS growth {lo}x -> {hi}x (target: < {RSS_GROWTH_TARGET:.0%} from 1x to 64x):")
    checks: dict[str, Any] = {}
    growths: dict[str, dict[str, float | None]] = {}
    for task in args.tasks:
        growths[task] = {lab: growth(rows, task, lab) for lab in labels}
        parts = [f"{lab} {fmt(g * 100 if g is not None else None, '+.1f', 6)}%" for lab, g in growths[task].items()]
        g = growths[task]["current"]
        verdict = "-" if g is None else ("PASS" if g < RSS_GROWTH_TARGET else "FAIL")
        if (lo, hi) != (1, 64) and g is not None:
            verdict += f" (measured {lo}x->{hi}x; the target is for 1x->64x)"
        checks[f"{task}_rss_growth"] = {"current": g, "target": RSS_GROWTH_TARGET, "verdict": verdict}
        print(f"  {task:6s} {'   '.join(parts)}   current: {verdict}")
    if "score" in args.tasks:
        ends = sorted(
            (r["n"], r["size"], r["current"]["peak_rss_mb"])
            for r in rows
            if r["task"] == "score" and r.get("current") and r["current"]["exit"] == 0
        )
        if len(ends) >= 2:
            (_, _, low), (_, records, high) = ends[0], ends[-1]
            limit = low + records * RSS_KB_PER_RECORD / 1024
            per = (high - low) * 1024 / (records - ends[0][1]) if records > ends[0][1] else 0.0
            verdict = "PASS" if high <= limit else "FAIL"
            print(
                f"  score  {hi}x peak {high:.1f} MB vs {lo}x peak {low:.1f} MB + {RSS_KB_PER_RECORD:.0f} KB x "
                f"{records} records = {limit:.1f} MB ({per:.2f} KB per added record)   current: {verdict}"
            )
            checks["score_rss_per_record"] = {"kb_per_added_record": per, "limit_mb": limit, "verdict": verdict}

    if "build" in args.tasks:
        big = max((r for r in rows if r["task"] == "build"), key=lambda r: r["n"])
        print(
            f"\nbuild rate, current {big['n']}x ({big['size']} pairs, one process; target >= {BUILD_RATE_TARGET:.0f} pairs/s):"
        )
        for lab in labels:
            res = big[lab]
            if res["exit"]:
                print(f"  {lab:8s} failed")
                continue
            rate = big["size"] / res["wall_s"]
            own = res.get("self_seconds")
            own_rate = big["size"] / own if own else None
            res["pairs_per_s_wall"] = round(rate, 1)
            res["pairs_per_s_reported"] = round(own_rate, 1) if own_rate else None
            line = f"  {lab:8s} {rate:7.1f} pairs/s by wall time (incl. start-up)"
            line += (
                f", {own_rate:7.1f} pairs/s by the build's own report.json seconds ({own:.2f} s)"
                if own_rate
                else ", the build reports no seconds"
            )
            cpu = res["user_s"] + res["sys_s"]
            res["pairs_per_s_cpu"] = round(big["size"] / cpu, 1) if cpu else None
            line += f", {big['size'] / cpu:7.1f} pairs/s by CPU time (user+sys, incl. start-up)" if cpu else ""
            if lab == "current":
                verdict = (
                    "PASS"
                    if rate >= BUILD_RATE_TARGET
                    else ("PASS by its own seconds only" if own_rate and own_rate >= BUILD_RATE_TARGET else "FAIL")
                )
                checks["build_rate"] = {
                    "pairs_per_s_wall": round(rate, 1),
                    "pairs_per_s_reported": res["pairs_per_s_reported"],
                    "target": BUILD_RATE_TARGET,
                    "verdict": verdict,
                }
                line += f"   {verdict}"
            print(line)

    if identity:
        print("\noutputs, previous vs current:")
        for what, verdict in identity.items():
            print(f"  {what:10s} {verdict}")

    if args.json:
        doc = {
            "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
            "versions": {
                v.label: {"describe": v.describe, "code_root": str(v.code_root), "imported": v.imported}
                for v in versions
            },
            "inputs": {
                "style": args.style,
                "benchmark": args.benchmark,
                "mode": args.mode,
                "seed": args.seed,
                "altered_fraction": ALTERED_FRACTION,
                "sizes": args.sizes,
                "prepared": {
                    t: {
                        n: {k: v for k, v in d.items() if k not in ("pairs", "data", "predictions")}
                        for n, d in prepared[t].items()
                    }
                    for t in args.tasks
                },
            },
            "rows": rows,
            "rss_growth": growths,
            "checks": checks,
            "identical": identity,
        }
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
        print(f"\nfigures written to {args.json}")


if __name__ == "__main__":
    main()
