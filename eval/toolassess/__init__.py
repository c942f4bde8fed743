"""ToolAssess: tool-use awareness, selection, multi-task ASA/PSA and TAS.

Data: benchsmith's ToolAssess JSONL (``task`` = awareness | selection | multi); TAS combines
several models' figures with variance-contribution weights. See ``docs/eval/toolassess.md``.

>>> from benchsmith.eval.toolassess import tas
>>> tas({"a": {"awareness.f1": 0.8}, "b": {"awareness.f1": 0.4}})["tas"]
{'a': 0.8, 'b': 0.4}
"""

from typing import TYPE_CHECKING

from benchsmith.schemas import lazy_exports

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

if TYPE_CHECKING:
    from ._derive import derive_toolassess
    from ._task import ToolAssessTask

# the run task and derivers, imported on first use (scoring needs neither, nor the runner under them)
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("ToolAssessTask",), "._task"),
        **dict.fromkeys(("derive_toolassess",), "._derive"),
    },
)

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
