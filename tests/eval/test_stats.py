"""Intervals and the paired test (``benchsmith.eval.scoring``): the bootstrap agrees with
``scipy.stats.bootstrap`` called directly on the same data and seed, clustering changes the
interval where records of a cluster move together, and McNemar's exact p-values are the
hand-computed ones. Cases: tests/fixtures/eval/intervals.jsonl and mcnemar.jsonl."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import EVAL_FIXTURES
from scipy.stats import bootstrap

from benchsmith.eval.scoring import RESAMPLES, mcnemar_exact, mean_interval

INTERVALS = [json.loads(x) for x in (EVAL_FIXTURES / "intervals.jsonl").read_text().splitlines()]
MCNEMAR = [json.loads(x) for x in (EVAL_FIXTURES / "mcnemar.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("case", INTERVALS, ids=[c["why"] for c in INTERVALS])
def test_mean_interval(case):
    values, clusters, expected = case["input"]["values"], case["input"].get("clusters"), case["expected"]
    got = mean_interval(values, clusters, seed=7)
    if expected is None:
        assert got is None
        return
    assert got is not None and got.units == expected["units"] and got.clustered == (clusters is not None)
    if "method" in expected:
        assert got.method == expected["method"]
    if "low" in expected:
        assert (got.low, got.high) == (expected["low"], expected["high"])
    assert got.low <= float(np.mean(values)) <= got.high
    if clusters is None and got.method != "degenerate":  # the same call of scipy, made here
        res = bootstrap(
            (np.asarray(values, float),),
            np.mean,
            n_resamples=RESAMPLES,
            method=got.method,
            rng=np.random.default_rng(7),
        )
        assert (got.low, got.high) == pytest.approx((res.confidence_interval.low, res.confidence_interval.high))
    if expected.get("wider"):
        flat = mean_interval(values, seed=7)
        assert got.high - got.low > flat.high - flat.low, (got, flat)


@pytest.mark.parametrize("case", MCNEMAR, ids=[c["why"] for c in MCNEMAR])
def test_mcnemar_exact(case):
    assert mcnemar_exact(**case["input"]) == pytest.approx(case["expected"], abs=1e-12)
