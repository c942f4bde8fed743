"""BFCL (Berkeley Function-Calling Leaderboard) v4: AST and relevance categories.

Registered as the ``bfcl`` benchmark (``benchsmith eval score|selftest --benchmark bfcl``).
``load`` reads a BFCL data folder (``BFCL_v4_<category>.json`` plus ``possible_answer/``);
predictions are ``{"id", "result"}`` with the model's raw output, in the prompt format
(Python call syntax) or the function-calling (FC) format; the benchmark option ``format``
(``get_benchmark("bfcl", format="fc")``) says which. ``official`` mode decodes with BFCL's
decoder of that format and reproduces the official AST checker's verdicts; ``strict`` reads
either format and fixes the documented bugs (``docs/eval/bfcl.md``).

>>> from benchsmith.eval.bfcl import decode, strict_check
>>> fns = [{"name": "math.factorial", "parameters": {"type": "dict", "required": ["number"],
...         "properties": {"number": {"type": "integer"}}}}]
>>> calls = decode("[math.factorial(number=5)]").calls
>>> strict_check("simple_python", fns, [{"math.factorial": {"number": [5]}}], calls).ok
True
"""

from typing import TYPE_CHECKING

from benchsmith.schemas import lazy_exports

from ._checker import (
    Verdict,
    official_check,
    standardize,
    strict_check,
    strict_equal,
    strict_relevant_call,
)
from ._decode import FC, FORMATS, PROMPT, Decoded, decode, fc_value, has_call, strip_fence, value_prediction
from ._export import bfcl_answer, bfcl_function, bfcl_schema, export_bfcl
from ._plugin import (
    AST_CATEGORIES,
    BFCL,
    CATEGORIES,
    IRRELEVANCE,
    LIVE_AST,
    NON_LIVE_AST,
    RELEVANCE,
    gold_calls,
    load_folder,
    relevance_call,
    relevance_gold,
    render_calls,
    render_gold,
    score_ast,
    score_relevance,
)
from ._rules import BFCLRules

if TYPE_CHECKING:
    from ._task import BFCLTask, fc_result

# the run task and derivers, imported on first use (scoring needs neither, nor the runner under them)
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("BFCLTask", "fc_result"), "._task"),
    },
)

__all__ = [
    "export_bfcl",
    "bfcl_answer",
    "bfcl_function",
    "bfcl_schema",
    "fc_result",
    "BFCLTask",
    "AST_CATEGORIES",
    "BFCL",
    "CATEGORIES",
    "FC",
    "FORMATS",
    "IRRELEVANCE",
    "LIVE_AST",
    "NON_LIVE_AST",
    "PROMPT",
    "RELEVANCE",
    "Decoded",
    "Verdict",
    "BFCLRules",
    "decode",
    "fc_value",
    "gold_calls",
    "has_call",
    "load_folder",
    "official_check",
    "relevance_call",
    "relevance_gold",
    "render_calls",
    "render_gold",
    "score_ast",
    "score_relevance",
    "standardize",
    "strict_check",
    "strict_equal",
    "strict_relevant_call",
    "strip_fence",
    "value_prediction",
]
