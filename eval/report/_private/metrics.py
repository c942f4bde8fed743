"""The figures a report shows: each benchmark's :class:`~benchsmith.eval.ReportView`
(``Benchmark.report``, in the benchmark's folder) reads its scores.json; this module asks the views
and adds the run-level figures. It names no benchmark.

Every figure here is a fraction in [0, 1] (T-Eval's x100 figures are divided by 100), so every
table prints it the same way (a percentage with one decimal).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any, Iterable, Mapping

from pydantic import ValidationError

from benchsmith.eval import ReportView  # noqa: F401  (re-exported)
from benchsmith.eval.derive import BenchmarkView
from benchsmith.eval.views import num, record_categories  # noqa: F401  (re-exported)
from benchsmith.schemas import RecordResult, RoleUsage

from .load import Run, TaskResults


def view(benchmark: str) -> ReportView:
    """The :class:`ReportView` of a benchmark (its ``Benchmark.report``); the default view for a
    name no benchmark is registered under (a run of a plug-in that is not loaded)."""
    from benchsmith.eval import BENCHMARKS

    cls = BENCHMARKS.get(benchmark)
    return cls.report if cls is not None else ReportView()


def _by_benchmark(attr: str) -> dict[str, Any]:
    from benchsmith.eval import BENCHMARKS

    return {name: getattr(cls.report, attr) for name, cls in sorted(BENCHMARKS.items())}


#: The leaderboard's one number per benchmark, in order of preference (the first present wins).
PRIMARY: Mapping[str, tuple[str, ...]] = BenchmarkView(lambda: _by_benchmark("primary"))
#: The per-category figure drawn in the bar charts (``pass_rate`` comes from records.jsonl).
CHART_METRIC: Mapping[str, str | None] = BenchmarkView(lambda: _by_benchmark("chart_metric"))

#: Short names of figures for table headers (the CSV files keep the full names).
SHORT_NAMES: dict[str, str] = {
    "completion_rate": "completion",
    "full_sequence_accuracy": "full seq. acc.",
    "awareness.accuracy": "awareness acc.",
    "ans_acc": "AnsAcc",
    "inst_acc": "InstAcc",
    "tas": "TAS",
    "summary": "summary",
    "overall": "overall",
    "accuracy": "accuracy",
}


def metric_notes(benchmark: str, scores: Mapping[str, Any] | None) -> dict[str, str]:
    """How a headline figure was computed, where scores.json says and it matters for comparing it."""
    return view(benchmark).notes(scores or {})


def headline(benchmark: str, scores: Mapping[str, Any] | None) -> dict[str, float]:
    """The figures that matter for ``benchmark``, as fractions in [0, 1], from its scores.json.
    Missing or null figures are left out.

    >>> headline("teval", {"overall": 72.5, "abilities": {"plan": 80.0}})
    {'overall': 0.725, 'plan': 0.8}
    >>> headline("nl2api", {"intent": {"f1": 0.5}, "slot": {"f1": 0.25}, "completion_rate": 0.4})
    {'completion_rate': 0.4, 'intent_f1': 0.5, 'slot_f1': 0.25}
    """
    return view(benchmark).headline(scores or {})


def primary(benchmark: str, scores: Mapping[str, Any] | None) -> tuple[str, float | None]:
    """The leaderboard's one figure of a task: ``(metric name, value or None)``.

    >>> primary("gta", {"step_by_step": {"inst_acc": 0.5}, "end_to_end": None})
    ('inst_acc', 0.5)
    """
    v = view(benchmark)
    figures = v.headline(scores or {})
    for name in v.primary:
        if name in figures:
            return name, figures[name]
    if v.primary:
        return v.primary[0], None
    first = next(iter(figures.items()), None)
    return (first[0], first[1]) if first else ("", None)


def categories(
    benchmark: str, scores: Mapping[str, Any] | None, records: Iterable[RecordResult] = ()
) -> dict[str, dict[str, float]]:
    """Per-category figures ``{category: {metric: value}}``: scores.json's own category blocks
    (nested figures joined with dots), or, for benchmarks without them (GTA, ToolAssess), the pass
    rate of each record category of records.jsonl.

    >>> categories("bfcl", {"categories": {"simple_python": {"correct": 3, "total": 4, "accuracy": 0.75}}})
    {'simple_python': {'accuracy': 0.75, 'correct': 3.0, 'total': 4.0}}
    """
    return view(benchmark).categories(scores or {}, records)


def episodes(benchmark: str, scores: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A task's agent-episode figures (:meth:`ReportView.episodes`), None when it has no episodes.

    >>> episodes("nl2api", {"completion_rate": 0.5}) is None
    True
    """
    return view(benchmark).episodes(scores or {}) if scores else None


