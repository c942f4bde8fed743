"""Streamed scoring (``eval score`` / ``selftest`` / ``score_run``): the same bytes as scoring
held in memory, the previous output intact when scoring fails midway, and peak memory that does
not grow with the number of records."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import build_slot_split, pair_lines

from benchsmith.eval import IntervalOptions, derive_all, get_benchmark, run_score, run_selftest, score_cases
from benchsmith.eval.calls import JSONValueText
from benchsmith.eval.scoring import Predictions, figure_intervals, reliability
from benchsmith.schemas import UserError, write_json, write_jsonl


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stream")
    split = build_slot_split(root, pair_lines()[:30])
    derive_all(split, root / "derived", ["acebench_special", "teval", "gta", "toolassess"])
    return root


def _predictions(bench_name: str, data: Path, path: Path) -> None:
    """Gold predictions, every 3rd altered, every 5th missing, plus a bad line, a duplicate and an unknown id."""
    b = get_benchmark(bench_name)
    cases = b.load(data)
    lines = []
    for i, c in enumerate(cases):
        if i % 5 == 4:
            continue
        g = b.gold_prediction(c)
        lines.append(json.dumps({"id": c.id, "result": g[: len(g) // 2] if i % 3 == 2 else g}))
    random.Random(0).shuffle(lines)
    lines[2:2] = [
        "{oops",
        json.dumps({"id": cases[0].id, "result": "dup"}),
        json.dumps({"id": "zz-unknown", "result": ""}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _in_memory(bench_name: str, data: Path, preds: Path, out: Path, mode: str) -> None:
    """What ``eval score`` writes, computed with everything in lists: every case, prediction and
    record held, then written at once."""
    bench = get_benchmark(bench_name)
    cases = bench.load(data)
    with Predictions(preds) as p:
        by_id = {rid: p.get(rid) for rid in p.offsets}
        bad, dups = p.bad_lines, p.duplicates
    run = score_cases(bench, cases, by_id, mode)  # type: ignore[arg-type]
    known = {c.id for c in cases}
    out.mkdir(parents=True)
    write_jsonl(
        out / "records.jsonl",
        [r.model_dump(exclude={"details"} if not r.details else set()) for r in run.records],
    )
    extra = {
        "benchmark": bench_name,
        "mode": mode,
        "records": len(cases),
        "missing_predictions": sum(1 for c in cases if c.id not in by_id),
        "unknown_prediction_ids": sorted(set(by_id) - known)[:100],
        "bad_prediction_lines": [{"line": n, "reason": why} for n, why in bad[:100]],
        "duplicate_prediction_ids": dups[:100],
    }
    rows = [bench.row(c, r, mode) for c, r in zip(cases, run.records)]
    spread = figure_intervals(lambda rs: bench.metrics(rs, mode), rows, run.scores, IntervalOptions())
    write_json(out / "scores.json", {**extra, **run.scores, "intervals": spread.model_dump(mode="json")})


@pytest.mark.parametrize(
    "bench_name, folder",
    [("acebench", "acebench_special"), ("teval", "teval"), ("gta", "gta"), ("toolassess", "toolassess")],
)
@pytest.mark.parametrize("mode", ["strict", "official"])
def test_streamed_score_is_byte_identical_to_the_in_memory_one(
    derived: Path, tmp_path: Path, bench_name: str, folder: str, mode: str
) -> None:
    data = derived / "derived" / folder
    preds = tmp_path / "p.jsonl"
    _predictions(bench_name, data, preds)
    run_score(bench_name, data, preds, tmp_path / "streamed", mode)
    _in_memory(bench_name, data, preds, tmp_path / "listed", mode)
    for name in ("records.jsonl", "scores.json"):
        assert (tmp_path / "streamed" / name).read_bytes() == (tmp_path / "listed" / name).read_bytes(), name


SLIM = (str, int, float, bool, type(None))


@pytest.mark.parametrize(
    "bench_name, folder",
    [("acebench", "acebench_special"), ("teval", "teval"), ("gta", "gta"), ("toolassess", "toolassess")],
)
def test_rows_are_slim_and_metrics_pure(derived: Path, bench_name: str, folder: str) -> None:
    """What scoring keeps per record is a row of scalars (or short tuples of them): no case input,
    no details; the metrics read the rows only, so the same rows give the same figures in any
    call, and the rows are left as they were."""
    bench = get_benchmark(bench_name)
    cases = bench.load(derived / "derived" / folder)
    random.Random(1).shuffle(cases)
    preds = {c.id: (bench.gold_prediction(c) if i % 4 else "") for i, c in enumerate(cases)}
    run = score_cases(bench, cases, preds, "strict")
    rows = [bench.row(c, r, "strict") for c, r in zip(cases, run.records)]
    for row in rows:
        assert not hasattr(row, "__dict__")  # slots only
        for name in type(row).__dataclass_fields__:
            value = getattr(row, name)
            items = value if isinstance(value, tuple) else (value,)
            assert all(isinstance(v, SLIM) or isinstance(v, tuple) for v in items), (name, value)
    before = [repr(r) for r in rows]
    assert json.dumps(bench.metrics(rows, "strict")) == json.dumps(run.scores)
    assert json.dumps(bench.metrics(rows, "strict")) == json.dumps(run.scores)
    assert [repr(r) for r in rows] == before


def test_selftest_json_is_written_as_write_json_would(derived: Path, tmp_path: Path) -> None:
    from benchsmith.schemas import ScoreHead, SelftestFailure, read_selftest, write_json, write_selftest

    data = derived / "derived" / "acebench_special"
    scores = run_selftest("acebench", data, tmp_path / "st")
    records = [json.loads(x) for x in (tmp_path / "st" / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    failing = [{k: r[k] for k in ("id", "category", "error_type", "reason")} for r in records if not r["ok"]]
    # a failing record (a reason with non-ASCII text) makes the list non-empty
    failing.append({"id": "x", "category": "c", "error_type": "e", "reason": "café"})
    head = ScoreHead(benchmark="acebench", mode="strict", records=scores["records"], gold_failing=len(failing))
    write_selftest(tmp_path / "st" / "selftest.json", head, lambda: (SelftestFailure(**f) for f in failing))
    ref = {"benchmark": "acebench", "mode": "strict", "records": scores["records"], "failing": failing}
    write_json(tmp_path / "ref.json", ref)
    assert (tmp_path / "st" / "selftest.json").read_bytes() == (tmp_path / "ref.json").read_bytes()
    assert read_selftest(tmp_path / "st" / "selftest.json").model_dump(mode="json") == ref


def test_an_error_midway_leaves_the_previous_output(
    derived: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = derived / "derived" / "acebench_special"
    out = tmp_path / "out"
    run_selftest("acebench", data, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bench_cls = type(get_benchmark("acebench"))
    real = bench_cls.iter_cases

    def broken(self, d):  # noqa: ANN001, ANN202
        for i, case in enumerate(real(self, d)):
            if i == 20:
                raise UserError(f"{d}: line 21 is bad", fix="fix it")
            yield case

    monkeypatch.setattr(bench_cls, "iter_cases", broken)
    with pytest.raises(UserError, match="line 21"):
        run_selftest("acebench", data, out, mode="official")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no temporary file left either


def test_a_kill_midway_leaves_the_previous_output(derived: Path, tmp_path: Path) -> None:
    data = derived / "derived" / "teval"
    out = tmp_path / "out"
    run_selftest("teval", data, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code = f"""
