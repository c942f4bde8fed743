"""GTA: step-by-step and end-to-end metrics with whitelist/blacklist answers.

Data: GTA's ``dataset.json`` (id -> tools, files, dialogs, gt_answer), with its ``toolmeta.json``
when present. Step-by-step predictions are one assistant turn per ``<id>#<turn>`` id; end-to-end
predictions are the final answer plus the tool calls made, per ``<id>``. Each call is checked
the way GTA's executor runs it (InstAcc). Each mode's :class:`GTARules` (``GTA.rules[mode]``:
:data:`GTA_STRICT`, :data:`GTA_OFFICIAL`) names every choice where official and strict differ.
See ``docs/eval/gta.md``.

>>> from benchsmith.eval.gta import GTA_OFFICIAL, GTA_STRICT, whitelist_pass
>>> whitelist_pass("It costs $24.", [["$24"]], None, GTA_STRICT), whitelist_pass("It costs $24.", [["$24"]], None, GTA_OFFICIAL)
(True, False)
"""

from typing import TYPE_CHECKING

from benchsmith.schemas import lazy_exports

from ._export import export_gta, gta_aliases, gta_answer, gta_tool
from ._layout import gta_input_type, toolmeta_entry, write_gta_dataset
from ._plugin import GTA, default_similarity
from ._rules import OFFICIAL as GTA_OFFICIAL
from ._rules import STRICT as GTA_STRICT
from ._rules import GTARules
from ._scorers import (
    ARGUMENT_ERRORS,
    CATEGORIES,
    FILE_TYPES,
    GTA_TYPES,
    IMAGE_GEN_TOOLS,
    TOOL_CATEGORIES,
    TurnError,
    answer_kind,
    answer_score,
    category_counts,
    check_call,
    executed_arguments,
    f1_from_counts,
    gta_category,
    image_gen_score,
    norm_call,
    official_kind,
    parse_final,
    parse_turn,
    read_call,
    score_tool_step,
    suggest_category,
    tool_specs,
    whitelist_pass,
)

if TYPE_CHECKING:
    from ._derive import derive_gta
    from ._task import GTATask

# the run task and derivers, imported on first use (scoring needs neither, nor the runner under them)
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("GTATask",), "._task"),
        **dict.fromkeys(("derive_gta",), "._derive"),
    },
)

__all__ = [
    "derive_gta",
    "export_gta",
    "gta_aliases",
    "gta_answer",
    "gta_tool",
    "GTATask",
    "ARGUMENT_ERRORS",
    "CATEGORIES",
    "FILE_TYPES",
    "GTA",
    "GTA_OFFICIAL",
    "GTA_STRICT",
    "GTA_TYPES",
    "GTARules",
    "IMAGE_GEN_TOOLS",
    "TOOL_CATEGORIES",
    "TurnError",
    "answer_kind",
    "answer_score",
    "category_counts",
    "check_call",
    "default_similarity",
    "executed_arguments",
    "f1_from_counts",
    "gta_category",
    "gta_input_type",
    "image_gen_score",
    "norm_call",
    "official_kind",
    "parse_final",
    "parse_turn",
    "read_call",
    "score_tool_step",
    "suggest_category",
    "tool_specs",
    "toolmeta_entry",
    "whitelist_pass",
    "write_gta_dataset",
]
