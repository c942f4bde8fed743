"""The report's view of agent episodes: end-state and process accuracy, pass^k."""

from __future__ import annotations

from typing import Any, Mapping

from benchsmith.eval import ReportView
from benchsmith.eval.views import counts, get, num, put, read_reliability


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

    def episodes(self, scores: Mapping[str, Any]) -> dict[str, Any] | None:
        """Every case is an episode: the top-level figures, ``categories`` and ``reliability``."""
        given = scores.get("categories")
        cats = given if isinstance(given, Mapping) else {}
        per_category = {
            str(c): {"end_state": num(get(v, "end_state_accuracy")), "process": num(get(v, "process_accuracy"))}
            for c, v in sorted(cats.items())
        }
        end, process = num(scores.get("end_state_accuracy")), num(scores.get("process_accuracy"))
        rel = read_reliability(scores.get("reliability"))
        if end is None and process is None and rel is None and not per_category:
            return None
        n, failures = num(scores.get("episodes")), num(scores.get("user_simulator_failures"))
        return {
            "end_state": end,
            "process": process,
            "per_category": per_category,
            "reliability": rel,
            "error_types": counts(scores.get("error_types")),
            "episodes": int(n) if n is not None else None,
            "user_simulator_failures": int(failures) if failures is not None else None,
        }
