"""``benchsmith annotate push|simulate|pull|status|finalize`` as a user runs them, against the real
Label Studio of the session fixture (reached through LABEL_STUDIO_URL / LABEL_STUDIO_API_KEY)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import build_slot_split, pair_lines


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchsmith.cli", "annotate", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_review_round_trip_through_the_cli(label_studio, tmp_path: Path) -> None:
    split = build_slot_split(tmp_path, pair_lines()[:4])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHSMITH_", "LABEL_STUDIO_"))}
    env.update(label_studio.env(), BENCHSMITH_ANNOTATION_WORKSPACE=str(tmp_path / "ws"))
    r = _run(["push", "--split", str(split)], env)
    assert r.returncode == 0, r.stderr
    assert "4 new items" in r.stdout and "4 tasks pushed" in r.stdout
    r = _run(["push"], env)
    assert r.returncode == 0 and "0 tasks pushed" in r.stdout  # idempotent
    assert _run(["simulate"], env).returncode == 0
    r = _run(["pull"], env)
    assert r.returncode == 0 and "8 new" in r.stdout and "items moved on: 4 accepted" in r.stdout, r.stdout
    status = json.loads(_run(["status"], env).stdout)
    assert status["by_status"] == {"accepted": 4}
    r = _run(["finalize", "--out", str(tmp_path / "final")], env)
    assert r.returncode == 0 and "4 samples accepted" in r.stdout
    assert "items 4 accepted; Cohen's kappa" in r.stdout and "{" not in r.stdout, r.stdout  # sentences, no reprs
    assert "supplied automatically" in (tmp_path / "final" / "datasheet.md").read_text()
    out = r.stdout + r.stderr + "".join(_run(["status"], env).stdout)
    assert label_studio.token not in out  # the token never shows


def test_a_down_server_is_one_red_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHSMITH_", "LABEL_STUDIO_"))}
    env.update(
        LABEL_STUDIO_URL="http://127.0.0.1:9",
        LABEL_STUDIO_API_KEY="abc",
        BENCHSMITH_ANNOTATION_WORKSPACE=str(tmp_path / "ws"),
    )
    r = _run(["pull"], env)
    assert r.returncode in (2, 3) and "Traceback" not in r.stderr and "abc" not in r.stderr
    assert "127.0.0.1:9" in r.stderr
