"""The report's view of NL2API: completion, full-sequence accuracy, intent and slot F1."""

from __future__ import annotations

from typing import Any, Mapping

from benchsmith.eval import ReportView
from benchsmith.eval.views import get, put


class NL2APIReport(ReportView):
    order = 0
    primary = ("completion_rate",)
    chart_metric = "completion_rate"
    category_block = "by_category"

    def headline(self, scores: Mapping[str, Any]) -> dict[str, float]:
        out: dict[str, float] = {}
        put(out, "completion_rate", scores.get("completion_rate"))
        put(out, "full_sequence_accuracy", scores.get("full_sequence_accuracy"))
        put(out, "intent_f1", get(scores, "intent", "f1"))
        put(out, "slot_f1", get(scores, "slot", "f1"))
        return out

    def radar(self, task: str, scores: Mapping[str, Any]) -> dict[str, float]:
        h = self.headline(scores)
        return {"NL2API completion": h["completion_rate"]} if "completion_rate" in h else {}
