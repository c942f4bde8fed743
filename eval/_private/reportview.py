"""How the report shows one benchmark: a :class:`ReportView` per benchmark (``Benchmark.report``),
read from that benchmark's scores.json shape. The report itself (``benchsmith.eval.report``) only
asks the views; it names no benchmark.

Every figure is a fraction in [0, 1], so every table prints it the same way.

>>> view = ReportView()
>>> view.headline({"accuracy": 0.5, "records": 10, "note": "x"})
{'accuracy': 0.5}
>>> view.categories({}, [RecordResult(id="1", category="a", ok=True, score=1.0)])
{'a': {'records': 1.0, 'passed': 1.0, 'pass_rate': 1.0, 'mean_score': 1.0}}
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterable, Mapping, Sequence

from benchsmith.schemas import RecordResult


def pct(v: float | None) -> str:
    """``0.5088 -> '50.9%'``; None -> an em dash."""
    return "—" if v is None else f"{v * 100:.1f}%"


def num(x: Any) -> float | None:
    """``x`` as a float when it is a number (not a bool), else None."""
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def get(d: Any, *path: str) -> Any:
    """``d[path[0]][path[1]]...``, None where a step is missing or not a mapping."""
    for key in path:
        if not isinstance(d, Mapping):
            return None
        d = d.get(key)
    return d


def put(out: dict[str, float], key: str, value: Any, scale: float = 1.0) -> None:
    """``out[key] = value / scale`` when ``value`` is a number."""
    v = num(value)
    if v is not None:
        out[key] = v / scale


def flatten(prefix: str, value: Any, out: dict[str, float]) -> None:
    """The numbers in a nested mapping, keys joined with dots."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif num(value) is not None:
        out[prefix] = float(value)


def read_reliability(block: Any) -> dict[str, Any] | None:
    """A scores.json ``reliability`` block with its k keys as ints, in order; None when it holds no pass^k.

    >>> read_reliability({"trials": 2, "tasks": 3, "pass^k": {"2": 0.25, "1": 0.5}, "pass@k": {"1": 0.5}})
    {'trials': 2, 'tasks': 3, 'pass^k': {1: 0.5, 2: 0.25}, 'pass@k': {1: 0.5}, 'user_simulator_failures': None}
    """

    def curve(value: Any) -> dict[int, float]:
        out: dict[int, float] = {}
        for k, v in value.items() if isinstance(value, Mapping) else ():
            if str(k).isdigit() and num(v) is not None:
                out[int(k)] = float(v)
        return dict(sorted(out.items()))

    if not isinstance(block, Mapping) or not curve(block.get("pass^k")):
        return None
    count = {
        k: int(v) if (v := num(block.get(k))) is not None else None
        for k in ("trials", "tasks", "user_simulator_failures")
    }
    return {
        "trials": count["trials"],
        "tasks": count["tasks"],
        "pass^k": curve(block.get("pass^k")),
        "pass@k": curve(block.get("pass@k")),
        "user_simulator_failures": count["user_simulator_failures"],
    }


def counts(block: Any) -> dict[str, int]:
    """``{kind: count}`` of a mapping's numeric values (others left out)."""
    return {str(k): int(v) for k, v in block.items() if num(v) is not None} if isinstance(block, Mapping) else {}


def record_categories(records: Iterable[RecordResult]) -> dict[str, dict[str, float]]:
    """Per record category: ``records``, ``passed``, ``pass_rate`` and ``mean_score`` from records.jsonl."""
    groups: dict[str, list[RecordResult]] = {}
    for r in records:
        groups.setdefault(r.category or "-", []).append(r)
    out = {}
    for cat in sorted(groups):
        recs = groups[cat]
        ok = sum(1 for r in recs if r.ok)
        out[cat] = {
            "records": float(len(recs)),
            "passed": float(ok),
            "pass_rate": ok / len(recs),
            "mean_score": sum(r.score for r in recs) / len(recs),
        }
    return out


class ReportView:
    """The report's view of a benchmark. The defaults suit a benchmark whose scores.json holds its
    figures at the top level and per-category blocks under ``categories``."""

    #: where the benchmark's tasks come in the report (lower first; ties by task name)
    order: ClassVar[int] = 100
    #: the leaderboard's one figure, in order of preference (the first present wins)
    primary: ClassVar[tuple[str, ...]] = ()
    #: the per-category figure drawn in the bar charts (None: ``pass_rate`` / ``accuracy``)
    chart_metric: ClassVar[str | None] = None
    #: scores.json keys that are not figures
    not_figures: ClassVar[tuple[str, ...]] = ("records", "missing_predictions", "gold_failing")
    #: the scores.json block holding per-category figures (None: records.jsonl's pass rates)
    category_block: ClassVar[str | None] = "categories"

    def headline(self, scores: Mapping[str, Any]) -> dict[str, float]:
        """The figures that matter, as fractions in [0, 1]; missing or null ones left out."""
        out: dict[str, float] = {}
        for key, v in scores.items():
            if key not in self.not_figures:
                put(out, key, v)
        return out

    def categories(self, scores: Mapping[str, Any], records: Iterable[RecordResult]) -> dict[str, dict[str, float]]:
        """Per-category figures ``{category: {metric: value}}``."""
        block = scores.get(self.category_block) if self.category_block else None
        if not isinstance(block, Mapping) or not block:
            return record_categories(records)
        out: dict[str, dict[str, float]] = {}
        for cat, value in block.items():
            flat: dict[str, float] = {}
            flatten("", value, flat)
            flat = {k: v for k, v in flat.items() if not k.startswith("error_types.")}
            if flat:
                out[str(cat)] = dict(sorted(flat.items()))
        return out

    def notes(self, scores: Mapping[str, Any]) -> dict[str, str]:
        """How a figure was computed, where it matters for comparing it (figure name -> note)."""
        return {}

    def radar(self, task: str, scores: Mapping[str, Any]) -> dict[str, float]:
        """Axes this task adds to the radar chart (axis label -> fraction)."""
        return {}

    def episodes(self, scores: Mapping[str, Any]) -> dict[str, Any] | None:
        """The agent-episode figures of a task, None when it has no episodes: ``end_state`` and
        ``process`` (fractions or None), ``per_category`` ``{category: {"end_state", "process"}}``,
        ``reliability`` (see :func:`read_reliability`, or None), ``error_types`` ``{kind: count}``,
        ``episodes`` and ``user_simulator_failures`` (counts or None)."""
        return None

    def extra_rows(self, runs: Sequence[Any], task: str, heads: dict[int, dict[str, float]]) -> list[dict[str, Any]]:
        """Rows the report adds under the task's figures (e.g. figures computed across runs)."""
        return []
