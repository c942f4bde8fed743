"""The embedded evaluator: one scoring core for tool-use benchmarks.

A benchmark is a :class:`Benchmark` subclass registered once with :func:`benchmark`; it loads its
cases, scores one record (:meth:`Benchmark.score`, built from scorers registered with
:func:`scorer`), turns each scored record into a :class:`Row` and the rows into scores.json
(:meth:`Benchmark.metrics`, a pure function), each mode by one :class:`Rules` object. It names its other verbs: its run :class:`Task`
(``eval run``), derivers (``eval derive``), exporter (``eval export``) and :class:`ReportView`.
The toy benchmark in ``tests/fixtures/plugins`` is the recipe (docs/architecture.md).

Names here are for writing and running benchmarks; helpers have a namespace each, which the
built-in benchmarks use too:

* :mod:`benchsmith.eval.scoring`: the scoring loop, guards, figures over rows, readers of data files
* :mod:`benchsmith.eval.budget`: per-record budgets against hostile output
* :mod:`benchsmith.eval.calls`: tool calls in prompts and predictions
* :mod:`benchsmith.eval.tasks`: what a run task's ``solve`` gets and returns
* :mod:`benchsmith.eval.episodes`: multi-turn episodes with a simulated user
* :mod:`benchsmith.eval.derive`, :mod:`benchsmith.eval.export`: writing derivers and exporters
* :mod:`benchsmith.eval.views`: writing a report view
* :mod:`benchsmith.eval.report`: the HTML report of runs

Runs are compared with :func:`compare_runs` (``benchsmith compare``): paired differences on the
cases both scored, with intervals and an exact test.

>>> from benchsmith.eval import MODES
>>> MODES
('strict', 'official')
"""

from typing import TYPE_CHECKING

from benchsmith.schemas import lazy_exports

from ._private.compare import CompareOptions, compare_runs, noise_floor
from ._private.core import (
    BENCHMARKS,
    MODES,
    Benchmark,
    EvalCase,
    Mode,
    RecordResult,
    Row,
    Rules,
    benchmark,
    failed,
    get_benchmark,
    passed,
    score_cases,
    scorer,
)
from ._private.derive import DERIVERS, derive_all
from ._private.export import EXPORTERS
from ._private.reportview import ReportView
from ._private.run import run_score, run_selftest
from ._private.stats import IntervalOptions

if TYPE_CHECKING:
    from ._private.run_config import RUN_FLAGS, RunConfig, run_configured
    from ._private.runner import (
        TASKS,
        RunResult,
        SingleCallTask,
        Task,
        TaskOptions,
        get_task,
        run_eval,
        score_run,
        task,
    )

# imported on first use: scoring (``eval score``) never needs the runner, a third of its import time
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("RUN_FLAGS", "RunConfig", "run_configured"), "._private.run_config"),
        **dict.fromkeys(
            (
                "TASKS",
                "RunResult",
                "SingleCallTask",
                "Task",
                "TaskOptions",
                "get_task",
                "run_eval",
                "score_run",
                "task",
            ),
            "._private.runner",
        ),
    },
)

__all__ = [
    # writing a benchmark
    "Benchmark",
    "benchmark",
    "EvalCase",
    "RecordResult",
    "Row",
    "Rules",
    "Mode",
    "MODES",
    "scorer",
    "passed",
    "failed",
    "Task",
    "SingleCallTask",
    "task",
    "ReportView",
    # finding one
    "BENCHMARKS",
    "get_benchmark",
    "TASKS",
    "get_task",
    "DERIVERS",
    "EXPORTERS",
    # running one
    "run_score",
    "run_selftest",
    "IntervalOptions",
    "CompareOptions",
    "compare_runs",
    "noise_floor",
    "score_cases",
    "derive_all",
    "TaskOptions",
    "run_eval",
    "RunConfig",
    "RUN_FLAGS",
    "run_configured",
    "RunResult",
    "score_run",
]
