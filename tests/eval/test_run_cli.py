"""``benchsmith eval run`` as a user runs it, against a real OpenAI-compatible HTTP endpoint on
127.0.0.1: kill -9 midway and re-run (every case exactly once), endpoint down (a clear error
fast), then ``eval score --run`` and ``report`` on the run folder."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from helpers import build_slot_split, endpoint_env, pair_lines

ANSWER = '{"decision": "no_tool", "tool": "filter_data", "answers": ["no_tool"]}'


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("runcli"), pair_lines()[:20])


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "benchsmith.cli", *args]


def _lines(path: Path) -> list[dict]:
    """The complete lines of a JSONL file: a last line without its newline is still being written
    (the run appends while this test polls) and is left out."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    return [json.loads(x) for x in text[: text.rfind("\n") + 1].splitlines() if x.strip()]


def test_kill_9_midway_then_rerun_gives_every_case_exactly_once(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = _cmd(
        "eval",
        "run",
        "--split",
        str(split),
        "--tasks",
        "toolassess",
        "--model",
        "fake",
        "--out",
        str(out),
        "--concurrency",
        "2",
        "--timeout",
        "20",
    )
    with FakeOpenAI(lambda body: ANSWER, delay=0.15) as ep:
        env = endpoint_env(BENCHSMITH_BASE_URL=ep.base_url)
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        replies = out / "toolassess" / "replies.jsonl"
        deadline = time.monotonic() + 120
        while len(_lines(replies)) < 8:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        before = _lines(replies)
        cases = _lines(out / "toolassess" / "cases.jsonl")
        assert 8 <= len(before) < len(cases), "the kill must land midway"
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        asked = sum(ep.prompts.values())
    after = _lines(replies)
    ids = Counter(r["id"] for r in after)
    assert set(ids) == {c["id"] for c in cases} and set(ids.values()) == {1}, "every case exactly once"
    assert after[: len(before)] == before  # nothing written before the kill was rewritten
    # the endpoint saw each case at most once, plus at most the requests in flight at the kill (cases
    # with identical prompts share one request within a run, so it may see fewer)
    assert 0 < asked <= len(cases) + 2
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "complete" and meta["tasks"]["toolassess"]["done"] == len(cases)
    assert "refused 0" in done.stdout
    # score and report the run folder
    scored = subprocess.run(
        _cmd("eval", "score", "--run", str(out)), env=endpoint_env(), capture_output=True, text=True
    )
    assert scored.returncode == 0, scored.stderr
    scores = json.loads((out / "toolassess" / "scores.json").read_text())
    assert scores["records"] == len(cases) and scores["missing_predictions"] == 0
    rep = subprocess.run(
        _cmd("report", str(out), "--out", str(tmp_path / "rep")), env=endpoint_env(), capture_output=True, text=True
    )
    assert rep.returncode == 0, rep.stderr
    assert (tmp_path / "rep" / "report.html").is_file()


def test_an_endpoint_that_is_down_is_a_clear_error_within_the_timeout(split: Path, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    res = subprocess.run(
        _cmd(
            "eval",
            "run",
            "--split",
            str(split),
            "--tasks",
            "toolassess",
            "--model",
            "fake",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--out",
            str(tmp_path / "run"),
            "--timeout",
            "5",
        ),
        env=endpoint_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert "cannot reach the model endpoint" in res.stderr and f"127.0.0.1:{port}" in res.stderr
    assert res.stderr.count("\n") <= 3 and "Traceback" not in res.stderr
    assert time.monotonic() - t0 < 30


def test_secrets_never_reach_the_run_folder_or_the_output(split: Path, tmp_path: Path) -> None:
    secret = "sk-test-SECRET-0123456789"
    out = tmp_path / "run"
    with FakeOpenAI(lambda body: ANSWER) as ep:
        res = subprocess.run(
            _cmd(
                "eval",
                "run",
                "--split",
                str(split),
                "--tasks",
                "toolassess",
                "--model",
                "fake",
                "--out",
                str(out),
                "--limit",
                "3",
            ),
            env=endpoint_env(BENCHSMITH_BASE_URL=ep.base_url, OPENAI_API_KEY=secret),
            capture_output=True,
            text=True,
        )
    assert res.returncode == 0, res.stdout + res.stderr
    assert secret not in res.stdout + res.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path
