"""T-Eval: instruct, plan, reason, retrieve, understand and review, in json and str formats.

``benchsmith eval score --benchmark teval --data DIR`` reads T-Eval's own files (one JSON object
per file mapping id -> record) or a folder written by ``benchsmith eval derive`` from an NL2API
split. Scorers are registered as ``teval.<ability>.<format>``; each mode's :class:`TEvalRules`
(``TEval.rules[mode]``) names every choice where official and strict differ; see docs/eval/teval.md.
"""

from typing import TYPE_CHECKING

from benchsmith.schemas import lazy_exports

from ._export import export_teval
from ._plugin import TEval, TEvalRow, file_kind, load_teval, render_gold, teval_metrics
from ._rules import TEvalRules
from ._scorers import ABILITIES, FORMATS, longest_increasing, max_weight_assignment, plan_f1, same_value

if TYPE_CHECKING:
    from ._derive import derive_teval, derive_teval_seeded, step_thought
    from ._task import TEvalTask

# the run task and derivers, imported on first use (scoring needs neither, nor the runner under them)
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("TEvalTask",), "._task"),
        **dict.fromkeys(("derive_teval", "derive_teval_seeded", "step_thought"), "._derive"),
    },
)

__all__ = [
    "export_teval",
    "derive_teval_seeded",
    "TEvalTask",
    "ABILITIES",
    "FORMATS",
    "TEval",
    "TEvalRow",
    "TEvalRules",
    "teval_metrics",
    "derive_teval",
    "file_kind",
    "load_teval",
    "longest_increasing",
    "max_weight_assignment",
    "plan_f1",
    "render_gold",
    "same_value",
    "step_thought",
]
