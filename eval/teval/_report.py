"""The report's view of T-Eval: the overall score and the six abilities (scores.json holds them x100)."""

from __future__ import annotations

from typing import Any, Mapping

from benchsmith.eval import ReportView
from benchsmith.eval.views import get, put

ABILITIES = ("instruct", "plan", "reason", "retrieve", "understand", "review")


class TEvalReport(ReportView):
    order = 1
    primary = ("overall",)
    chart_metric = "score"

    def headline(self, scores: Mapping[str, Any]) -> dict[str, float]:
        out: dict[str, float] = {}
        put(out, "overall", scores.get("overall"), 100.0)
        for ability in ABILITIES:
            put(out, ability, get(scores, "abilities", ability), 100.0)
        return out

    def radar(self, task: str, scores: Mapping[str, Any]) -> dict[str, float]:
        h = self.headline(scores)
        return {f"T-Eval {a}": h[a] for a in ABILITIES if a in h}
