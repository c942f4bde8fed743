"""The figures a report shows, read from the scores.json shapes of each benchmark.

Every figure here is a fraction in [0, 1] (T-Eval's x100 figures are divided by 100), so every
table prints it the same way (a percentage with one decimal).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, Iterable, Mapping

from .load import Run, Task

#: The leaderboard's one number per benchmark, in order of preference (the first present wins).
PRIMARY: dict[str, tuple[str, ...]] = {
    "teval": ("overall",),
    "gta": ("ans_acc", "inst_acc"),
    "toolassess": ("tas", "awareness.accuracy"),
    "acebench": ("summary", "accuracy"),
    "nl2api": ("completion_rate",),
    "bfcl": ("overall",),
}

#: Short names of figures for table headers (the CSV files keep the full names).
SHORT_NAMES: dict[str, str] = {
    "completion_rate": "completion", "full_sequence_accuracy": "full seq. acc.", "awareness.accuracy": "awareness acc.",
    "ans_acc": "AnsAcc", "inst_acc": "InstAcc", "tas": "TAS", "summary": "summary", "overall": "overall",
    "accuracy": "accuracy",
}

#: The per-category figure drawn in the bar charts (``pass_rate`` comes from records.jsonl).
CHART_METRIC: dict[str, str] = {
    "teval": "score", "acebench": "accuracy", "bfcl": "accuracy", "nl2api": "completion_rate",
    "gta": "pass_rate", "toolassess": "pass_rate",
}

TEVAL_ABILITIES = ("instruct", "plan", "reason", "retrieve", "understand", "review")


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, Mapping):
            return None
        d = d.get(key)
    return d


def _put(out: dict[str, float], key: str, value: Any, scale: float = 1.0) -> None:
    v = _num(value)
    if v is not None:
        out[key] = v / scale


def _micro_f1(per_category: Any) -> float | None:
    if not isinstance(per_category, Mapping):
        return None
    tp = sum(_num(_get(v, "tp")) or 0.0 for v in per_category.values())
    pred = sum(_num(_get(v, "pred")) or 0.0 for v in per_category.values())
    gold = sum(_num(_get(v, "gold")) or 0.0 for v in per_category.values())
    if pred + gold == 0:
        return None
    return 2 * tp / (pred + gold)


def metric_notes(benchmark: str, scores: Mapping[str, Any] | None) -> dict[str, str]:
    """How a headline figure was computed, where scores.json says and it matters for comparing it
    (ACEBench's Summary: fixed 700/150/50 weights or the data's own family sizes)."""
    s = scores or {}
    if benchmark == "acebench" and isinstance(s.get("summary_sizes"), Mapping):
        sizes = ", ".join(f"{k} {v}" for k, v in s["summary_sizes"].items())
        if s.get("summary_weights_source") == "acebench_fixed":
            return {"summary": f"weights sqrt(n) of ACEBench's fixed sizes ({sizes})"}
        return {"summary": f"weights sqrt(n) of this data's family sizes ({sizes})"}
    return {}


def headline(benchmark: str, scores: Mapping[str, Any] | None) -> dict[str, float]:
    """The figures that matter for ``benchmark``, as fractions in [0, 1], from its scores.json.
    Missing or null figures are left out.

    >>> headline("teval", {"overall": 72.5, "abilities": {"plan": 80.0}})
    {'overall': 0.725, 'plan': 0.8}
    >>> headline("nl2api", {"intent": {"f1": 0.5}, "slot": {"f1": 0.25}, "completion_rate": 0.4})
    {'completion_rate': 0.4, 'intent_f1': 0.5, 'slot_f1': 0.25}
    """
    s: Mapping[str, Any] = scores or {}
    out: dict[str, float] = {}
    if benchmark == "teval":
        _put(out, "overall", s.get("overall"), 100.0)
        for ability in TEVAL_ABILITIES:
            _put(out, ability, _get(s, "abilities", ability), 100.0)
    elif benchmark == "gta":
        for key in ("inst_acc", "tool_acc", "arg_acc", "summ_acc"):
            _put(out, key, _get(s, "step_by_step", key))
        e2e = _get(s, "end_to_end")
        if isinstance(e2e, Mapping) and (_num(e2e.get("answered_samples")) or 0) > 0:
            _put(out, "ans_acc", e2e.get("ans_acc"))
        _put(out, "tool_f1", _micro_f1(_get(e2e, "tool_f1")))
        for cat, v in sorted((_get(e2e, "tool_f1") or {}).items()):
            _put(out, f"tool_f1.{cat}", _get(v, "f1"))
    elif benchmark == "toolassess":
        _put(out, "tas", s.get("tas") if not isinstance(s.get("tas"), Mapping) else None)
        for part in ("awareness", "selection"):
            for key in ("accuracy", "f1"):
                _put(out, f"{part}.{key}", _get(s, part, key))
        for key in ("asa", "psa"):
            _put(out, f"multi.{key}", _get(s, "multi", key))
    elif benchmark == "acebench":
        _put(out, "summary", s.get("summary"))
        _put(out, "accuracy", s.get("accuracy"))
        for fam, v in sorted((s.get("families") or {}).items()):
            _put(out, f"family.{fam}", v)
    elif benchmark == "nl2api":
        _put(out, "completion_rate", s.get("completion_rate"))
        _put(out, "full_sequence_accuracy", s.get("full_sequence_accuracy"))
        _put(out, "intent_f1", _get(s, "intent", "f1"))
        _put(out, "slot_f1", _get(s, "slot", "f1"))
    elif benchmark == "bfcl":
        summary = s.get("summary") if isinstance(s.get("summary"), Mapping) else {}
        for key in ("overall", "non_live_ast", "simple_ast", "live_ast", "irrelevance", "relevance"):
            _put(out, key, summary.get(key))
    else:
        for key, v in s.items():
            if key not in ("records", "missing_predictions", "gold_failing"):
                _put(out, key, v)
    return out


def primary(benchmark: str, scores: Mapping[str, Any] | None) -> tuple[str, float | None]:
    """The leaderboard's one figure of a task: ``(metric name, value or None)``.

    >>> primary("gta", {"step_by_step": {"inst_acc": 0.5}, "end_to_end": None})
    ('inst_acc', 0.5)
    """
    figures = headline(benchmark, scores)
    names = PRIMARY.get(benchmark, ())
    for name in names:
        if name in figures:
            return name, figures[name]
    if names:
        return names[0], None
    first = next(iter(figures.items()), None)
    return (first[0], first[1]) if first else ("", None)


def _flatten(prefix: str, value: Any, out: dict[str, float]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif _num(value) is not None:
        out[prefix] = float(value)


def record_categories(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per record category: ``records``, ``passed``, ``pass_rate`` and ``mean_score`` from records.jsonl."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        groups.setdefault(str(r.get("category") or "-"), []).append(r)
    out = {}
    for cat in sorted(groups):
        recs = groups[cat]
        ok = sum(1 for r in recs if r.get("ok") is True)
        out[cat] = {"records": float(len(recs)), "passed": float(ok), "pass_rate": ok / len(recs),
                    "mean_score": sum(_num(r.get("score")) or 0.0 for r in recs) / len(recs)}
    return out


def categories(benchmark: str, scores: Mapping[str, Any] | None,
               records: Iterable[Mapping[str, Any]] = ()) -> dict[str, dict[str, float]]:
    """Per-category figures ``{category: {metric: value}}``: scores.json's own category blocks
    (T-Eval, ACEBench, BFCL ``categories``; NL2API ``by_category``, nested figures joined with
    dots), or, for benchmarks without them (GTA, ToolAssess), the pass rate of each record
    category of records.jsonl.

    >>> categories("bfcl", {"categories": {"simple_python": {"correct": 3, "total": 4, "accuracy": 0.75}}})
    {'simple_python': {'accuracy': 0.75, 'correct': 3.0, 'total': 4.0}}
    """
    s: Mapping[str, Any] = scores or {}
    block = s.get("by_category") if benchmark == "nl2api" else s.get("categories")
    if benchmark in ("gta", "toolassess") or not isinstance(block, Mapping) or not block:
        return record_categories(records)
    out: dict[str, dict[str, float]] = {}
    for cat, value in block.items():
        flat: dict[str, float] = {}
        _flatten("", value, flat)
        flat = {k: v for k, v in flat.items() if not k.startswith("error_types.")}
        if flat:
            out[str(cat)] = dict(sorted(flat.items()))
    return out


def chart_metric(benchmark: str, cats: Mapping[str, Mapping[str, float]]) -> str | None:
    """The metric drawn for a benchmark's categories (falls back to ``pass_rate``/``accuracy``)."""
    for m in (CHART_METRIC.get(benchmark), "pass_rate", "accuracy", "score"):
        if m and any(m in v for v in cats.values()):
            return m
    return None


