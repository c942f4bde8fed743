"""The report's view of BFCL: the summary figures (overall, AST, live, relevance)."""

from __future__ import annotations

from typing import Any, Mapping

from benchsmith.eval import ReportView
from benchsmith.eval.views import put


class BFCLReport(ReportView):
    order = 5
    primary = ("overall",)
    chart_metric = "accuracy"

    def headline(self, scores: Mapping[str, Any]) -> dict[str, float]:
        given = scores.get("summary")
        summary = given if isinstance(given, Mapping) else {}
        out: dict[str, float] = {}
        for key in ("overall", "non_live_ast", "simple_ast", "live_ast", "irrelevance", "relevance"):
            put(out, key, summary.get(key))
        return out
