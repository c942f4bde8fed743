"""The report's view of agent episodes: end-state and process accuracy, pass^k."""

from __future__ import annotations

from typing import Any, Mapping

from benchsmith.eval._private.reportview import ReportView, get, put


class AgentReport(ReportView):
    order = 60
    primary = ("end_state_accuracy",)
    chart_metric = "end_state_accuracy"
    category_block = "categories"

    def headline(self, scores: Mapping[str, Any]) -> dict[str, float]:
        out: dict[str, float] = {}
        put(out, "end_state_accuracy", scores.get("end_state_accuracy"))
        put(out, "process_accuracy", scores.get("process_accuracy"))
        for k, v in (get(scores, "reliability", "pass^k") or {}).items():
            put(out, f"pass^{k}", v)
        return out

    def radar(self, task: str, scores: Mapping[str, Any]) -> dict[str, float]:
        h = self.headline(scores)
        return {"Agent end state": h["end_state_accuracy"]} if "end_state_accuracy" in h else {}