import os, signal
from benchsmith.eval import get_benchmark, run_selftest
cls = type(get_benchmark("teval"))
real = cls.gold_prediction
n = [0]
def gold(self, case):
    n[0] += 1
    if n[0] == 50:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, case)
cls.gold_prediction = gold
run_selftest("teval", {str(data)!r}, {str(out)!r}, mode="official")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    after = {p.name: p.read_bytes() for p in out.iterdir() if not p.name.endswith(".tmp")}
    assert after == before
    run_selftest("teval", data, out)  # the next run cleans up the killed one's temporary file
    assert sorted(p.name for p in out.iterdir()) == sorted(before)


def test_predictions_read_each_line_once_and_the_text_on_demand(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_bytes(
        b'{"id": "a", "result": "x"}\n\n{oops\n{"id": "b", "result": [1, {"k": "\xc3\xa9"}]}\n'
        b'{"id": "a", "result": "y"}\n[1]\n{"id": 3, "result": null}\n\xff\n'
    )
    with Predictions(p) as preds:
        assert [n for n, _ in preds.bad_lines] == [3, 6, 8] and preds.duplicates == ["a"]
        assert len(preds) == 3 and "b" in preds and "zz" not in preds
        assert preds.get("a") == "y" and type(preds.get("a")) is str  # a later line of an id wins
        got = preds.get("b")
        assert got == '[1, {"k": "é"}]' and isinstance(got, JSONValueText)
        assert preds.get("zz") is None and preds.never_asked(10) == ["3"]


def test_predictions_with_many_repeated_ids(tmp_path: Path) -> None:
    rng = random.Random(5)
    ids = [f"id{rng.randint(0, 300)}" for _ in range(1000)]
    lines = [json.dumps({"id": i, "result": f"r{n}"}) for n, i in enumerate(ids)]
    lines[5:5] = ["{bad", ""]
    p = tmp_path / "p.jsonl"
    p.write_text("\n".join(lines) + "\n")
    last = {i: f"r{n}" for n, i in enumerate(ids)}
    with Predictions(p, keep=10**6) as preds:
        assert len(preds) == len(last) and len(preds.duplicates) == len(ids) - len(last)
        asked = [k for k in last if rng.random() < 0.5]
        assert all(preds.get(k) == last[k] for k in asked)
        assert preds.never_asked(10**6) == sorted(set(last) - set(asked))


MEMORY = """
import json, resource, sys
from pathlib import Path
from benchsmith.eval import run_score
src, n, work = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
data = work / f"x{n}"
(data / "possible_answer").mkdir(parents=True)
from benchsmith.eval import get_benchmark
b = get_benchmark("acebench")
gold = {c.id: b.gold_prediction(c) for c in b.load(src)}
with open(work / f"p{n}.jsonl", "w") as preds:
    for f in sorted(src.glob("data_*.json")):
        for sub in ("", "possible_answer"):
            rows = [json.loads(x) for x in (src / sub / f.name).read_text().splitlines() if x.strip()]
            with open(data / sub / f.name, "w") as fh:
                for k in range(n):
                    for o in rows:
                        fh.write(json.dumps({**o, "id": f"r{k}_{o['id']}"}) + "\\n")
                        if not sub:
                            preds.write(json.dumps({"id": f"r{k}_{o['id']}", "result": gold[o["id"]]}) + "\\n")
del gold, b
import gc; gc.collect()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
run_score("acebench", data, work / f"p{n}.jsonl", work / f"out{n}")
print(json.dumps({"peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "setup_kb": base}))
"""


def test_peak_memory_does_not_grow_with_the_records(derived: Path, tmp_path: Path) -> None:
    """ACEBench cases x1 and x16 (unique ids), each scored in a fresh process: the peak grows by
    far less than the data (before streaming it grew about 4x; a loose bound here)."""
    src = derived / "derived" / "acebench_special"
    peaks = {}
    for n in (1, 16):
        work = tmp_path / f"w{n}"
        work.mkdir()
        proc = subprocess.run(
            [sys.executable, "-c", MEMORY, str(src), str(n), str(work)], capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        peaks[n] = json.loads(proc.stdout.strip().splitlines()[-1])["peak_kb"]
    assert peaks[16] < peaks[1] * 1.3, peaks


# ---- the whole output at once (kill -9 at several points) ------------------------------------------
KILLER = """
import os, signal, sys
from pathlib import Path
import benchsmith.eval._private.run as run_mod
import benchsmith.schemas._private.folders as folders
import benchsmith.schemas._private.run as files
where, k = sys.argv[1], int(sys.argv[2])
bench, data, preds, out = sys.argv[3:7]
seen = [0]

def die():
    os.kill(os.getpid(), signal.SIGKILL)

if where == "record":            # while records are written
    real_line = files.record_line
    def line(r):
        seen[0] += 1
        if seen[0] == k:
            die()
        return real_line(r)
    files.record_line = line
elif where == "scores":          # records.jsonl complete, scores.json not yet
    real_json = files.write_json
    def write_json(path, obj):
        if Path(path).name == "scores.json":
            die()
        return real_json(path, obj)
    files.write_json = write_json
elif where == "rename":          # before the k-th rename of the swap (1: old folder aside, 2: new one in)
    real_rename = folders.os.rename
    def rename(a, b):
        seen[0] += 1
        if seen[0] == k:
            die()
        return real_rename(a, b)
    folders.os.rename = rename
if bench == "run":
    from benchsmith.eval import score_run
    score_run(out, "official")
else:
    from benchsmith.eval import run_score
    run_score(bench, data, preds, out, "official")
"""


def _kill(where: str, k: int, *args: object) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, where, str(k), *map(str, args)], capture_output=True, timeout=300
    )
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]


