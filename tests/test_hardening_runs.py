"""Issue 12, runs: resume past a torn multi-byte line, run.json of the wrong shape, ``construct`` exits 3
when an endpoint failure leaves items unfinished (and a re-run finishes each exactly once), a killed
``eval derive`` leaves the old folder, ``report`` over lone surrogates, ``model serve --port`` out of
range, and a RuntimeFault in ``eval run`` as one red line with exit 3. All through the CLI, against a
real HTTP endpoint on 127.0.0.1 (tests/fake_openai.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_runs import ANSWER, cli, construct, construct_items_once, construct_reply, done_once, eval_run, replies
from fake_openai import FakeOpenAI, closed_port
from helpers import build_slot_split, endpoint_env, one_error_line, pair_lines


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("hardruns"), pair_lines()[:6])


def test_resume_past_a_last_line_torn_inside_a_multibyte_character(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeOpenAI(lambda body: ANSWER) as ep:
        first = eval_run(split, out, ep.base_url, "--limit", "3")
        assert first.returncode == 0, first.stderr
        path = out / "toolassess" / "replies.jsonl"
        data = path.read_bytes()
        start = data.rstrip(b"\n").rfind(b"\n") + 1
        torn_id = json.loads(data[start:])["id"]
        cut = data.index("café".encode(), start) + len("caf") + 1  # the first byte of the two-byte "é"
        path.write_bytes(data[:cut])
        assert path.read_bytes().endswith(b"caf\xc3")
        asked = ep.requests
        again = eval_run(split, out, ep.base_url, "--limit", "3")
        assert again.returncode == 0, again.stdout + again.stderr
        assert ep.requests - asked == 1  # only the torn case is asked again
    rows = replies(path)
    assert [r["id"] for r in rows].count(torn_id) == 1 and rows[-1]["id"] == torn_id
    done_once(out)


# ---- 2. run.json of the wrong shape is one red line naming the file --------------------------------------
BAD_RUN_JSON = {
    "list": [],
    "model_name_number": {"model": {"name": 5}, "tasks": {}},
    "calls_text": {
        "model": {"name": "fake"},
        "tasks": {"toolassess": {"benchmark": "toolassess", "model_calls": "many"}},
    },
}


@pytest.mark.parametrize("case", sorted(BAD_RUN_JSON))
def test_eval_run_json_of_the_wrong_shape_is_one_red_line(case: str, split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text(json.dumps(BAD_RUN_JSON[case]), "utf-8")
    with FakeOpenAI(lambda body: ANSWER) as ep:
        proc = eval_run(split, out, ep.base_url, "--limit", "2")
        assert ep.requests == 0
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = one_error_line(proc.stderr)
    assert str(out / "run.json") in line and "wrong shape" in line, line
    score = cli("eval", "score", "--run", str(out))
    assert score.returncode == 2 and "run.json" in one_error_line(score.stderr)


@pytest.mark.parametrize("content", ["[]", '"text"', "[1, 2]"])
def test_construct_run_json_of_the_wrong_shape_is_one_red_line(content: str, split: Path, tmp_path: Path) -> None:
    out = tmp_path / "q"
    out.mkdir()
    (out / "run.json").write_text(content, "utf-8")
    proc = cli(
        "construct",
        "queries",
        str(split),
        "--out",
        str(out),
        "--model",
        "fake",
        "--base-url",
        f"http://127.0.0.1:{closed_port()}/v1",
        "--set",
        "n=2",
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = one_error_line(proc.stderr)
    assert str(out / "run.json") in line and "wrong shape" in line, line


# ---- 3. construct exits 3 with items unfinished by endpoint failures; a re-run finishes each once ----------
def assert_unfinished_line(proc: subprocess.CompletedProcess, n: int) -> str:
    assert proc.returncode == 3, proc.stdout + proc.stderr
    line = one_error_line(proc.stderr)
    assert f"{n} of {n} items unfinished" in line and "re-run the same command" in line, line
    return line


@pytest.mark.parametrize("failure", ["down", "500", "hang"])
def test_construct_exits_3_when_the_endpoint_fails_then_a_rerun_finishes_every_item_once(
    failure: str, split: Path, tmp_path: Path
) -> None:
    out = tmp_path / "q"
    if failure == "down":
        port = closed_port()
        t0 = time.monotonic()
        line = assert_unfinished_line(construct(split, out, f"http://127.0.0.1:{port}/v1"), 3)
        assert "could not connect" in line
        with FakeOpenAI(construct_reply, port=port) as ep:  # the endpoint comes up at the same address
            again = construct(split, out, ep.base_url)
    else:
        with FakeOpenAI(construct_reply, mode=failure) as ep:
            t0 = time.monotonic()
            line = assert_unfinished_line(construct(split, out, ep.base_url), 3)
            assert ("HTTP 500" if failure == "500" else "timed out") in line
            ep.mode = "ok"
            again = construct(split, out, ep.base_url)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stderr == "" and "0 unfinished" in again.stdout
    assert sum(ep.answered.values()) == 2 * 3  # generator + refiner once per item
    construct_items_once(out, 3)
    assert time.monotonic() - t0 < 60


# ---- 5. a killed derive leaves the old folder; its leftovers are cleaned by the next derive ----------------
def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


KILLED_DERIVE = """
import sys, time
from pathlib import Path
from benchsmith.eval import DERIVERS, TASKS, derive_all

def stop(*args, **kwargs):  # the last deriver: by now the others have written their folders
    Path(sys.argv[3]).write_text("here")
    time.sleep(600)

