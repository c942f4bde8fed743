"""Pure GTA checks: parse an assistant turn, whitelist/blacklist answers, subjective answers by
best cosine over the references, per-category tool counts.

>>> whitelist_pass("The total is 42 dollars.", [["42", "forty-two"]], None)
True
>>> whitelist_pass("It is 42, not 24.", [["42"]], [["24"]])
False
>>> parse_turn('{"thought": "look", "tool_calls": [{"name": "OCR", "arguments": "{\\\\"image\\\\": \\\\"a.jpg\\\\"}"}]}')["tool_calls"]
[{'name': 'OCR', 'arguments': {'image': 'a.jpg'}}]
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any, Callable, Iterable, Sequence

from benchsmith.eval import CallShapeError, EvalCase, Mode, RecordResult, failed, passed, scorer, tool_call_parts

TOOL_CATEGORIES: dict[str, str] = {
    "OCR": "perception", "ImageDescription": "perception", "RegionAttributeDescription": "perception",
    "TextToBbox": "perception",
    "DrawBox": "operation", "AddText": "operation", "GoogleSearch": "operation",
    "Calculator": "logic", "Solver": "logic", "Plot": "logic", "MathOCR": "logic", "CountGivenObject": "logic",
    "TextToImage": "creativity", "ImageStylization": "creativity",
}
CATEGORIES = ("perception", "operation", "logic", "creativity")

Similarity = Callable[[str, str], float]


class TurnError(ValueError):
    """A prediction that is not an assistant turn; ``code`` becomes the record's error type."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


# ---- parsing ------------------------------------------------------------------------------------
def norm_call(item: Any) -> dict[str, Any]:
    """``{"name", "arguments"}`` from a GTA / OpenAI tool-call entry (arguments may be JSON text)."""
    try:
        name, args, _ = tool_call_parts(item)
    except CallShapeError as exc:
        raise TurnError("malformed_call", str(exc)) from None
    return {"name": name, "arguments": args}


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None


def parse_turn(prediction: str) -> dict[str, Any]:
    """An assistant turn: ``{"kind": "tool"|"answer", "tool_calls", "content", "thought"}``.

    A JSON object ``{thought, tool_calls}`` is a tool turn, ``{thought, content}`` an answer;
    any text that is not a JSON object is an answer with that text. Raises :class:`TurnError`
    on a JSON object whose calls are malformed.
    """
    obj = _json(prediction) if isinstance(prediction, str) else prediction
    if isinstance(obj, str):  # a JSON string holding the turn
        inner = _json(obj)
        obj = inner if isinstance(inner, dict) else obj
    if not isinstance(obj, dict):
        return {"kind": "answer", "tool_calls": [], "content": prediction if isinstance(prediction, str) else "",
                "thought": None}
    calls = obj.get("tool_calls")
    if calls not in (None, []):
        if not isinstance(calls, list):
            raise TurnError("malformed_call", "tool_calls is not a list")
        return {"kind": "tool", "tool_calls": [norm_call(c) for c in calls], "content": None,
                "thought": obj.get("thought")}
    content = obj.get("content", obj.get("answer"))
    if content is None:
        raise TurnError("empty_turn", "the turn has neither tool_calls nor content")
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    return {"kind": "answer", "tool_calls": [], "content": content, "thought": obj.get("thought")}


def parse_final(prediction: str) -> tuple[str, list[dict[str, Any]]]:
    """End-to-end prediction: (final answer text, every tool call made).

    Accepted: ``{"answer"|"content": text, "tool_calls": [...]}``, a list of chat messages
    (assistant ``tool_calls`` collected, the last assistant ``content`` is the answer), or plain
    text (an answer without calls).
    """
    obj = _json(prediction) if isinstance(prediction, str) else prediction
    if isinstance(obj, dict):
        calls = obj.get("tool_calls") or []
        if not isinstance(calls, list):
            raise TurnError("malformed_call", "tool_calls is not a list")
        answer = obj.get("answer", obj.get("content"))
        if answer is not None and not isinstance(answer, str):
            answer = json.dumps(answer, ensure_ascii=False)
        return answer or "", [norm_call(c) for c in calls]
    if isinstance(obj, list):
        calls, answer = [], ""
        for msg in obj:
            if not isinstance(msg, dict):
                raise TurnError("malformed_trajectory", "a message of the trajectory is not an object")
            if msg.get("role", "assistant") != "assistant":
                continue
            tc = msg.get("tool_calls") or []
            if not isinstance(tc, list):
                raise TurnError("malformed_call", "tool_calls is not a list")
            calls.extend(norm_call(c) for c in tc)
            if isinstance(msg.get("content"), str) and msg["content"] and not tc:
                answer = msg["content"]
        return answer, calls
    return (prediction if isinstance(prediction, str) else ""), []


# ---- answers ------------------------------------------------------------------------------------
def _groups(value: Any) -> list[list[str]]:
    if not value:
        return []
    out = []
    for g in value:
        if isinstance(g, (list, tuple)):
            out.append([str(a) for a in g if str(a)])
        elif g is not None and str(g):
            out.append([str(g)])
    return [g for g in out if g]


