"""The report's view of ACEBench: the Summary (and how it was weighted), accuracy, the families."""

from __future__ import annotations

from typing import Any, Mapping

from benchsmith.eval._private.reportview import ReportView, get, num, put


class AceBenchReport(ReportView):
    order = 4
    primary = ("summary", "accuracy")
    chart_metric = "accuracy"

    def headline(self, scores: Mapping[str, Any]) -> dict[str, float]:
        out: dict[str, float] = {}
        put(out, "summary", scores.get("summary"))
        put(out, "accuracy", scores.get("accuracy"))
        for fam, v in sorted((scores.get("families") or {}).items()):
            put(out, f"family.{fam}", v)
        return out

    def notes(self, scores: Mapping[str, Any]) -> dict[str, str]:
        """The Summary's weights: ACEBench's fixed 700/150/50 sizes or the data's own family sizes."""
        if isinstance(scores.get("summary_sizes"), Mapping):
            sizes = ", ".join(f"{k} {v}" for k, v in scores["summary_sizes"].items())
            if scores.get("summary_weights_source") == "acebench_fixed":
                return {"summary": f"weights sqrt(n) of ACEBench's fixed sizes ({sizes})"}
            return {"summary": f"weights sqrt(n) of this data's family sizes ({sizes})"}
        return {}

    def radar(self, task: str, scores: Mapping[str, Any]) -> dict[str, float]:
        special = get(scores, "families", "special")
        return {"ACEBench special": float(special)} if num(special) is not None else {}
