"""Uncertainty of a figure: bootstrap intervals over cases (or over clusters of records that are not
independent: the trials of one case, the turns of one dialogue) and the exact McNemar test of two
runs on the same cases. scipy does the statistics; this module chooses what is resampled and how
the answer is recorded."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Hashable, Sequence

#: resamples of a bootstrap unless a caller says otherwise (scipy's own default is 9,999: slower, and
#: the 95% bounds of a mean move by well under a point between the two on a few hundred cases)
RESAMPLES = 2000


@dataclass(frozen=True)
class Interval:
    """A confidence interval of a mean, with how it was made (what scores.json records)."""

    low: float
    high: float
    confidence: float
    method: str  # "BCa" or "percentile" (scipy.stats.bootstrap), or "degenerate" (every unit equal)
    resamples: int
    units: int  # what was resampled: cases, or clusters when records were grouped
    clustered: bool

    def as_json(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def mean_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Interval | None:
    """The bootstrap interval of ``mean(values)`` (scipy.stats.bootstrap, BCa; percentile where BCa
    cannot be computed). With ``clusters`` (one key per value), whole clusters are resampled and the
    statistic is the pooled mean of the values drawn: records of one cluster move together, so the
    interval is not narrowed by counting them as independent. None for fewer than two units."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    if clusters is None:
        data: tuple[Any, ...] = (x,)
        units = len(x)
    else:
        if len(clusters) != len(x):
            raise ValueError(f"{len(clusters)} cluster keys for {len(x)} values")
        index: dict[Hashable, int] = {}
        for key in clusters:
            index.setdefault(key, len(index))
        ids = np.fromiter((index[k] for k in clusters), dtype=int, count=len(x))
        sums, counts = np.bincount(ids, weights=x), np.bincount(ids).astype(float)
        data, units = (sums, counts), len(index)
    if units < 2:
        return None
    if np.all(x == x[0]) or (clusters is not None and np.ptp(data[0] / data[1]) == 0):
        v = float(x.mean())
        return Interval(v, v, confidence, "degenerate", 0, units, clusters is not None)
    for method in ("BCa", "percentile"):
        low, high = _bootstrap(data, clusters is not None, method, confidence, resamples, seed)
        if math.isfinite(low) and math.isfinite(high):
            return Interval(low, high, confidence, method, resamples, units, clusters is not None)
    raise ArithmeticError("the bootstrap gave no finite interval")  # percentile always does on finite data


def _bootstrap(
    data: tuple[Any, ...], pooled: bool, method: str, confidence: float, resamples: int, seed: int
) -> tuple[float, float]:
    import warnings

    import numpy as np
    from scipy.stats import bootstrap

    def pooled_mean(sums: Any, counts: Any, axis: int = -1) -> Any:
        return sums.sum(axis=axis) / counts.sum(axis=axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BCa on few distinct values warns, then gives NaN: handled above
        res = bootstrap(
            data,
            pooled_mean if pooled else np.mean,
            paired=pooled,
            vectorized=True,
            confidence_level=confidence,
            n_resamples=resamples,
            method=method,
            rng=np.random.default_rng(seed),
        )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """The two-sided exact McNemar p-value of two runs on the same cases: of the cases they disagree
    on, ``only_a`` only run A got right and ``only_b`` only run B; with no difference between them
    each disagreement is a fair coin (scipy.stats.binomtest). 1.0 when they never disagree."""
    from scipy.stats import binomtest

    if only_a < 0 or only_b < 0:
        raise ValueError("counts of disagreements cannot be negative")
    n = only_a + only_b
    return 1.0 if n == 0 else float(binomtest(only_a, n, 0.5).pvalue)
