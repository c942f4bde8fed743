"""The report's view of ToolAssess: TAS, awareness and selection accuracy and F1, multi-tool ASA and
PSA; with several runs, TAS computed across the runs of the report."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from benchsmith.eval import ReportView
from benchsmith.eval.views import get, pct, put
from benchsmith.schemas import UserError


class ToolAssessReport(ReportView):
    order = 3
    primary = ("tas", "awareness.accuracy")
    chart_metric = "pass_rate"
    category_block = None  # scores.json has no category block: records.jsonl's pass rates

    def headline(self, scores: Mapping[str, Any]) -> dict[str, float]:
        out: dict[str, float] = {}
        put(out, "tas", scores.get("tas") if not isinstance(scores.get("tas"), Mapping) else None)
        for part in ("awareness", "selection"):
            for key in ("accuracy", "f1"):
                put(out, f"{part}.{key}", get(scores, part, key))
        for key in ("asa", "psa"):
            put(out, f"multi.{key}", get(scores, "multi", key))
        return out

    def radar(self, task: str, scores: Mapping[str, Any]) -> dict[str, float]:
        h = self.headline(scores)
        return {"ToolAssess awareness": h["awareness.accuracy"]} if "awareness.accuracy" in h else {}

    def extra_rows(self, runs: Sequence[Any], task: str, heads: dict[int, dict[str, float]]) -> list[dict[str, Any]]:
        """TAS of the runs of this report (variance-contribution weights need several models)."""
        inputs = {i: runs[i].tasks[task].scores.get("tas_inputs") for i in heads}
        inputs = {i: v for i, v in inputs.items() if isinstance(v, dict) and v}
        if len(inputs) < 2 or any("tas" in h for h in heads.values()):
            return []
        from ._scorers import tas

        try:
            result = tas({str(i): v for i, v in inputs.items()})["tas"]
        except (UserError, KeyError, TypeError, ValueError):
            return []
        values = [result.get(str(i)) for i in range(len(runs))]
        return [
            {
                "metric": "TAS (across these runs)",
                "cells": [pct(v) for v in values],
                "values": values,
                "note": "ToolAssess's variance-weighted score, computed over the runs of this report",
                "detail": "",
            }
        ]
