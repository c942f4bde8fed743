"""File-level runs: ``eval score`` and ``eval selftest`` (thin I/O around the pure core)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from benchsmith.schemas import UserError, write_json, write_jsonl

from .core import MODES, Mode, RecordResult, ScoreRun, get_benchmark, read_predictions, score_cases


def _check_mode(mode: str) -> Mode:
    if mode not in MODES:
        raise UserError(f"unknown mode {mode!r}", fix="use strict or official")
    return mode  # type: ignore[return-value]


def _record_line(r: RecordResult) -> dict[str, Any]:
    line = {"id": r.id, "category": r.category, "ok": r.ok, "score": r.score, "error_type": r.error_type,
            "reason": r.reason}
    if r.details:
        line["details"] = r.details
    return line


def _write(out: Path, run: ScoreRun, extra: dict[str, Any]) -> dict[str, Any]:
    scores = {**extra, **run.scores}
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "records.jsonl", [_record_line(r) for r in run.records])
    write_json(out / "scores.json", scores)
    return scores


def run_score(benchmark: str, data: str | Path, predictions: str | Path, out: str | Path,
              mode: str = "strict", options: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """Score a predictions file against a benchmark's data; writes scores.json and records.jsonl.

    ``options`` configure the benchmark (e.g. BFCL's ``{"format": "fc"}``; see :func:`get_benchmark`).
    """
    m = _check_mode(mode)
    bench = get_benchmark(benchmark, **(options or {}))
    cases = bench.load(Path(data))
    preds = read_predictions(predictions)
    run = score_cases(bench, cases, preds.by_id, m)
    known = {c.id for c in cases}
    extra = {
        "benchmark": benchmark, "mode": m, "records": len(cases),
        "missing_predictions": sum(1 for c in cases if c.id not in preds.by_id),
        "unknown_prediction_ids": sorted(set(preds.by_id) - known)[:100],
        "bad_prediction_lines": [{"line": n, "reason": why} for n, why in preds.bad_lines[:100]],
        "duplicate_prediction_ids": preds.duplicates[:100],
    }
    return _write(Path(out), run, extra)


def run_selftest(benchmark: str, data: str | Path, out: str | Path, mode: str = "strict",
                 options: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """Score the gold answers as predictions; list every record whose gold cannot pass."""
    m = _check_mode(mode)
    bench = get_benchmark(benchmark, **(options or {}))
    cases = bench.load(Path(data))
    run = score_cases(bench, cases, {c.id: bench.gold_prediction(c) for c in cases}, m)
    failing = [{"id": r.id, "category": r.category, "error_type": r.error_type, "reason": r.reason}
               for r in run.records if not r.ok]
    scores = _write(Path(out), run, {"benchmark": benchmark, "mode": m, "records": len(cases),
                                     "gold_failing": len(failing)})
    write_json(Path(out) / "selftest.json", {"benchmark": benchmark, "mode": m, "records": len(cases),
                                             "failing": failing})
    return scores
