"""Intervals on every figure of scores.json (``benchsmith.eval.scoring.figure_intervals``): the
bootstrap over cases agrees with ``scipy.stats.bootstrap``, clusters move whole (wider intervals, a
dialogue figure's point inside its interval, a task drawn twice counted twice), a category keeps
its size, and one of a single case gets none. Cases: tests/fixtures/eval/figure_intervals.jsonl,
each row ``[id, category, ok, cluster]``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import EVAL_FIXTURES
from scipy.stats import bootstrap

from benchsmith.eval import IntervalOptions, Row
from benchsmith.eval.scoring import figure_intervals, mean, reliability

CASES = [json.loads(x) for x in (EVAL_FIXTURES / "figure_intervals.jsonl").read_text().splitlines()]


def _mean(rows):
    cats = {}
    for r in rows:
        cats.setdefault(r.category, []).append(r.score)
    return {"score": mean(r.score for r in rows), "categories": {c: {"score": mean(v)} for c, v in cats.items()}}


def _dialogue(rows):
    dialogues = {}
    for r in rows:
        dialogues.setdefault(r.id.rsplit("_", 1)[0], []).append(r.ok)
    return {"dialogue_accuracy": mean(float(all(v)) for v in dialogues.values())}


METRICS = {"mean": _mean, "dialogue": _dialogue, "pass^k": lambda rows: reliability(rows)}


def _rows(case, clustered=True):
    metric = case["input"]["metric"]
    out = []
    for rid, cat, ok, cluster in case["input"]["rows"]:
        if metric == "dialogue":  # a turn's id names its dialogue, as ACEBench's do
            rid = f"{cluster}_{rid}"
        trial = metric == "pass^k"
        out.append(
            Row(
                id=str(rid),
                category=cat,
                ok=bool(ok),
                score=float(ok),
                error_type=None,
                task=cluster if trial else None,
                trial=trial,
                cluster=cluster if clustered else "",
            )
        )
    return out


def _at(tree, path):
    for key in path.split("."):
        tree = tree[key]
    return tree


@pytest.mark.parametrize("case", CASES, ids=[c["why"] for c in CASES])
def test_figure_intervals(case):
    metrics, expected = METRICS[case["input"]["metric"]], case["expected"]
    rows = _rows(case)
    figures = metrics(rows)
    got = figure_intervals(metrics, rows, figures, IntervalOptions(seed=3))
    assert got is not None
    for key in ("units", "strata", "clustered"):
        if key in expected:
            assert getattr(got, key) == expected[key], key
    for path in expected.get("contains_point", []):
        low, high = _at(got.figures, path)
        assert low <= _at(figures, path) <= high, (path, low, high)
    for path, interval in expected.get("interval", {}).items():
        assert _at(got.figures, path) == pytest.approx(interval), path
    for path in expected.get("null", []):
        assert _at(got.figures, path) is None, path
    for path in expected.get("not_null", []):
        assert _at(got.figures, path) is not None, path
    if expected.get("same_as_scipy"):
        scores = np.array([r.score for r in rows])
        res = bootstrap(
            (scores,), np.mean, n_resamples=got.resamples, method="percentile", rng=np.random.default_rng(3)
        )
        assert _at(got.figures, "score") == pytest.approx(
            [res.confidence_interval.low, res.confidence_interval.high], abs=1e-6
        )
    if expected.get("wider_than_unclustered"):
        flat_rows = _rows(case, clustered=False)
        flat = figure_intervals(metrics, flat_rows, metrics(flat_rows), IntervalOptions(seed=3))
        low, high = _at(got.figures, "score")
        flat_low, flat_high = _at(flat.figures, "score")
        assert high - low > flat_high - flat_low, ((low, high), (flat_low, flat_high))


def test_no_resamples_no_intervals():
    rows = _rows(CASES[0])
    assert figure_intervals(_mean, rows, _mean(rows), IntervalOptions(resamples=0)) is None