def _pattern(aliases: Sequence[str], mode: Mode) -> re.Pattern[str]:
    alt = "|".join(re.escape(a) for a in aliases)
    if mode == "official":  # word boundaries, as GTA writes them (never match before '$', after '%', ...)
        return re.compile(rf"\b({alt})\b", re.IGNORECASE)
    return re.compile(rf"(?<!\w)({alt})(?!\w)", re.IGNORECASE)


def whitelist_pass(text: str, whitelist: Any, blacklist: Any, mode: Mode = "official") -> bool:
    """Every whitelist group matches (any alias, whole word, case-insensitive) and no blacklist
    alias does. Strict mode uses "no word character around" instead of ``\\b`` so that aliases
    starting or ending with punctuation (``$5``, ``20%``) can match."""
    groups = _groups(whitelist)
    if not groups:
        return False
    if not all(_pattern(g, mode).search(text) for g in groups):
        return False
    return not any(_pattern(g, mode).search(text) for g in _groups(blacklist))


def answer_kind(gt: Any) -> str:
    """``objective`` (whitelist), ``subjective`` (references) or ``none`` (image generation)."""
    if isinstance(gt, dict) and gt.get("whitelist"):
        return "objective"
    if isinstance(gt, list) and any(isinstance(r, str) and r.strip() for r in gt):
        return "subjective"
    if isinstance(gt, str) and gt.strip():
        return "subjective"
    return "none"


def references(gt: Any) -> list[str]:
    refs = [gt] if isinstance(gt, str) else gt if isinstance(gt, list) else []
    return [r for r in refs if isinstance(r, str) and r.strip()]


def answer_score(text: str, gt: Any, mode: Mode, similarity: Similarity | None) -> tuple[float, str | None]:
    """(score in [0, 1], error type or None). Subjective: best cosine over the references,
    negative cosines count 0; an exact copy of a reference scores 1 without an embedder."""
    kind = answer_kind(gt)
    if kind == "objective":
        return (1.0 if whitelist_pass(text, gt.get("whitelist"), gt.get("blacklist"), mode) else 0.0), None
    if kind == "subjective":
        refs = references(gt)
        if any(text.strip() == r.strip() for r in refs):
            return 1.0, None
        if similarity is None:
            return 0.0, "no_embedder"
        if not text.strip():
            return 0.0, None
        try:
            best = max(float(similarity(text, r)) for r in refs)
        except Exception:  # noqa: BLE001 - a missing or broken embedding model fails this record only
            return 0.0, "no_embedder"
        return (0.0 if math.isnan(best) else min(1.0, max(0.0, best))), None
    return 0.0, None


# ---- tool categories ----------------------------------------------------------------------------
def category_counts(pred: Iterable[str], gold: Iterable[str], mode: Mode) -> dict[str, dict[str, int]]:
    """Per category: predicted calls, gold calls, and true positives. Strict: matched pairs (the
    multiset intersection of tool names). Official: gold calls whose tool was predicted at
    least once (counted per gold call, so it can exceed the predictions).

    >>> category_counts(["OCR"], ["OCR", "OCR"], "official")["perception"]
    {'pred': 1, 'gold': 2, 'tp': 2}
    >>> category_counts(["OCR"], ["OCR", "OCR"], "strict")["perception"]
    {'pred': 1, 'gold': 2, 'tp': 1}
    """
    p, g = Counter(pred), Counter(gold)
    out = {c: {"pred": 0, "gold": 0, "tp": 0} for c in CATEGORIES}
    for name, n in p.items():
        if name in TOOL_CATEGORIES:
            out[TOOL_CATEGORIES[name]]["pred"] += n
    for name, n in g.items():
        if name in TOOL_CATEGORIES:
            c = out[TOOL_CATEGORIES[name]]
            c["gold"] += n
            if mode == "official":
                c["tp"] += n if name in p else 0
            else:
                c["tp"] += min(n, p.get(name, 0))
    return out


def f1_from_counts(tp: float, n_pred: float, n_gold: float) -> dict[str, float | None]:
    if n_pred == 0 and n_gold == 0:
        return {"precision": None, "recall": None, "f1": None}
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


# ---- the registered leaf check: one step-by-step tool turn -----------------------------------------
@scorer("gta.tool_step")
def score_tool_step(case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
    """A gold tool turn: right type (InstAcc), same tool names (ToolAcc), same arguments (ArgAcc)."""
    try:
        turn = parse_turn(prediction)
    except TurnError as exc:
        return failed(case, exc.code, str(exc), inst=False, tool=False, arg=False)
    gold = case.gold["tool_calls"]
    inst = turn["kind"] == "tool"
    tool = inst and [c["name"] for c in turn["tool_calls"]] == [c["name"] for c in gold]
    arg = tool and all(p["arguments"] == g["arguments"] for p, g in zip(turn["tool_calls"], gold))
    if arg:
        return passed(case, 1.0, inst=True, tool=True, arg=True)
    err = "wrong_arguments" if tool else "wrong_tool" if inst else "type_mismatch"
    return failed(case, err, f"expected {[c['name'] for c in gold]} with the gold arguments", inst=inst, tool=tool,
                  arg=arg)