def _state(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir() if not p.name.endswith(".tmp")} if out.is_dir() else {}


def _agree(files: dict[str, bytes]) -> None:
    """scores.json describes records.jsonl beside it."""
    scores = json.loads(files["scores.json"])
    assert scores["records"] == len(files["records.jsonl"].splitlines())


@pytest.mark.parametrize("where, k", [("record", 1), ("record", 40), ("scores", 0), ("rename", 1), ("rename", 2)])
def test_a_kill_leaves_the_old_or_the_new_output_whole(derived: Path, tmp_path: Path, where: str, k: int) -> None:
    """``eval score --out OUT``: a kill -9 anywhere leaves OUT with the complete old set or the
    complete new one (between the swap's two renames: the old set beside it, which the next writer
    puts back), never new records beside old scores."""
    from benchsmith.schemas._private.folders import _clean_stale

    old_data, new_data = derived / "derived" / "teval", derived / "derived" / "acebench_special"
    _predictions("teval", old_data, tmp_path / "old.jsonl")
    _predictions("acebench", new_data, tmp_path / "new.jsonl")
    out, ref = tmp_path / "out", tmp_path / "ref"
    run_score("teval", old_data, tmp_path / "old.jsonl", out, "official")
    run_score("acebench", new_data, tmp_path / "new.jsonl", ref, "official")
    old, new = _state(out), _state(ref)
    assert old != new
    _kill(where, k, "acebench", new_data, tmp_path / "new.jsonl", out)
    left = _state(out)
    if where == "rename" and k == 2:
        assert not out.exists()  # killed between the renames: the old set waits beside it
    else:
        assert left == old
    _clean_stale(out)  # what the next writer does first
    assert _state(out) in (old, new)
    _agree(_state(out))
    run_score("acebench", new_data, tmp_path / "new.jsonl", out, "official")
    assert _state(out) == new and sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []


