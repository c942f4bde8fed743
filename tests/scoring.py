"""Scoring helpers for tests: a benchmark's metrics over records built by hand."""

from __future__ import annotations

from typing import Any

from benchsmith.eval import Benchmark, EvalCase, Mode, RecordResult


def metrics_of(bench: Benchmark, cases: list[EvalCase], records: list[RecordResult], mode: Mode) -> dict[str, Any]:
    """``bench.metrics`` over the rows of ``records`` (each with its case, by id): what ``eval
    score`` computes from the same records."""
    by_id = {c.id: c for c in cases}
    return bench.metrics([bench.row(by_id[r.id], r, mode) for r in records], mode)
