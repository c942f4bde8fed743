"""Helpers for scorers and metrics: the scoring loop, guards that keep a scorer from raising, figures
over rows, and the readers a benchmark's loader uses.

A benchmark (``benchsmith.eval.Benchmark``) scores one record at a time and turns the list of rows
into scores.json; everything here is what built-in benchmarks use to do that, and plug-ins use the
same names.

* the loop: :func:`iter_scored` (one scored record and its row at a time), :class:`ScoreRun`,
  :class:`Predictions` (a predictions file read once into id -> line offset), :func:`score_record`,
  :func:`scorer_for`, :data:`SCORERS`
* guards: :func:`never_raises`, :func:`last_resort`, :func:`too_deep`, :func:`over_budget`
* figures: :func:`mean`, :func:`safe_ratio`, :func:`sqrt_weights`, :func:`reliability` (pass^k, pass@k)
* uncertainty: :func:`mean_interval` (a bootstrap :class:`Interval`, over cases or clusters),
  :func:`figure_intervals` (an interval on every estimate of scores.json, :func:`figure_leaves`),
  :func:`mcnemar_exact` (two runs on the same cases)
* reading a benchmark's own files: :func:`read_json_lines`, :func:`iter_json_lines`,
  :func:`scan_json_lines`, :func:`syntax_errors_first`, :func:`json_line_at`

>>> from benchsmith.eval.scoring import mean, safe_ratio
>>> mean([1.0, 0.0]), safe_ratio(1, 0)
(0.5, 0.0)
"""

from benchsmith.eval._private.core import (
    SCORERS,
    Predictions,
    ScoreRun,
    iter_json_lines,
    iter_scored,
    json_line_at,
    last_resort,
    mean,
    never_raises,
    over_budget,
    read_json_lines,
    reliability,
    safe_ratio,
    scan_json_lines,
    score_record,
    scorer_for,
    sqrt_weights,
    syntax_errors_first,
    too_deep,
)
from benchsmith.eval._private.stats import (
    RESAMPLES,
    Interval,
    figure_intervals,
    figure_leaves,
    mcnemar_exact,
    mean_interval,
)

__all__ = [
    "RESAMPLES",
    "Interval",
    "figure_intervals",
    "figure_leaves",
    "mcnemar_exact",
    "mean_interval",
    "SCORERS",
    "Predictions",
    "ScoreRun",
    "iter_json_lines",
    "iter_scored",
    "json_line_at",
    "last_resort",
    "mean",
    "never_raises",
    "over_budget",
    "read_json_lines",
    "reliability",
    "safe_ratio",
    "scan_json_lines",
    "score_record",
    "scorer_for",
    "sqrt_weights",
    "syntax_errors_first",
    "too_deep",
]