@pytest.mark.parametrize("where, k", [("record", 3), ("scores", 0)])
def test_a_kill_while_scoring_a_run_leaves_no_stale_scores(tmp_path: Path, where: str, k: int) -> None:
    """score_run writes into the run's task folders file by file, scores.json last (the old one
    removed first): after a kill, a scores.json present describes the records.jsonl beside it."""
    from runner_helpers import GoldClient

    from benchsmith.eval import TaskOptions, run_eval, score_run
    from benchsmith.eval._private.runner import plan_tasks

    split = build_slot_split(tmp_path, pair_lines()[:12])
    run = tmp_path / "run"
    planned = plan_tasks(split, run, ["nl2api"], TaskOptions(calling="prompt"), 10, 0)
    run_eval(split, GoldClient(planned), {"name": "scripted"}, run, tasks=["nl2api"], limit=10, progress=False)
    score_run(run, "strict")
    task = run / "nl2api"
    old = _state(task)
    preds = (task / "predictions.jsonl").read_text().splitlines()
    (task / "predictions.jsonl").write_text("\n".join(preds[:-3]) + "\n")  # the new scoring differs
    _kill(where, k, "run", "", "", run)
    left = _state(task)
    if "scores.json" in left:
        _agree(left)
        assert left["scores.json"] == old["scores.json"] and left["records.jsonl"] == old["records.jsonl"]
    else:
        assert where == "scores"  # records replaced, scores not yet written: no stale scores.json
    score_run(run, "strict")
    _agree(_state(task))
    assert _state(task)["scores.json"] != old["scores.json"]


def test_agent_metrics_count_trials() -> None:
    """The agent benchmark's figures on trials (pass^k from the rows) against figures computed
    here from the records."""
    bench = get_benchmark("agent")
    base = bench.load(Path("sandbox"))
    cases = [
        c.model_copy(update={"id": f"{c.id}~t{t}", "meta": {**c.meta, "trial": t, "base_id": c.id}})
        for c in base
        for t in range(3)
    ]
    preds = {c.id: (bench.gold_prediction(c) if i % 4 else "{}") for i, c in enumerate(cases)}
    run = score_cases(bench, cases, preds, "strict")
    counted = [r for r in run.records if r.error_type != "user_simulator_failure"]
    assert run.scores["episodes"] == len(cases) and run.scores["counted_episodes"] == len(counted)
    assert run.scores["end_state_accuracy"] == sum(r.ok for r in counted) / len(counted)
    assert run.scores["reliability"] == reliability(bench.row(c, r, "strict") for c, r in zip(cases, run.records))
    tally: dict[str, list[int]] = {}  # the list-based count: task -> [trials, successes]
    for c, r in zip(cases, run.records):
        t = tally.setdefault(c.meta["base_id"], [0, 0])
        t[0] += 1
        t[1] += r.ok
    for k in (1, 2, 3):
        want = sum(math.comb(ok, k) / math.comb(n, k) for n, ok in tally.values()) / len(tally)
        assert run.scores["reliability"]["pass^k"][str(k)] == want
    assert run.scores["reliability"]["tasks"] == len(base) == len(tally)
