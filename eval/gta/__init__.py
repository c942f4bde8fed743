"""GTA: step-by-step and end-to-end metrics with whitelist/blacklist answers.

Data: GTA's ``dataset.json`` (id -> tools, files, dialogs, gt_answer). Step-by-step
predictions are one assistant turn per ``<id>#<turn>`` id; end-to-end predictions are the final
answer plus the tool calls made, per ``<id>``. See ``docs/eval/gta.md``.

>>> from benchsmith.eval.gta import whitelist_pass
>>> whitelist_pass("It costs $24.", [["$24"]], None, "strict"), whitelist_pass("It costs $24.", [["$24"]], None, "official")
(True, False)
"""
from ._plugin import GTA, default_similarity
from ._scorers import (
    CATEGORIES, TOOL_CATEGORIES, TurnError, answer_kind, answer_score, category_counts, f1_from_counts, norm_call,
    parse_final, parse_turn, score_tool_step, whitelist_pass,
)

__all__ = ["CATEGORIES", "GTA", "TOOL_CATEGORIES", "TurnError", "answer_kind", "answer_score", "category_counts",
           "default_similarity", "f1_from_counts", "norm_call", "parse_final", "parse_turn", "score_tool_step",
           "whitelist_pass"]
