"""The report's view of GTA: step-by-step accuracies, end-to-end answer accuracy and tool F1."""

from __future__ import annotations

from typing import Any, Mapping

from benchsmith.eval import ReportView
from benchsmith.eval.views import get, num, put


def _micro_f1(per_category: Any) -> float | None:
    if not isinstance(per_category, Mapping):
        return None
    tp = sum(num(get(v, "tp")) or 0.0 for v in per_category.values())
    pred = sum(num(get(v, "pred")) or 0.0 for v in per_category.values())
    gold = sum(num(get(v, "gold")) or 0.0 for v in per_category.values())
    if pred + gold == 0:
        return None
    return 2 * tp / (pred + gold)


class GTAReport(ReportView):
    order = 2
    primary = ("ans_acc", "inst_acc")
    chart_metric = "pass_rate"
    category_block = None  # scores.json has no category block: records.jsonl's pass rates

    def headline(self, scores: Mapping[str, Any]) -> dict[str, float]:
        out: dict[str, float] = {}
        for key in ("inst_acc", "tool_acc", "arg_acc", "summ_acc"):
            put(out, key, get(scores, "step_by_step", key))
        e2e = get(scores, "end_to_end")
        if isinstance(e2e, Mapping) and (num(e2e.get("answered_samples")) or 0) > 0:
            put(out, "ans_acc", e2e.get("ans_acc"))
        put(out, "tool_f1", _micro_f1(get(e2e, "tool_f1")))
        for cat, v in sorted((get(e2e, "tool_f1") or {}).items()):
            put(out, f"tool_f1.{cat}", get(v, "f1"))
        return out

    def radar(self, task: str, scores: Mapping[str, Any]) -> dict[str, float]:
        h = self.headline(scores)
        return {"GTA answer acc.": h["ans_acc"]} if "ans_acc" in h else {}
