"""``eval run`` and ``construct queries`` against an OpenAI-compatible endpoint that fails in every way
(tests/fake_openai.py: 500, 429 with and without Retry-After, reset mid-response, hang, a 200 that is
not JSON / not UTF-8 / has no choices, down, failing the first requests then recovering): the exit
code tells the truth, the output never holds a traceback, a failure is one red line, and after the
endpoint recovers a re-run finishes every case / item exactly once."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
from cli_runs import ANSWER, cli, construct, construct_items_once, construct_reply, done_once, eval_run, replies
from fake_openai import FakeOpenAI, closed_port
from helpers import build_slot_split, one_error_line, pair_lines


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("fakeendpoint"), pair_lines()[:6])


def _statuses(out: Path) -> Counter[str]:
    return Counter(r["status"] for r in replies(out / "toolassess" / "replies.jsonl"))


# ---- eval run ---------------------------------------------------------------------------------------------
TRANSPORT = ["500", "429", "reset", "hang"]  # retried by the client, then a transport error: asked again next run
UNREADABLE = ["garbage", "non_utf8", "empty_choices"]  # a 200 answer that is no completion: a final (empty) reply


def test_eval_run_every_failure_then_resume_asks_each_unfinished_case_once(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    n = len(UNREADABLE) + len(TRANSPORT)
    # concurrency 1: case k gets the k-th failure
    args = ("--limit", str(n), "--concurrency", "1", "--timeout", "1")
    with FakeOpenAI(lambda body: ANSWER, sequence=UNREADABLE + TRANSPORT) as ep:
        failed = eval_run(split, out, ep.base_url, *args)
        assert failed.returncode == 3, failed.stdout + failed.stderr
        line = one_error_line(failed.stderr.replace(_warnings(failed.stderr), ""))
        assert f"{len(TRANSPORT)} of {n} cases unfinished" in line and "re-run the same command" in line, line
        assert _statuses(out) == {"format_error": len(UNREADABLE), "transport_error": len(TRANSPORT)}
        errors = [
            r["error"]["message"]
            for r in replies(out / "toolassess" / "replies.jsonl")
            if r["status"] == "transport_error"
        ]
        for what in ("HTTP 500", "HTTP 429", "could not connect", "timed out"):
            assert any(what in e for e in errors), (what, errors)
        assert ep.requests == n and not ep.answered
        again = eval_run(split, out, ep.base_url, *args)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stderr == "" and "run complete" in again.stdout
    assert ep.requests == n + len(TRANSPORT)  # only the transport failures are asked again, once each
    assert _statuses(out) == {"format_error": len(UNREADABLE), "transport_error": len(TRANSPORT), "ok": len(TRANSPORT)}
    done_once(out)


def _warnings(stderr: str) -> str:
    """The client's warnings about malformed answers (logged, not errors)."""
    return "".join(ln + "\n" for ln in stderr.splitlines() if ln.startswith("malformed model reply treated as empty"))


def test_eval_run_endpoint_down_then_up(split: Path, tmp_path: Path) -> None:
    out, port = tmp_path / "run", closed_port()
    down = eval_run(split, out, f"http://127.0.0.1:{port}/v1", "--limit", "3")
    assert down.returncode == 2
    assert "cannot reach the model endpoint" in one_error_line(down.stderr)
    with FakeOpenAI(lambda body: ANSWER, port=port) as ep:
        up = eval_run(split, out, ep.base_url, "--limit", "3")
    assert up.returncode == 0, up.stdout + up.stderr
    done_once(out)


def test_eval_run_honours_retry_after_and_recovers_within_its_retries(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with FakeOpenAI(lambda body: ANSWER, mode="429", fail_first=2, retry_after="1") as ep:
        t0 = time.monotonic()
        proc = eval_run(split, out, ep.base_url, "--limit", "2", "--concurrency", "1", "--max-retries", "2")
        took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error:" not in proc.stderr and "retry 2/2" in proc.stderr  # the client's retry warnings
    assert took >= 2.0  # two waits of Retry-After: 1
    assert ep.failed == 2 and sum(ep.answered.values()) == 2
    done_once(out)


# ---- construct --------------------------------------------------------------------------------------------
def test_construct_every_failure_then_resume_finishes_each_item_once(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "q"
    n = len(UNREADABLE) + len(TRANSPORT)
    # every item's first request (the generator's) gets one failure: no request succeeds before all n are made
    with FakeOpenAI(construct_reply, sequence=UNREADABLE + TRANSPORT) as ep:
        failed = construct(split, out, ep.base_url, n)
        assert failed.returncode == 3, failed.stdout + failed.stderr
        line = one_error_line(failed.stderr.replace(_warnings(failed.stderr), ""))
        assert f"{len(TRANSPORT)} of {n} items unfinished" in line and "re-run the same command" in line, line
        assert f"{len(UNREADABLE)} to review" in failed.stdout  # an unreadable answer: review, with the raw reply
        assert ep.requests == n and not ep.answered
        again = construct(split, out, ep.base_url, n)
    assert again.returncode == 0 and again.stderr == "", again.stdout + again.stderr
    assert sum(ep.answered.values()) == 2 * len(TRANSPORT)  # generator + refiner of each unfinished item, once
    construct_items_once(out, n)


def test_a_negative_max_retries_is_one_red_line(tmp_path: Path) -> None:
    proc = cli(
        "construct",
        "queries",
        str(tmp_path),
        "--out",
        str(tmp_path / "q"),
        "--model",
        "fake",
        "--base-url",
        f"http://127.0.0.1:{closed_port()}/v1",
        "--max-retries",
        "-1",
    )
    assert proc.returncode == 2
    assert "--max-retries -1" in one_error_line(proc.stderr)  # the flag the user typed


def test_construct_check_votes_left_unfinished_exit_3_then_finish_once(split: Path, tmp_path: Path) -> None:
    out = tmp_path / "k"
    with FakeOpenAI(construct_reply, mode="500") as ep:
        args = (
            "construct",
            "check",
            str(split / "samples.jsonl"),
            "--out",
            str(out),
            "--checks",
            "model_vote",
            "--no-dedupe",
            "--model",
            "fake",
            "--base-url",
            ep.base_url,
            "--max-retries",
            "0",
            "--timeout",
            "1",
        )
        failed = cli(*args)
        assert failed.returncode == 3, failed.stdout + failed.stderr
        line = one_error_line(failed.stderr)
        n = len((split / "samples.jsonl").read_text("utf-8").splitlines())
        assert f"{n} of {n} items unfinished" in line and "re-run the same command" in line, line
        ep.mode = "ok"
        again = cli(*args)
    assert again.returncode == 0 and again.stderr == "", again.stdout + again.stderr
    summary = json.loads((out / "check_summary.json").read_text("utf-8"))
    assert summary["accepted"] + summary["rejected"] == summary["total"] == n
    assert sum(ep.answered.values()) == n  # one vote per sample over both runs
