"""Pure NL2API checks: parse a predicted call sequence, intent / slot P/R/F1, sequence match,
answer comparison (official: floats rounded to the gold's decimals; strict: the answer spec).

Nothing here touches a database; execution lives in ``_plugin``.

>>> calls = parse_calls('[{"name": "f", "arguments": {"x": 1}, "label": "a"}, {"name": "g", "arguments": {}}]')
>>> [c["name"] for c in calls], calls[1]["label"]
(['f', 'g'], None)
>>> intent_prf(["f", "g"], ["f", "h"])
(0.5, 0.5, 0.5)
>>> decimals(0.25), decimals(3), decimals(1e-07)
(2, 0, 7)
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any, Sequence

from benchsmith.construction.nl2api import multiset_equal, ordered_equal
from benchsmith.eval import EvalCase, Mode, RecordResult, failed, passed, scorer
from benchsmith.eval.budget import TooDeep, check_limit, check_value
from benchsmith.eval.calls import CallShapeError, tool_call_parts
from benchsmith.schemas import loads_json, parse_reference

from ._rules import RULES, NL2APIRules

Call = dict[str, Any]


class PredictionError(ValueError):
    """A prediction that is not a tool-call sequence; ``code`` becomes the record's error type."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def _loads(text: str) -> Any:
    try:
        return loads_json(text)
    except json.JSONDecodeError:
        m = _FENCE.search(text)
        if m:
            try:
                return loads_json(m.group(1))
            except json.JSONDecodeError:
                pass
        raise PredictionError("parse_error", "the prediction is not JSON") from None


def one_call(item: Any, n: int) -> Call:
    try:
        name, args, entry = tool_call_parts(item)
    except CallShapeError as exc:
        raise PredictionError("malformed_call", f"call {n}: {exc}") from None
    label = entry.get("label")
    if label is not None and not isinstance(label, str):
        raise PredictionError("malformed_call", f"call {n} ({name}) has a label that is not a string")
    return {"name": name, "arguments": args, "label": label or None}


