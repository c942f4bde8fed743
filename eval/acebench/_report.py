"""The report's view of ACEBench: the Summary (and how it was weighted), accuracy, the families,
and the agent categories' episodes."""

from __future__ import annotations

from typing import Any, Mapping

from benchsmith.eval import ReportView
from benchsmith.eval.views import counts, get, num, put, read_reliability

from ._rules import RULES

#: the categories played as episodes
AGENT_CATEGORIES = ("agent_multi_turn", "agent_multi_step")


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

    def episodes(self, scores: Mapping[str, Any]) -> dict[str, Any] | None:
        """The agent categories only (overall figures weighted by their counted episodes); None
        when the scores hold none."""
        cats = {c: v for c in AGENT_CATEGORIES if isinstance(v := get(scores, "categories", c), Mapping)}
        if not cats:
            return None
        per_category: dict[str, dict[str, float | None]] = {}
        kinds: dict[str, int] = {}
        weights: list[tuple[float, float | None, float | None]] = []
        episodes = failures = 0
        mode = scores.get("mode")
        rules = RULES.get(mode) if isinstance(mode, str) else None
        # the rules the scores were made by: left out of n (strict) or counted in it (official)
        left_out = rules is not None and rules.skip_user_simulator_failures
        for cat, v in cats.items():
            n, failed = int(num(v.get("n")) or 0), int(num(v.get("user_simulator_failures")) or 0)
            end = num(v.get("end_accuracy")) if num(v.get("end_accuracy")) is not None else num(v.get("accuracy"))
            process = num(v.get("process_accuracy"))
            if n == 0 and "n" in v:  # no episode was scored: its 0.0 is no figure ("no data"), not a zero
                end = process = None
            per_category[cat] = {"end_state": end, "process": process}
            weights.append((float(n), end, process))
            episodes += n + (failed if left_out else 0)
            failures += failed
            for kind, count in counts(v.get("episode_error_types")).items():
                kinds[kind] = kinds.get(kind, 0) + count

        def mean(pos: int) -> float | None:
            pairs = [(w[0], x) for w in weights if (x := w[pos]) is not None]
            total = sum(n for n, _ in pairs)
            if total:
                return sum(n * x for n, x in pairs) / total
            return sum(x for _, x in pairs) / len(pairs) if pairs else None

        return {
            "end_state": mean(1),
            "process": mean(2),
            "per_category": per_category,
            "reliability": read_reliability(scores.get("reliability")),
            "error_types": dict(sorted(kinds.items())),
            "episodes": episodes,
            "user_simulator_failures": failures,
        }
