"""Per-record budgets against hostile model output, for scorers: a record is scored within a
:class:`Budget` (time, prediction length, string length, nesting depth, calls) and one over it fails
with error type ``over_budget`` (``too_deep`` for nesting) instead of stalling or exhausting the run.

* limits: :class:`Budget`, :data:`DEFAULT_BUDGET`, :func:`current_budget`
* checks a scorer makes as it goes: :func:`check_time`, :func:`check_limit`, :func:`check_value`,
  :func:`check_depth`; :func:`budget_paused` for work that is not the record's (a model load)
* nesting: :data:`MAX_DEPTH`, :func:`nesting_depth`, :func:`brackets_bound`, :class:`TooDeep`
* folds over a bounded amount of text: :class:`FoldBudget`, :class:`FoldLimit`
* embeddings: :func:`embedding_text` (cut to :data:`EMBED_PREFIX_CHARS`), :data:`MODEL_OUTPUT`
* :class:`OverBudget`, raised by the checks and turned into the failed record by the scoring loop

>>> from benchsmith.eval.budget import nesting_depth
>>> nesting_depth({"a": [1]})
2
"""

from benchsmith.eval._private.budget import (
    DEFAULT_BUDGET,
    EMBED_PREFIX_CHARS,
    MODEL_OUTPUT,
    Budget,
    FoldBudget,
    FoldLimit,
    OverBudget,
    budget_paused,
    check_limit,
    check_time,
    check_value,
    current_budget,
    embedding_text,
)
from benchsmith.eval._private.depth import MAX_DEPTH, TooDeep, brackets_bound, check_depth, nesting_depth

__all__ = [
    "DEFAULT_BUDGET",
    "EMBED_PREFIX_CHARS",
    "MAX_DEPTH",
    "MODEL_OUTPUT",
    "Budget",
    "FoldBudget",
    "FoldLimit",
    "OverBudget",
    "TooDeep",
    "brackets_bound",
    "budget_paused",
    "check_depth",
    "check_limit",
    "check_time",
    "check_value",
    "current_budget",
    "embedding_text",
    "nesting_depth",
]