# ---- run-level figures ---------------------------------------------------------------------------
def reply_status_counts(task: Task) -> Counter[str]:
    """``ok`` / ``format_error`` / ``transport_error`` counts of a task's replies (last line per case);
    run.json's ``status_counts`` when the task has no replies.jsonl."""
    if task.replies:
        return Counter(r.status for r in task.replies.values())
    counts = task.info.get("status_counts")
    if not isinstance(counts, dict):
        return Counter()
    return Counter({str(k): int(v) for k, v in counts.items() if _num(v) and k != "pending"})


def scorer_error_counts(task: Task) -> Counter[str]:
    """Failing records of records.jsonl by error type (``failed`` when a record has none)."""
    return Counter(str(r.get("error_type") or "failed") for r in task.records if r.get("ok") is not True)


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
        calls += int(_num(task.info.get("model_calls")) or task_calls)
        prompt += int(_num(task.info.get("prompt_tokens")) or task_prompt)
        completion += int(_num(task.info.get("completion_tokens")) or task_completion)
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
    """The radar chart's axes for one run (fractions): T-Eval's six abilities, NL2API completion,
    ToolAssess awareness accuracy, GTA answer accuracy, ACEBench special accuracy, when present."""
    by_bench: dict[str, list[Task]] = {}
    for task in run.tasks.values():
        if task.scored:
            by_bench.setdefault(task.benchmark, []).append(task)
    out: dict[str, float] = {}
    for task in by_bench.get("teval", [])[:1]:
        h = headline("teval", task.scores)
        out.update({f"T-Eval {a}": h[a] for a in TEVAL_ABILITIES if a in h})
    for task in by_bench.get("nl2api", [])[:1]:
        _put(out, "NL2API completion", headline("nl2api", task.scores).get("completion_rate"))
    for task in by_bench.get("toolassess", [])[:1]:
        _put(out, "ToolAssess awareness", headline("toolassess", task.scores).get("awareness.accuracy"))
    for task in by_bench.get("gta", [])[:1]:
        _put(out, "GTA answer acc.", headline("gta", task.scores).get("ans_acc"))
    ace = sorted(by_bench.get("acebench", []), key=lambda t: t.name != "acebench_special")
    for task in ace:
        special = _get(task.scores, "families", "special")
        if _num(special) is not None:
            _put(out, "ACEBench special", special)
            break
    return out


def sample_failures(runs: list[Run], task_name: str, n: int, seed: int = 0) -> dict[int, list[dict[str, Any]]]:
    """Up to ``n`` failing records of ``task_name`` per run (by run index), deterministic: every case
    id of the task is put in one seeded order and each run shows its first ``n`` failures in that
    order, so the runs show the same cases where they fail on the same ones."""
    ids = sorted({str(r.get("id")) for run in runs if task_name in run.tasks for r in run.tasks[task_name].records})
    random.Random(f"{seed}:{task_name}").shuffle(ids)
    rank = {cid: i for i, cid in enumerate(ids)}
    out: dict[int, list[dict[str, Any]]] = {}
    for i, run in enumerate(runs):
        task = run.tasks.get(task_name)
        if task is None:
            continue
        failing = [r for r in task.records if r.get("ok") is not True]
        failing.sort(key=lambda r: (rank.get(str(r.get("id")), 0), str(r.get("category"))))
        out[i] = failing[:n]
    return out
