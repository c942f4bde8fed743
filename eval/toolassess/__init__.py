"""ToolAssess: tool-use awareness, selection, multi-task ASA/PSA and TAS.

Data: benchsmith's ToolAssess JSONL (``task`` = awareness | selection | multi); TAS combines
several models' figures with variance-contribution weights. See ``docs/eval/toolassess.md``.

>>> from benchsmith.eval.toolassess import tas
>>> tas({"a": {"awareness.f1": 0.8}, "b": {"awareness.f1": 0.4}})["tas"]
{'a': 0.8, 'b': 0.4}
"""

from ._derive import derive_toolassess
from ._plugin import ToolAssess
from ._scorers import (
    AWARENESS_CLASSES,
    SELECTION_CLASSES,
    classification,
    norm_label,
    parse_awareness,
    parse_selection,
    score_awareness,
    score_selection,
    selection_decisions,
    selection_labels,
    tas,
    variance_weights,
    weighted,
)
from ._task import ToolAssessTask

__all__ = [
    "derive_toolassess",
    "ToolAssessTask",
    "AWARENESS_CLASSES",
    "SELECTION_CLASSES",
    "ToolAssess",
    "classification",
    "norm_label",
    "parse_awareness",
    "parse_selection",
    "score_awareness",
    "score_selection",
    "selection_decisions",
    "selection_labels",
    "tas",
    "variance_weights",
    "weighted",
]