assert list(DERIVERS)[-1] == "toolassess"
TASKS["toolassess"].deriver = stop
derive_all(sys.argv[1], sys.argv[2])
"""

KILLED_SWAP = """
import os, sys, time
from pathlib import Path
from benchsmith.eval._private import derive

real = os.rename
def rename(src, dst):  # killed between moving the old folder away and moving the new one in
    real(src, dst)
    Path(sys.argv[3]).write_text("here")
    time.sleep(600)

derive.os.rename = rename
derive.derive_all(sys.argv[1], sys.argv[2])
"""


@pytest.fixture(scope="module")
def two_splits(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("derive")
    (root / "a").mkdir()
    (root / "b").mkdir()
    return build_slot_split(root / "a", pair_lines()[:3]), build_slot_split(root / "b", pair_lines()[3:6])


@pytest.mark.parametrize("script", ["mid_derive", "mid_swap"])
def test_a_killed_derive_leaves_the_old_folder_and_the_next_derive_cleans_up(
    script: str, two_splits: tuple[Path, Path], tmp_path: Path
) -> None:
    old_split, new_split = two_splits
    out = tmp_path / "derived"
    first = cli("eval", "derive", "--split", str(old_split), "--out", str(out))
    assert first.returncode == 0, first.stderr
    before = _tree(out)
    marker = tmp_path / "marker"
    code = KILLED_DERIVE if script == "mid_derive" else KILLED_SWAP
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(new_split), str(out), str(marker)], env=endpoint_env(), start_new_session=True
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, "the derive ended before the kill"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".derived."))
    if script == "mid_derive":
        assert _tree(out) == before  # exactly the old content, nothing of the new derive
        assert leftovers == [f".derived.new.{proc.pid}"]
    else:  # the old folder was moved aside; the new one is complete beside it
        assert not out.exists() and leftovers == [f".derived.new.{proc.pid}", f".derived.old.{proc.pid}"]
        assert _tree(tmp_path / f".derived.old.{proc.pid}") == before
    again = cli("eval", "derive", "--split", str(new_split), "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".derived.")]
    report = json.loads((out / "derive_report.json").read_text("utf-8"))
    assert report["split"] == str(new_split) and sorted(report["derived"]) == sorted(
        p.name for p in out.iterdir() if p.is_dir()
    )


def test_derive_refuses_to_replace_a_folder_holding_other_files(two_splits: tuple[Path, Path], tmp_path: Path) -> None:
    split = two_splits[0]
    out = split.parent  # holds the split itself (samples.jsonl, ...): replacing it would delete the input
    before = _tree(out)
    proc = cli("eval", "derive", "--split", str(split), "--out", str(out))
    assert proc.returncode == 2
    line = one_error_line(proc.stderr)
    assert "did not write" in line and str(out) in line, line
    assert _tree(out) == before


# ---- 6. report over lone surrogates; model serve --port out of range --------------------------------------
def test_report_over_replies_and_records_with_lone_surrogates(tmp_path: Path) -> None:
    from report_helpers import build_workspace, make_run

    ws = build_workspace(tmp_path / "ws", 3)
    run = make_run(ws, tmp_path / "run", "model-s", quality=0.0, seed=3, tasks=("toolassess",))
    task = run / "toolassess"
    for name, edit in (("replies.jsonl", _surrogate_reply), ("records.jsonl", _surrogate_record)):
        rows = [json.loads(x) for x in (task / name).read_text("utf-8").splitlines() if x.strip()]
        # json.dumps escapes the lone surrogates (\ud800), as dumps_json writes them
        (task / name).write_text("".join(json.dumps(edit(r)) + "\n" for r in rows), "utf-8")
    assert "\\ud800" in (task / "replies.jsonl").read_text("utf-8")
    proc = cli("report", str(run), "--out", str(tmp_path / "rep"), "--failures", "50")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "rep" / "report.html").read_text("utf-8")
    assert "bad \ufffd reply" in html


def _surrogate_reply(r: dict) -> dict:
    for t in r.get("turns") or []:
        t["raw"] = "bad \ud800 reply"
    if r.get("result") is not None:
        r["result"] = "bad \ud800 reply"
    if r.get("error"):
        r["error"]["message"] = "odd \udfff text"
    return r


def _surrogate_record(r: dict) -> dict:
    return {**r, "reason": "reason \ud800 here", "error_type": "wrong\udc00"}


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_model_serve_port_out_of_range_is_one_red_line(port: str, tmp_path: Path) -> None:
    proc = cli("model", "serve", "--port", port, env=endpoint_env(BENCHSMITH_MODEL_STATE_DIR=str(tmp_path / "state")))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = one_error_line(proc.stderr)
    assert "--port" in line and port in line and "65535" in line, line
    assert not (tmp_path / "state").exists()  # refused before anything was started


# ---- 7. an endpoint failing case after case is a RuntimeFault: one red line, exit 3 ------------------------
def test_eval_run_endpoint_failing_repeatedly_is_one_red_line_exit_3(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeOpenAI(lambda body: ANSWER, mode="500") as ep:
        proc = eval_run(split, out, ep.base_url, "--limit", "12", "--concurrency", "1")
        assert proc.returncode == 3, proc.stdout + proc.stderr
        line = one_error_line(proc.stderr)
        assert "cases in a row" in line and "HTTP 500" in line and "re-run the same command" in line, line
        assert ep.requests == 8  # stopped after 8 failures in a row (the default limit at concurrency 1)
        ep.mode = "ok"
        again = eval_run(split, out, ep.base_url, "--limit", "12", "--concurrency", "1")
    assert again.returncode == 0, again.stdout + again.stderr
    done_once(out)
