"""NL2API scoring: intent and slot P/R/F1, full-sequence match, completion rate by execution.

Data: a benchsmith NL2API split directory (predicted sequences are executed on its read-only
database) or NESTful records (scored without execution). Predictions: the tool-call sequence
as JSON, ``[{"name", "arguments", "label"?}, ...]``. See ``docs/eval/nl2api.md``.

>>> from benchsmith.eval.nl2api import intent_prf
>>> intent_prf(["filter_data", "aggregate_data"], ["filter_data", "aggregate_data"])
(1.0, 1.0, 1.0)
"""

from typing import TYPE_CHECKING

from benchsmith.schemas import lazy_exports

from ._plugin import NL2API
from ._rules import NL2APIRules
from ._scorers import (
    PredictionError,
    align_labels,
    answers_match,
    call_metrics,
    decimals,
    intent_prf,
    parse_calls,
    prf,
    score_calls,
    sequence_match,
    slot_prf,
    slot_string,
)

if TYPE_CHECKING:
    from ._task import NL2APITask

# the run task and derivers, imported on first use (scoring needs neither, nor the runner under them)
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("NL2APITask",), "._task"),
    },
)

__all__ = [
    "NL2APITask",
    "NL2API",
    "NL2APIRules",
    "PredictionError",
    "align_labels",
    "answers_match",
    "call_metrics",
    "decimals",
    "intent_prf",
    "parse_calls",
    "prf",
    "score_calls",
    "sequence_match",
    "slot_prf",
    "slot_string",
]