def chart_metric(benchmark: str, cats: Mapping[str, Mapping[str, float]]) -> str | None:
    """The metric drawn for a benchmark's categories (falls back to ``pass_rate``/``accuracy``)."""
    for m in (view(benchmark).chart_metric, "pass_rate", "accuracy", "score"):
        if m and any(m in v for v in cats.values()):
            return m
    return None


#: a category's count of what its figures rest on, in the category blocks of scores.json and records.jsonl
COUNT_KEYS = ("records", "n", "total")


def category_figure(figures: Mapping[str, float], metric: str | None) -> float | None:
    """The ``metric`` of one category (see :func:`categories`), None when it has no data: the
    figure is missing or NaN, or the category counts no records (a 0.0 of 0 cases is no result).

    >>> category_figure({"n": 0, "accuracy": 0.0}, "accuracy") is None
    True
    >>> category_figure({"n": 4, "accuracy": 0.0}, "accuracy")
    0.0
    """
    value = figures.get(metric) if metric else None
    count = next((figures[k] for k in COUNT_KEYS if k in figures), None)
    if value is None or math.isnan(value) or count == 0:
        return None
    return value


# ---- run-level figures ---------------------------------------------------------------------------
def reply_status_counts(task: TaskResults) -> Counter[str]:
    """``ok`` / ``format_error`` / ``transport_error`` counts of a task's replies (last line per case);
    run.json's ``status_counts`` when the task has no replies.jsonl."""
    if task.replies:
        return Counter(r.status for r in task.replies.values())
    counts = task.info.status_counts
    if counts is None:
        return Counter()
    return Counter({str(k): int(v) for k, v in counts.items() if num(v) and k != "pending"})


def scorer_error_counts(task: TaskResults) -> Counter[str]:
    """Failing records of records.jsonl by error type (``failed`` when a record has none)."""
    return Counter(r.error_type or "failed" for r in task.records if not r.ok)


def run_summary(run: Run) -> dict[str, Any]:
    """Cases, finished cases, format-error rate, transport errors, latency and tokens of a run."""
    statuses: Counter[str] = Counter()
    latencies: list[float] = []
    calls = prompt = completion = 0
    for task in run.tasks.values():
        statuses.update(reply_status_counts(task))
        task_calls = sum(r.calls for r in task.replies.values())
        latencies.extend(r.latency_s for r in task.replies.values() if r.latency_s is not None)
        task_prompt = sum(r.prompt_tokens for r in task.replies.values())
        task_completion = sum(r.completion_tokens for r in task.replies.values())
        # the runner's own accounting (retries included) wins over the sums of the replies
        calls += task.info.model_calls or task_calls
        prompt += task.info.prompt_tokens or task_prompt
        completion += task.info.completion_tokens or task_completion
    finished = sum(statuses.values())
    reply_calls = sum(r.calls for t in run.tasks.values() for r in t.replies.values() if r.latency_s is not None)
    return {
        "cases": sum(t.cases for t in run.tasks.values()),
        "finished": finished,
        "format_errors": statuses.get("format_error", 0),
        "transport_errors": statuses.get("transport_error", 0),
        "format_error_rate": statuses.get("format_error", 0) / finished if finished else None,
        "model_calls": calls,
        "mean_latency_s": sum(latencies) / reply_calls if reply_calls else None,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
    }


