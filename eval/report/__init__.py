"""Reports over evaluation runs: self-contained HTML, Markdown and CSV.

``load_run`` reads a run folder (``docs/eval/runs.md``), with what the report says about its model
(``ModelInfo``) and split (``SplitInfo``); ``headline`` and ``primary`` pick the
figures that matter from a benchmark's scores.json (as fractions in [0, 1]), ``headline_intervals``
their 95% intervals; ``write_report``
compares run folders in ``report.html``, ``report.md``, ``leaderboard.csv`` and
``categories.csv`` (``docs/eval/report.md``).

>>> primary("teval", {"overall": 61.5})
('overall', 0.615)
"""

from ._private.load import FEW_CASES, ModelInfo, Producer, ReplyInfo, Run, SplitInfo, TaskResults, load_run
from ._private.metrics import CHART_METRIC, PRIMARY, categories, episodes, headline, headline_intervals, primary
from ._private.write import write_report

__all__ = [
    "CHART_METRIC",
    "FEW_CASES",
    "PRIMARY",
    "ModelInfo",
    "Producer",
    "ReplyInfo",
    "Run",
    "SplitInfo",
    "TaskResults",
    "categories",
    "episodes",
    "headline",
    "headline_intervals",
    "load_run",
    "primary",
    "write_report",
]
