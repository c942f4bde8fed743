"""Special-family checks (incomplete, error_param, irrelevant) on the model's free text.

Failures are typed ``error_detection`` (the problem was not flagged at all) or
``error_correction`` (flagged, but the API / parameter / value was not named).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._normal import strict_text

INCOMPLETE_PHRASE = "Missing necessary parameters"
ERROR_PHRASE = "There is incorrect value"
IRRELEVANT_PHRASE = "the limitations of the function"

Verdict = tuple[bool, str | None, str, str | None]


def kind_of(category: str) -> str:
    if "incomplete" in category:
        return "incomplete"
    if "error" in category:
        return "error_param"
    return "irrelevant"


# ---- official ---------------------------------------------------------------------------------
def check_official(category: str, text: str, gold: Any) -> Verdict:
    kind = kind_of(category)
    verdict: Verdict = (True, None, "", None)
    if kind == "irrelevant":
        if IRRELEVANT_PHRASE not in text:
            return (False, "error_detection", "the limitation was not stated", "error_detection")
        return verdict
    if not isinstance(gold, dict):
        return (False, "error_detection", "possible answer is not an object", "bad_gold")
    for name, values in gold.items():
        if kind == "incomplete":
            if INCOMPLETE_PHRASE not in text:
                verdict = (False, "error_detection", f"missing parameters of {name} not flagged", "error_detection")
            elif name not in text:
                verdict = (False, "error_correction", f"API {name} not named", "error_correction")
            else:
                for v in values if isinstance(values, list) else [values]:
                    if str(v) not in text:
                        verdict = (False, "error_correction", f"missing parameter {v!r} not named", "error_correction")
        else:
            if ERROR_PHRASE not in text:
                verdict = (False, "error_detection", f"incorrect value of {name} not flagged", "error_detection")
            else:
                for v in values if isinstance(values, list) else [values]:
                    if str(v) not in text:
                        verdict = (False, "error_correction", f"incorrect value {v!r} not named", "error_correction")
    return verdict


# ---- strict -----------------------------------------------------------------------------------
def _mentions(text: str, item: str) -> bool:
    """``item`` occurs in ``text`` as a whole token (case-insensitive, whitespace-normalised)."""
    item = strict_text(str(item))
    if not item:
        return True
    pat = (
        (r"(?<![\w])" if item[0].isalnum() or item[0] == "_" else "")
        + re.escape(item)
        + (r"(?![\w])" if item[-1].isalnum() or item[-1] == "_" else "")
    )
    return re.search(pat, strict_text(text)) is not None


def check_strict(category: str, text: str, gold: Any) -> Verdict:
    kind = kind_of(category)
    norm = strict_text(text)
    if kind == "irrelevant":
        if strict_text(IRRELEVANT_PHRASE) not in norm:
            return (False, "error_detection", "the limitation was not stated", "error_detection")
        return (True, None, "", None)
    if not isinstance(gold, dict) or not gold:
        return (False, "error_detection", "possible answer is not a non-empty object", "bad_gold")
    phrase = INCOMPLETE_PHRASE if kind == "incomplete" else ERROR_PHRASE
    if strict_text(phrase) not in norm:
        what = "missing parameters" if kind == "incomplete" else "incorrect values"
        return (False, "error_detection", f"{what} not flagged", "error_detection")
    for name, values in gold.items():
        if kind == "incomplete" and not _mentions(text, name):
            return (False, "error_correction", f"API {name} not named", "error_correction")
        for v in values if isinstance(values, list) else [values]:
            if not _mentions(text, str(v).strip()):
                what = "missing parameter" if kind == "incomplete" else "incorrect value"
                return (False, "error_correction", f"{what} {str(v).strip()!r} not named", "error_correction")
    return (True, None, "", None)


def gold_message(category: str, gold: Any) -> str:
    """A correct answer in the output format the ACEBench system prompt asks for.

    ``["Missing necessary parameters (k1, k2) for the api (ApiName)"]``,
    ``["There is incorrect value (v) for the parameters (key) in the conversation history."]``,
    ``["Due to the limitations of the function, I cannot solve this problem."]``. Names and
    values are written as a model names them (surrounding spaces of the answer file dropped),
    so a possible answer that carries padded names (EN ``special_incomplete_0``) fails the
    official verbatim-substring check, as it does in the official pipeline.
    """
    kind = kind_of(category)
    if kind == "irrelevant":
        return '["Due to the limitations of the function, I cannot solve this problem."]'
    if not isinstance(gold, dict):
        return ""
    parts = []
    for name, values in gold.items():
        vals = ", ".join(str(v).strip() for v in (values if isinstance(values, list) else [values]))
        if kind == "incomplete":
            parts.append(f"{INCOMPLETE_PHRASE} ({vals}) for the api ({str(name).strip()})")
        else:
            parts.append(
                f"{ERROR_PHRASE} ({vals}) for the parameters ({str(name).strip()}) in the conversation history."
            )
    return json.dumps(parts, ensure_ascii=False)