def radar_axes(run: Run) -> dict[str, float]:
    """The radar chart's axes for one run (fractions): what each scored task's view adds (T-Eval's
    six abilities, NL2API completion, ToolAssess awareness, ...), in the report's task order; an
    axis two tasks give comes from the first."""
    out: dict[str, float] = {}
    for task in run.tasks.values():
        if task.scores is not None:  # scored
            for axis, value in view(task.benchmark).radar(task.name, task.scores).items():
                out.setdefault(axis, value)
    return out


def sample_failures(runs: list[Run], task_name: str, n: int, seed: int = 0) -> dict[int, list[RecordResult]]:
    """Up to ``n`` failing records of ``task_name`` per run (by run index), deterministic: every case
    id of the task is put in one seeded order and each run shows its first ``n`` failures in that
    order, so the runs show the same cases where they fail on the same ones."""
    ids = sorted({r.id for run in runs if task_name in run.tasks for r in run.tasks[task_name].records})
    random.Random(f"{seed}:{task_name}").shuffle(ids)
    rank = {cid: i for i, cid in enumerate(ids)}
    out: dict[int, list[RecordResult]] = {}
    for i, run in enumerate(runs):
        task = run.tasks.get(task_name)
        if task is None:
            continue
        failing = [r for r in task.records if not r.ok]
        failing.sort(key=lambda r: (rank.get(r.id, 0), r.category))
        out[i] = failing[:n]
    return out


# ---- uncertainty, comparison and cost ----------------------------------------------------------------
def _bound(figures: Any, spread: Any, side: int) -> Any:
    """``figures`` with each float replaced by its interval's ``side`` bound (None where it has none)."""
    if isinstance(figures, Mapping):
        return {k: _bound(v, spread.get(k) if isinstance(spread, Mapping) else None, side) for k, v in figures.items()}
    if isinstance(figures, float):
        return float(spread[side]) if isinstance(spread, list) and len(spread) == 2 else None
    return figures


