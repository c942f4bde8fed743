"""``benchsmith demo --no-model-run``: the main job's model-free part end to end on the embedded
default data, through the CLI (which only calls ``benchsmith.demo.run``). The model part (local
model, Label Studio) runs in README command 1 and in the tests of those parts."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from helpers import endpoint_env


def test_the_model_free_main_job(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "benchsmith.cli", "demo", "--out", str(out), "--no-model-run"],
        capture_output=True,
        text=True,
        timeout=900,
        env=endpoint_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    lines = proc.stdout.splitlines()
    for style in ("SLOT", "SEL", "REST"):
        built = next(line for line in lines if line.startswith(f"{style} "))
        verified, total = map(int, re.search(r": (\d+)/(\d+) verified", built).groups())
        assert verified == total > 100, built
    passes = [re.search(r"(\d+)/(\d+) (?:records )?pass", line) for line in lines if "gold self-test" in line]
    assert len(passes) == 3 + 1 + 4  # three styles, the merged BIRD-layout example, four derived benchmarks
    assert all(m is not None and m.group(1) == m.group(2) and int(m.group(2)) > 0 for m in passes), proc.stdout
    bird = next(line for line in lines if line.startswith("BIRD-layout example"))
    assert "40/41 verified" in bird and "school_funding 20/20" in bird, bird
    for folder in (
        "slot",
        "sel",
        "rest",
        "bird/merged",
        "bird/school_funding",
        "derived/teval",
        "derived/gta",
        "derived/toolassess",
        "derived/acebench_special",
    ):
        assert (out / folder).is_dir(), folder
    assert "benchsmith nl2api serve" in lines[-2]
    assert lines[-1].startswith("stage times: build ") and "derive" in lines[-1] and "total" in lines[-1]
    timings = json.loads((out / "timings.json").read_text())
    assert (
        set(timings["stages_s"]) == {"build", "dataset", "derive"}
        and timings["total_s"] >= sum(timings["stages_s"].values()) - 0.5
    )
