"""ACEBench: normal, special and agent families, scored in ``official`` and ``strict`` modes.

The plug-in registers benchmark ``acebench``. Data: an ACEBench folder (``data_<category>.json``
JSONL plus ``possible_answer/``). Predictions ``{"id", "result"}``: normal = the raw
``[Api(k='v'), ...]`` output, special = free text, agent = a JSON list of the model's turn
outputs (one call-list string per turn; a plain string is read one turn per line), which is
replayed in a sandbox to get the end state. How each mode scores is an :class:`AceRules`
(``ACE_STRICT``, ``ACE_OFFICIAL``; ``AceBench.rules``). See ``docs/eval/acebench.md``.
"""

from typing import TYPE_CHECKING

from benchsmith.schemas import lazy_exports

from ._decode import DecodeError, decode_official, decode_strict
from ._export import acebench_answer, acebench_function, acebench_order, acebench_schema, export_acebench
from ._plugin import CATEGORIES, FAMILIES, AceBench, load_folder
from ._rules import OFFICIAL as ACE_OFFICIAL
from ._rules import STRICT as ACE_STRICT
from ._rules import AceRules

if TYPE_CHECKING:
    from ._derive import derive_acebench_special
    from ._task import ACEBenchSpecialTask, ACEBenchTask

# the run task and derivers, imported on first use (scoring needs neither, nor the runner under them)
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("ACEBenchSpecialTask", "ACEBenchTask"), "._task"),
        **dict.fromkeys(("derive_acebench_special",), "._derive"),
    },
)

__all__ = [
    "derive_acebench_special",
    "export_acebench",
    "acebench_answer",
    "acebench_function",
    "acebench_order",
    "acebench_schema",
    "ACEBenchTask",
    "ACEBenchSpecialTask",
    "CATEGORIES",
    "FAMILIES",
    "AceBench",
    "AceRules",
    "ACE_STRICT",
    "ACE_OFFICIAL",
    "DecodeError",
    "decode_official",
    "decode_strict",
    "load_folder",
]