def _bounds(scores: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    from benchsmith.schemas import score_intervals

    spread = score_intervals(dict(scores or {}))
    if spread is None:
        return None
    return _bound(scores, spread.figures, 0), _bound(scores, spread.figures, 1)


def headline_intervals(benchmark: str, scores: Mapping[str, Any] | None) -> dict[str, tuple[float, float]]:
    """The 95% interval of each :func:`headline` figure (fractions), from scores.json's
    ``intervals``: the view reads the scores with every figure at its lower bound, then at its upper
    one (the views only pick and scale figures, so the bounds land on the same names). Figures
    without an interval are left out.

    >>> headline_intervals("nl2api", {"completion_rate": 0.4, "intervals": {"confidence": 0.95,
    ...     "method": "percentile", "resamples": 9, "seed": 0, "units": 5, "clustered": False, "strata": 1,
    ...     "figures": {"completion_rate": [0.2, 0.6]}}})
    {'completion_rate': (0.2, 0.6)}
    """
    both = _bounds(scores)
    if both is None:
        return {}
    lows, highs = headline(benchmark, both[0]), headline(benchmark, both[1])
    return {k: (min(lows[k], highs[k]), max(lows[k], highs[k])) for k in lows if k in highs}


def category_intervals(
    benchmark: str, scores: Mapping[str, Any] | None, records: Iterable[RecordResult] = ()
) -> dict[str, dict[str, tuple[float, float]]]:
    """:func:`categories`' figures' intervals, as :func:`headline_intervals` gives the headline's;
    for a benchmark whose categories come from records.jsonl (no category block in scores.json),
    the bootstrap interval of each category's ``pass_rate`` and ``mean_score`` over its records."""
    block = view(benchmark).category_block
    own = (scores or {}).get(block) if block else None
    if not isinstance(own, Mapping) or not own:
        from benchsmith.eval.scoring import mean_interval

        groups: dict[str, list[RecordResult]] = {}
        for r in records:
            groups.setdefault(r.category or "-", []).append(r)
        found: dict[str, dict[str, tuple[float, float]]] = {}
        for cat, recs in groups.items():
            for name, values in (("pass_rate", [float(r.ok) for r in recs]), ("mean_score", [r.score for r in recs])):
                interval = mean_interval(values)
                if interval is not None:
                    found.setdefault(cat, {})[name] = (interval.low, interval.high)
        return found
    both = _bounds(scores)
    if both is None:
        return {}
    lows, highs = categories(benchmark, both[0]), categories(benchmark, both[1])
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for cat, figs in lows.items():
        for name, low in figs.items():
            high = highs.get(cat, {}).get(name)
            if high is not None and low is not None and not (math.isnan(low) or math.isnan(high)):
                out.setdefault(cat, {})[name] = (min(low, high), max(low, high))
    return out


def run_usage(run: Run) -> dict[str, Any]:
    """A run's model calls as its scored tasks' scores.json record them: one row per task and role
    (tokens, calls cut by their output budget, latency percentiles, cost), and the run's total cost
    and cost per correct case when a price table priced it. Percentiles stay per task: those of
    different tasks do not add up."""
    rows: list[dict[str, Any]] = []
    total = 0.0
    correct = 0
    currency = None
    unpriced: set[str] = set()
    for task in run.tasks.values():
        scores = task.scores or {}
        for role, u in (scores.get("usage") or {}).items():
            try:
                rows.append({"task": task.name, "role": role, **RoleUsage.model_validate(u).model_dump()})
            except ValidationError:
                continue  # another program's scores.json: its usage is not shown
        cost = scores.get("cost")
        if isinstance(cost, Mapping) and isinstance(cost.get("total"), (int, float)):
            total += float(cost["total"])
            correct += int(cost.get("successes") or 0)
            currency = cost.get("currency")
            unpriced.update(f"{task.name}: {r}" for r in cost.get("unpriced") or [])
    return {
        "rows": rows,
        "currency": currency,
        "total": total if currency is not None else None,
        "per_correct": total / correct if currency is not None and correct else None,
        "correct": correct,
        "unpriced": sorted(unpriced),
    }


def comparisons(runs: list[Run]) -> list[dict[str, Any]]:
    """Each run after the first against the first (``benchsmith compare``, a different case set or
    prompt version allowed and named): the comparison as JSON, or why the two cannot be compared."""
    from benchsmith.eval import CompareOptions, compare_runs
    from benchsmith.schemas import UserError

    out: list[dict[str, Any]] = []
    options = CompareOptions(allow=frozenset({"cases", "prompt"}))
    for run in runs[1:]:
        try:
            (comparison,) = compare_runs([runs[0].path, run.path], options)
        except UserError as exc:
            out.append({"run": str(run.path), "refused": str(exc)})
            continue
        out.append({"run": str(run.path), "refused": None, **comparison.model_dump(mode="json")})
    return out


def noise(runs: list[Run]) -> list[dict[str, Any]]:
    """For each group of runs that are repeats of one ``eval run --repeats`` (same parent folder),
    how much each task moved between them (:func:`benchsmith.eval.noise_floor`)."""
    from benchsmith.eval import noise_floor
    from benchsmith.schemas import UserError

    groups: dict[str, list[Run]] = {}
    for run in runs:
        if run.manifest.repeat is not None:
            groups.setdefault(str(run.path.resolve().parent), []).append(run)
    out: list[dict[str, Any]] = []
    for folder, members in groups.items():
        if len(members) < 2:
            continue
        try:
            figures = noise_floor([r.path for r in members])
        except UserError as exc:  # a repeat not scored yet
            out.append({"folder": folder, "runs": len(members), "refused": str(exc), "figures": []})
            continue
        out.append(
            {"folder": folder, "runs": len(members), "refused": None, "figures": [f.model_dump() for f in figures]}
        )
    return out