def parse_calls(prediction: str) -> list[Call]:
    """The predicted call sequence: a JSON list of ``{"name", "arguments", "label"?}`` (also a
    JSON string holding that list, a single call object, OpenAI ``tool_calls`` entries, or
    ``{"tool_calls": [...]}``). Raises :class:`PredictionError` (code ``too_deep`` for arguments
    nested deeper than :data:`~benchsmith.eval.budget.MAX_DEPTH`, which the label renaming, the slot
    strings and execution would walk), or ``OverBudget`` past the record's budget."""
    value: Any = _loads(prediction) if isinstance(prediction, str) else prediction
    for _ in range(2):  # a JSON string holding the JSON list
        if isinstance(value, str):
            value = _loads(value)
    if isinstance(value, dict):
        for key in ("tool_calls", "calls", "output"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
        else:
            value = [value]
    if not isinstance(value, list):
        raise PredictionError("malformed_sequence", f"expected a list of calls, got {type(value).__name__}")
    check_limit("calls", len(value))
    calls = [one_call(item, n) for n, item in enumerate(value, 1)]
    try:
        check_value([c["arguments"] for c in calls], prediction if isinstance(prediction, str) else None)
    except TooDeep as exc:
        raise PredictionError("too_deep", f"not scored: {exc}") from None
    return calls


def prf(tp: float, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    """Precision, recall, F1; an empty prediction against an empty gold is perfect.

    >>> prf(1, 2, 1)
    (0.5, 1.0, 0.6666666666666666)
    """
    if n_pred == 0 and n_gold == 0:
        return 1.0, 1.0, 1.0
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def intent_prf(pred_names: Sequence[str], gold_names: Sequence[str]) -> tuple[float, float, float]:
    """Intent P/R/F1 of one sample: API names compared as multisets."""
    tp = sum((Counter(pred_names) & Counter(gold_names)).values())
    return prf(tp, len(pred_names), len(gold_names))


def _canon(value: Any) -> Any:
    """Numbers by value (1 == 1.0), containers recursively (strict slot values)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    return str(value)


def slot_string(arg: str, value: Any, rules: NL2APIRules) -> str:
    """One ``arg = value`` string: the value as the model wrote it (JSON text), or with numbers
    compared by value (``rules.numbers_by_value``).

    >>> OFFICIAL, STRICT = RULES["official"], RULES["strict"]
    >>> slot_string("n", 2, OFFICIAL), slot_string("n", 2.0, OFFICIAL), slot_string("n", 2, STRICT)
    ('n = 2', 'n = 2.0', 'n = 2.0')
    """
    v = _canon(value) if rules.numbers_by_value else value
    return f"{arg} = {json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)}"


def _rename_refs(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        ref = parse_reference(value)
        if ref is not None and ref.label in mapping:
            return ref._replace(label=mapping[ref.label]).text
        return value
    if isinstance(value, dict):
        return {k: _rename_refs(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename_refs(v, mapping) for v in value]
    return value


def align_labels(pred: list[Call], gold: list[Call]) -> list[Call]:
    """Strict mode: rename the prediction's labels to the gold labels of the calls at the same
    positions, so that a chain is not penalised for naming its outputs differently.

    >>> p = [{"name": "f", "arguments": {}, "label": "x"}, {"name": "g", "arguments": {"d": "$x.k$"}, "label": None}]
    >>> g = [{"name": "f", "arguments": {}, "label": "var1"}, {"name": "g", "arguments": {"d": "$var1.k$"}, "label": None}]
    >>> align_labels(p, g)[1]["arguments"]
    {'d': '$var1.k$'}
    """
    mapping = {p["label"]: g["label"] for p, g in zip(pred, gold) if p["label"] and g["label"]}
    return [
        {
            **c,
            "label": mapping.get(c["label"], c["label"]) if c["label"] else None,
            "arguments": _rename_refs(c["arguments"], mapping),
        }
        for c in pred
    ]


def slot_prf(pred: list[Call], gold: list[Call], rules: NL2APIRules) -> tuple[float, float, float]:
    """Slot P/R/F1 over ``arg = value`` strings, counted only for calls whose intent is right:
    the k-th predicted call to an API pairs with the k-th gold call to it; unpaired calls add
    their strings to the denominators only."""
    gold_by_name: dict[str, list[Call]] = {}
    for g in gold:
        gold_by_name.setdefault(g["name"], []).append(g)
    seen: Counter[str] = Counter()
    tp = 0
    n_pred = sum(len(c["arguments"]) for c in pred)
    n_gold = sum(len(c["arguments"]) for c in gold)
    for c in pred:
        k = seen[c["name"]]
        seen[c["name"]] += 1
        partners = gold_by_name.get(c["name"], [])
        if k < len(partners):
            ps = Counter(slot_string(a, v, rules) for a, v in c["arguments"].items())
            gs = Counter(slot_string(a, v, rules) for a, v in partners[k]["arguments"].items())
            tp += sum((ps & gs).values())
    return prf(tp, n_pred, n_gold)


def sequence_match(pred: list[Call], gold: list[Call], rules: NL2APIRules) -> bool:
    """Full-sequence match: same length, and at each position the same API and the same
    arguments (exact JSON values, or numbers by value: ``rules.numbers_by_value``)."""
    if len(pred) != len(gold):
        return False
    for p, g in zip(pred, gold):
        if p["name"] != g["name"]:
            return False
        if rules.numbers_by_value:
            if _canon(p["arguments"]) != _canon(g["arguments"]):
                return False
        elif json.dumps(p["arguments"], sort_keys=True, default=str) != json.dumps(
            g["arguments"], sort_keys=True, default=str
        ):
            return False
    return True


def call_metrics(pred: list[Call], gold: list[Call], rules: NL2APIRules) -> dict[str, Any]:
    """Intent, slot and full-sequence figures of one sample."""
    if rules.align_labels:
        pred = align_labels(pred, gold)
    ip, ir, i_f = intent_prf([c["name"] for c in pred], [c["name"] for c in gold])
    sp, sr, s_f = slot_prf(pred, gold, rules)
    return {
        "intent_p": ip,
        "intent_r": ir,
        "intent_f1": i_f,
        "slot_p": sp,
        "slot_r": sr,
        "slot_f1": s_f,
        "sequence_match": sequence_match(pred, gold, rules),
    }


# ---- answers ------------------------------------------------------------------------------------
def decimals(value: Any) -> int:
    """Decimal places of a gold number as written (0 for integers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, int) or not math.isfinite(value) or value == int(value):
        return 0
    text = repr(float(value))
    if "e" in text:
        mant, _, exp = text.partition("e")
        frac = mant.partition(".")[2]
        return max(0, len(frac) - int(exp))
    return len(text.partition(".")[2])


def _official_cell(value: Any, digits: int) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (str, bytes)):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return repr(value)
        return round(float(value), digits)
    return json.dumps(value, sort_keys=True, default=str)


def answers_match(
    expected: Sequence[Sequence[Any]],
    got: Sequence[Sequence[Any]],
    *,
    ordered: bool,
    rules: NL2APIRules,
    tolerance: float = 1e-6,
) -> bool:
    """Compare answer rows. With ``rules.round_to_gold_decimals`` (official): every number rounded
    to the decimals the gold column is written with, then exact equality (multiset unless
    ``ordered``). Else the split's answer spec: numbers within ``tolerance`` (relative and
    absolute), order only where ``ordered``.

    >>> OFFICIAL, STRICT = RULES["official"], RULES["strict"]
    >>> answers_match([[3.14]], [[3.14159]], ordered=False, rules=OFFICIAL)
    True
    >>> answers_match([[3.14]], [[3.14159]], ordered=False, rules=STRICT)
    False
    >>> answers_match([[1], [2]], [[2], [1]], ordered=True, rules=STRICT)
    False
    """
    exp_rows: list[Sequence[Any]] = [tuple(r) for r in expected]
    got_rows: list[Sequence[Any]] = [tuple(r) for r in got]
    if rules.round_to_gold_decimals:
        if len(exp_rows) != len(got_rows) or any(len(r) != len(exp_rows[0]) for r in exp_rows + got_rows):
            return False
        width = len(exp_rows[0]) if exp_rows else 0
        digits = [max((decimals(r[j]) for r in exp_rows), default=0) for j in range(width)]
        e = [tuple(_official_cell(v, d) for v, d in zip(r, digits)) for r in exp_rows]
        g = [tuple(_official_cell(v, d) for v, d in zip(r, digits)) for r in got_rows]
        if ordered:
            return e == g
        return Counter(map(repr, e)) == Counter(map(repr, g))
    rel_tol, abs_tol = tolerance, max(tolerance * 1e-3, 1e-12)
    if ordered:
        return ordered_equal(exp_rows, got_rows, rel_tol=rel_tol, abs_tol=abs_tol)
    return multiset_equal(exp_rows, got_rows, rel_tol=rel_tol, abs_tol=abs_tol)


# ---- the registered leaf check --------------------------------------------------------------------
@scorer("nl2api.calls")
def score_calls(case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
    """Intent / slot / full-sequence check of one record (no execution): ok on a full-sequence match."""
    try:
        pred = parse_calls(prediction)
    except PredictionError as exc:
        return failed(case, exc.code, str(exc))
    gold = case.gold["calls"]
    m = call_metrics(pred, gold, RULES[mode])
    if m["sequence_match"]:
        return passed(case, 1.0, **m)
    return failed(case, "sequence_mismatch", "the predicted sequence differs from the gold one", **m)
