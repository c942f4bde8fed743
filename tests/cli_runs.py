"""``eval run`` and ``construct queries`` through the CLI against tests/fake_openai.py, and what their
run folders hold: shared by the run-hardening and fake-endpoint tests."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from helpers import endpoint_env

from benchsmith.eval.tasks import DONE

ANSWER = '{"decision": "no_tool", "tool": "café", "answers": ["café"]}'  # multi-byte text in every reply line


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "benchsmith.cli", *args],
        env=env or endpoint_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def eval_run(split: Path, out: Path, base_url: str, *extra: str) -> subprocess.CompletedProcess:
    return cli(
        "eval",
        "run",
        "--split",
        str(split),
        "--tasks",
        "toolassess",
        "--model",
        "fake",
        "--base-url",
        base_url,
        "--out",
        str(out),
        "--timeout",
        "2",
        "--max-retries",
        "0",
        *extra,
    )


def replies(path: Path) -> list[dict]:
    """The readable lines of a replies.jsonl (a torn line is skipped)."""
    rows = []
    for raw in path.read_bytes().splitlines():
        try:
            rows.append(json.loads(raw.decode("utf-8")))
        except ValueError:
            continue
    return rows


def done_once(out: Path) -> Counter[str]:
    rows = replies(out / "toolassess" / "replies.jsonl")
    cases = [json.loads(x)["id"] for x in (out / "toolassess" / "cases.jsonl").read_text("utf-8").splitlines()]
    done = Counter(r["id"] for r in rows if r["status"] in DONE)
    assert set(done) == set(cases) and set(done.values()) == {1}, done
    return done


# ---- 1. a torn multi-byte last line of replies.jsonl does not stop resume ---------------------------------
def construct_reply(body: dict) -> str:
    system = body["messages"][0]["content"]
    if system.startswith("You write realistic requests"):
        return '{"query": "How many rows does the data have in total?"}'
    if system.startswith("You improve a draft"):
        return '{"solvable": true, "query": "How many rows does this data have in total?"}'
    if system.startswith("You check one sample"):
        return '{"vote": "accept", "reason": "fine"}'
    raise AssertionError(system[:50])


def construct(split: Path, out: Path, base_url: str, n: int = 3) -> subprocess.CompletedProcess:
    return cli(
        "construct",
        "queries",
        str(split),
        "--out",
        str(out),
        "--model",
        "fake",
        "--base-url",
        base_url,
        "--set",
        f"n={n}",
        "--timeout",
        "1",
        "--max-retries",
        "0",
    )


def construct_items_once(out: Path, n: int) -> None:
    """samples + error_pool + review account for every item exactly once."""

    def lines(name: str) -> list[dict]:
        return [json.loads(x) for x in (out / name).read_text("utf-8").splitlines() if x.strip()]

    ids = Counter(
        [s["provenance"]["source_id"] for s in lines("samples.jsonl")]
        + [r["item_id"] for r in lines("error_pool.jsonl")]
        + [r["item_id"] for r in lines("review.jsonl")]
    )
    assert len(ids) == n and set(ids.values()) == {1}, ids
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["unfinished"] == 0 and summary["samples"] + summary["rejected"] + summary["review"] == n
