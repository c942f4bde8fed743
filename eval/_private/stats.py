"""Uncertainty of a figure: bootstrap intervals over cases (or over clusters of records that are not
independent: the trials of one case, the turns of one dialogue) and the exact McNemar test of two
runs on the same cases. scipy does the statistics; this module chooses what is resampled and how
the answer is recorded."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator, Sequence, TypeVar

from pydantic import Field

from benchsmith.schemas import ScoreIntervals, StrictModel, progress_bar

if TYPE_CHECKING:
    from .core import Row

RowT = TypeVar("RowT", bound="Row")

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


# ---- intervals of a benchmark's figures ----------------------------------------------------------
class IntervalOptions(StrictModel):
    """How ``eval score`` puts an interval on every figure of scores.json."""

    confidence: float = Field(default=0.95, gt=0.0, lt=1.0, description="the intervals' confidence level")
    resamples: int = Field(
        default=RESAMPLES, ge=0, description="bootstrap resamples of the figures; 0 writes no intervals"
    )
    seed: int = Field(default=0, description="the bootstrap's random seed: the same records give the same intervals")


def figure_leaves(figures: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], float]]:
    """``(path, value)`` of every estimate among a benchmark's figures: each float, however nested
    in objects. Integers are counts (records, cases) and booleans flags: neither is estimated."""
    if isinstance(figures, dict):
        for key, value in figures.items():
            yield from figure_leaves(value, (*path, str(key)))
    elif isinstance(figures, float) and math.isfinite(figures):
        yield path, figures


def _leaf(figures: Any, path: tuple[str, ...]) -> float:
    for key in path:
        if not isinstance(figures, dict) or key not in figures:
            return math.nan
        figures = figures[key]
    return float(figures) if isinstance(figures, (int, float)) and not isinstance(figures, bool) else math.nan


def _nest(paths: Sequence[tuple[str, ...]], values: Sequence[list[float] | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, value in zip(paths, values):
        node = out
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return out


def figure_intervals(
    metrics: Callable[[list[RowT]], dict[str, Any]],
    rows: Sequence[RowT],
    figures: dict[str, Any],
    options: IntervalOptions,
) -> ScoreIntervals | None:
    """A percentile interval on every estimate of ``figures`` (``metrics(rows)``): the rows'
    clusters are resampled with replacement (scipy.stats.bootstrap) within their category, so each
    category keeps its size as the split fixed it, and ``metrics`` is recomputed on each resample.
    Categories of a single cluster are resampled together as one stratum.
    A cluster (:attr:`Row.cluster`: the trials of one case, the steps of one GTA query, the records
    derived from one gold chain) moves whole; a cluster drawn twice comes back as two (the second
    copy's ids and task prefixed ``b1~``, which keeps what a benchmark reads from an id's end, such
    as the dialogue of a turn) so that pass^k counts two tasks, not one of twice the trials. A
    figure some resample lacks (a category of one case) gets no interval (null). None with fewer
    than two clusters."""
    import dataclasses

    import numpy as np

    if options.resamples == 0:
        return None
    paths = [p for p, _ in figure_leaves(figures)]
    members: dict[str, list[int]] = {}  # cluster -> its rows, in the order clusters first come
    for i, r in enumerate(rows):
        members.setdefault(r.cluster or r.id, []).append(i)
    clusters = list(members.values())
    if len(clusters) < 2 or not paths:
        return None
    by_category: dict[str, list[int]] = {}  # a cluster's stratum: its first row's category
    for c, idx in enumerate(clusters):
        by_category.setdefault(rows[idx[0]].category, []).append(c)
    # a category of one cluster says nothing of its own spread: those are pooled into one stratum
    # (so the headline still moves with them, while their own figures get no interval)
    strata = [cs for cs in by_category.values() if len(cs) >= 2]
    alone = [cs[0] for cs in by_category.values() if len(cs) < 2]
    if len(alone) >= 2:
        strata.append(alone)
    resampled = [np.asarray(cs) for cs in strata]
    fixed = [rows[i] for c in alone for i in clusters[c]] if len(alone) < 2 else []
    copies: dict[tuple[int, int], list[RowT]] = {}

    def copy(c: int, n: int) -> list[RowT]:
        if (c, n) not in copies:
            copies[(c, n)] = [
                dataclasses.replace(
                    rows[i], id=f"b{n}~{rows[i].id}", task=None if rows[i].task is None else f"b{n}~{rows[i].task}"
                )
                for i in clusters[c]
            ]
        return copies[(c, n)]

    def statistic(*samples: Any) -> Any:
        drawn: dict[int, int] = {}
        chosen: list[RowT] = list(fixed)
        for sample in samples:
            for c in sample.tolist():
                n = drawn.get(c, 0)
                drawn[c] = n + 1
                chosen.extend(rows[i] for i in clusters[c]) if n == 0 else chosen.extend(copy(c, n))
        got = metrics(chosen)
        bar.advance()
        return np.array([_leaf(got, p) for p in paths])

    if not resampled:  # one cluster per category: every resample is the sample itself
        point = [_leaf(figures, p) for p in paths]
        lows = highs = point
        method = "degenerate"
    else:
        import warnings

        from scipy.stats import bootstrap

        with progress_bar("intervals", total=options.resamples) as bar, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a figure constant across resamples warns; its interval is a point
            res = bootstrap(
                resampled,
                statistic,
                vectorized=False,
                n_resamples=options.resamples,
                confidence_level=options.confidence,
                method="percentile",
                rng=np.random.default_rng(options.seed),
            )
        lows = np.atleast_1d(res.confidence_interval.low).tolist()
        highs = np.atleast_1d(res.confidence_interval.high).tolist()
        method = "percentile"
    values = [
        [round(float(lo), 6), round(float(hi), 6)] if math.isfinite(lo) and math.isfinite(hi) else None
        for lo, hi in zip(lows, highs)
    ]
    return ScoreIntervals(
        confidence=options.confidence,
        method=method,
        resamples=options.resamples if method == "percentile" else 0,
        seed=options.seed,
        units=len(clusters),
        clustered=len(clusters) < len(rows),
        strata=len(strata),
        figures=_nest(paths, values),
    )
