"""The embedded evaluator: one scoring core for tool-use benchmarks.

Benchmarks plug in as :class:`Benchmark` subclasses registered with :func:`benchmark`;
leaf checks are pure functions registered with :func:`scorer`.

>>> from benchsmith.eval import MODES
>>> MODES
('strict', 'official')
"""
from ._private.core import (
    BENCHMARKS, CallShapeError, JSONValueText, tool_call_parts, MODES, SCORERS, Benchmark, EvalCase, Mode, Predictions, RecordResult, ScoreRun, benchmark, failed,
    get_benchmark, mean, passed, read_json_lines, read_predictions, safe_ratio, score_cases, scorer, sqrt_weights,
)
from ._private.core import (
    DEFAULT_BUDGET, EMBED_PREFIX_CHARS, MODEL_OUTPUT, Budget, FoldBudget, FoldLimit, OverBudget, budget_paused, check_limit,
    check_time, check_value, current_budget, embedding_text, last_resort, never_raises, over_budget, score_record,
    scorer_for, too_deep,
)
from ._private.depth import MAX_DEPTH, TooDeep, brackets_bound, check_depth, nesting_depth
from ._private.derive import DERIVED_BENCHMARK, DERIVERS, derive_all
from ._private.reportview import ReportView, record_categories
from ._private.export import EXPORTERS
from ._private.run import run_score, run_selftest
from ._private.runner import (
    TASKS, CallContext, FormatError, Outcome, Request, RunResult, SingleCallTask, Task, TaskOptions, Turn, get_task, read_json_reply,
    run_eval, score_run, select_cases, shallow_reply, task,
)
from ._private.episode import (
    BUDGET_ENDS, END_REASONS, NORMAL_ENDS, STOP_PHRASE, USER_FAILURES, Budgets, Episode, EpisodeEnv, EpisodeSpec, EpisodeTask,
    Journal, LabelledEnv, error_type, reliability, run_episode,
)

__all__ = ["BUDGET_ENDS", "END_REASONS", "NORMAL_ENDS", "STOP_PHRASE", "USER_FAILURES", "Budgets", "Episode", "EpisodeEnv",
           "EpisodeSpec", "EpisodeTask", "Journal", "LabelledEnv", "error_type", "reliability", "run_episode",
           "TASKS", "CallContext", "FormatError", "Outcome", "Request", "RunResult", "SingleCallTask", "Task", "TaskOptions",
           "Turn", "get_task", "read_json_reply", "run_eval", "score_run", "select_cases", "task",
           "BENCHMARKS", "DERIVED_BENCHMARK", "DERIVERS", "EXPORTERS", "derive_acebench_special", "derive_all", "derive_gta",
           "derive_toolassess", "export_acebench", "export_bfcl", "export_gta", "export_teval", "CallShapeError", "JSONValueText", "tool_call_parts", "MODES", "SCORERS", "Benchmark", "EvalCase", "Mode", "Predictions", "RecordResult",
           "ScoreRun", "benchmark", "failed", "get_benchmark", "mean", "passed", "read_json_lines", "read_predictions", "run_score",
           "run_selftest", "safe_ratio", "score_cases", "scorer", "sqrt_weights",
           "DEFAULT_BUDGET", "EMBED_PREFIX_CHARS", "MODEL_OUTPUT", "Budget", "FoldBudget", "FoldLimit", "OverBudget",
           "budget_paused", "check_limit", "check_time", "check_value", "current_budget", "embedding_text", "over_budget",
           "score_record", "scorer_for", "ReportView", "record_categories",
           "MAX_DEPTH", "TooDeep", "brackets_bound", "check_depth", "last_resort", "nesting_depth", "never_raises", "shallow_reply",
           "too_deep"]

# each benchmark's verbs live in its folder; these names stay importable from here (loaded on use)
_IN_BENCHMARKS = {"derive_acebench_special": "acebench", "export_acebench": "acebench", "export_bfcl": "bfcl",
                  "derive_gta": "gta", "export_gta": "gta", "export_teval": "teval", "derive_toolassess": "toolassess"}


def __getattr__(name: str):
    if name in _IN_BENCHMARKS:
        import importlib

        return getattr(importlib.import_module(f"benchsmith.eval.{_IN_BENCHMARKS[name]}"), name)
    raise AttributeError(f"module 'benchsmith.eval' has no attribute {name!r}")
