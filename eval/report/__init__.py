"""Reports over evaluation runs: self-contained HTML, Markdown and CSV.

``load_run`` reads a run folder (``docs/eval/runs.md``); ``headline`` and ``primary`` pick the
figures that matter from a benchmark's scores.json (as fractions in [0, 1]); ``write_report``
compares run folders in ``report.html``, ``report.md``, ``leaderboard.csv`` and
``categories.csv`` (``docs/eval/report.md``).

>>> primary("teval", {"overall": 61.5})
('overall', 0.615)
"""
from ._private.load import ReplyInfo, Run, Task, load_run
from ._private.metrics import CHART_METRIC, PRIMARY, categories, headline, primary
from ._private.write import write_report

__all__ = ["CHART_METRIC", "PRIMARY", "ReplyInfo", "Run", "Task", "categories", "headline", "load_run", "primary",
           "write_report"]
