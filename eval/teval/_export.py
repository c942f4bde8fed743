"""A benchsmith split written as T-Eval's six ability files (``benchsmith eval export --format
teval``): :func:`derive_teval` with the exporters' report shape."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from benchsmith.eval.export import SkipSample, sample_id, split_samples

from ._derive import derive_teval


def export_teval(split_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """``derive_teval`` with the exporters' report shape (its own report under ``derive``); a pass
    over the split (one sample at a time) lists the samples it leaves out."""
    samples = split_samples(split_dir)
    split = samples.root
    skipped = []
    for i, s in enumerate(samples):
        if s.verification is not None and s.verification.status != "verified":
            exc = SkipSample("not_verified", f"verification status is {s.verification.status!r}")
        elif not any(st.call is not None and not st.hidden for st in s.gold):
            exc = SkipSample("no_gold_calls")
        else:
            continue
        skipped.append({"sample": sample_id(s, i), "reason": exc.reason, "message": exc.message})
    derived = derive_teval(split, out_dir)
    records = {f"{ability}/{fmt}": n for ability, by_fmt in derived["records"].items() for fmt, n in by_fmt.items()}
    return {
        "format": "teval",
        "split": str(split),
        "samples": samples.count or 0,
        "written": sorted([*derived["files"], "derive_report.json"]),
        "records": records,
        "total": sum(records.values()),
        "skipped": skipped,
        "skipped_by_reason": dict(sorted(Counter(s["reason"] for s in skipped).items())),
        "derive": derived,
    }
