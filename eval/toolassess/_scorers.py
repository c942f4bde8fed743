"""Pure ToolAssess checks: awareness labels, tool selection re-mapped per record to binary
true-tool / false-tool labels (with a per-candidate view as an extra), multi-task scenarios,
classification figures, variance-contribution weights and TAS.

>>> norm_label("Requires tool"), norm_label("cannot be completed"), norm_label("maybe")
('requires_tool', 'cannot_complete', None)
>>> selection_labels({"a"}, {"a"}), selection_labels({"a"}, {"b"}), selection_labels(set(), {"b"})
(('true_tool', 'true_tool'), ('true_tool', 'false_tool'), ('false_tool', 'true_tool'))
>>> selection_decisions(["a", "b", "c"], {"a"}, {"a", "c"})
[(True, True), (False, False), (False, True)]
"""

from __future__ import annotations

import json
import re
from collections import Counter
from statistics import pvariance
from typing import Any, Iterable, Mapping, Sequence, TypedDict

from benchsmith.eval import EvalCase, Mode, RecordResult, failed, passed, scorer
from benchsmith.eval.budget import check_limit, check_value
from benchsmith.schemas import UserError

AWARENESS_CLASSES = ("requires_tool", "no_tool", "cannot_complete")
SELECTION_CLASSES = ("true_tool", "false_tool")

_ALIASES = {
    "requires_tool": "requires_tool",
    "require_tool": "requires_tool",
    "requires_a_tool": "requires_tool",
    "needs_tool": "requires_tool",
    "need_tool": "requires_tool",
    "tool_required": "requires_tool",
    "use_tool": "requires_tool",
    "no_tool": "no_tool",
    "no_tool_needed": "no_tool",
    "no_tool_required": "no_tool",
    "not_required": "no_tool",
    "cannot_complete": "cannot_complete",
    "cannot_be_completed": "cannot_complete",
    "can_not_be_completed": "cannot_complete",
    "cannot_be_complete": "cannot_complete",
    "impossible": "cannot_complete",
    "unable_to_complete": "cannot_complete",
}


class AnswerError(ValueError):
    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


def norm_label(text: Any) -> str | None:
    """The awareness class named by ``text`` (case, spaces, hyphens ignored), or None."""
    if not isinstance(text, str):
        return None
    key = re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")
    return _ALIASES.get(key)


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or a number of 4,300+ digits (as loads_json)
        return text
    check_value(value, text)
    return value


def parse_awareness(prediction: Any) -> str:
    """A class from ``"requires_tool"``-like text or ``{"label": ...}``; raises AnswerError."""
    value = _json(prediction)
    if isinstance(value, dict):
        value = value.get("label", value.get("answer"))
    label = norm_label(value)
    if label is None:
        raise AnswerError("bad_label", f"not one of {', '.join(AWARENESS_CLASSES)}")
    return label


def parse_selection(prediction: Any) -> set[str]:
    """Selected tool names: a JSON list of names or calls, one name, ``{"tools": [...]}``;
    ``"none"`` / ``[]`` select nothing. An empty reply or JSON ``null`` is no answer at all (it
    does not claim that no tool fits): AnswerError, like any other unreadable reply."""
    value = _json(prediction)
    if isinstance(value, dict):
        if "tools" in value:
            value = value["tools"]
        elif "name" in value:
            value = [value]
        else:
            raise AnswerError("malformed_selection", "an object needs 'tools' or 'name'")
    if value is None or (isinstance(value, str) and not value.strip()):
        raise AnswerError("empty_answer", 'no answer (an empty reply or null); write "none" or [] when no tool fits')
    if isinstance(value, str):
        text = value.strip()
        return set() if text.lower() in ("none", "no_tool") else {text}
    if not isinstance(value, list):
        raise AnswerError("malformed_selection", f"expected tool names, got {type(value).__name__}")
    check_limit("calls", len(value))
    out = set()
    for item in value:
        if isinstance(item, dict):
            item = item.get("name")
        if not isinstance(item, str) or not item.strip():
            raise AnswerError("malformed_selection", "a selected tool is not a name")
        out.add(item.strip())
    return out


def selection_labels(gold: set[str], selected: set[str] | None) -> tuple[str, str]:
    """(gold, predicted) binary label of one selection record, ToolAssess's definition.

    The gold label is ``true_tool`` when a candidate fits the request (``answer_tools`` is not
    empty) and ``false_tool`` when every candidate is a false tool. The predicted label is the
    gold label when the record is right (the selected set is the gold set: the fitting tools, or
    nothing when none fits) and the other label when it is wrong: choosing a tool when none fits
    predicts ``true_tool``; choosing nothing, a wrong tool or an unreadable answer when a tool
    fits predicts ``false_tool``. ``selected=None`` is an unreadable or missing answer.
    """
    g = "true_tool" if gold else "false_tool"
    if selected is not None and selected == gold:
        return g, g
    return g, ("false_tool" if g == "true_tool" else "true_tool")


def selection_decisions(candidates: Sequence[str], gold: set[str], selected: set[str]) -> list[tuple[bool, bool]]:
    """(gold is true-tool, predicted true-tool) per candidate; a selected name that is not a
    candidate adds a (False, True) decision (a false tool chosen)."""
    out = [(c in gold, c in selected) for c in candidates]
    out.extend((False, True) for s in sorted(selected - set(candidates)))
    return out


def classification(pairs: Iterable[tuple[str, str | None]], classes: Sequence[str]) -> dict[str, Any]:
    """Accuracy and macro precision / recall / F1 of (gold, predicted) pairs. Per class
    P = TP / predicted, R = TP / gold (0 when the denominator is 0); the macro average runs
    over the classes that occur in the gold labels or in the predictions.

    >>> f = classification([("a", "a"), ("b", "a"), ("b", "b")], ("a", "b"))
    >>> round(f["accuracy"], 3), round(f["precision"], 3), round(f["recall"], 3)
    (0.667, 0.75, 0.75)
    """
    return classification_counts(Counter(pairs), classes)


def classification_counts(confusion: Mapping[tuple[Any, Any], int], classes: Sequence[str]) -> dict[str, Any]:
    """:func:`classification` of the pairs counted in ``confusion`` ((gold, predicted) -> how
    many times): the figures are ratios of counts, so a running :class:`~collections.Counter`
    of the pairs gives them without a list of every pair."""
    per: dict[str, dict[str, float]] = {}
    for c in classes:
        tp = confusion.get((c, c), 0)
        n_pred = sum(n for (_, p), n in confusion.items() if p == c)
        n_gold = sum(n for (g, _), n in confusion.items() if g == c)
        if n_pred == 0 and n_gold == 0:
            continue
        pr = tp / n_pred if n_pred else 0.0
        rc = tp / n_gold if n_gold else 0.0
        per[c] = {"precision": pr, "recall": rc, "f1": 2 * pr * rc / (pr + rc) if pr + rc else 0.0, "support": n_gold}
    n = len(per)
    total = sum(confusion.values())
    return {
        "n": total,
        "accuracy": sum(k for (g, p), k in confusion.items() if g == p) / total if total else 0.0,
        "precision": sum(v["precision"] for v in per.values()) / n if n else 0.0,
        "recall": sum(v["recall"] for v in per.values()) / n if n else 0.0,
        "f1": sum(v["f1"] for v in per.values()) / n if n else 0.0,
        "per_class": per,
    }


# ---- variance-contribution weights and TAS --------------------------------------------------------
def variance_weights(vectors: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """W_i = Var(X_i) / sum_j Var(X_j), X_i = metric i across the models (population variance).
    With fewer than two models, or no variance at all, every metric weighs the same.

    >>> variance_weights({"m1": {"a": 0.2, "b": 0.5}, "m2": {"a": 0.6, "b": 0.5}})
    {'a': 1.0, 'b': 0.0}
    """
    if not vectors:
        return {}
    metrics = _common_metrics(vectors)
    if not metrics:
        return {}
    var = {k: pvariance([float(v[k]) for v in vectors.values()]) if len(vectors) > 1 else 0.0 for k in metrics}
    total = sum(var.values())
    if total <= 0:
        return {k: 1.0 / len(metrics) for k in metrics}
    return {k: var[k] / total for k in metrics}


def _common_metrics(vectors: Mapping[str, Mapping[str, float]]) -> list[str]:
    keysets = [{k for k, v in d.items() if v is not None} for d in vectors.values()]
    if any(ks != keysets[0] for ks in keysets):
        raise UserError(
            "the models were scored on different metrics: "
            + "; ".join(f"{m}: {sorted(ks)}" for m, ks in zip(vectors, keysets)),
            fix="score every model on the same ToolAssess data before combining them",
        )
    return sorted(keysets[0])


def weighted(vectors: Mapping[str, Mapping[str, float]], weights: Mapping[str, float]) -> dict[str, float]:
    return {m: sum(weights[k] * float(v[k]) for k in weights) for m, v in vectors.items()}


def tas(model_scores: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """Tool-use Assessment Score of several models.

    ``model_scores[model]`` maps ``"<situation>.<metric>"`` to a figure in [0, 1] (the
    ``tas_inputs`` of each model's scores.json; a key without a dot is its own situation).
    Within each situation the metrics are combined with variance-contribution weights
    computed across the models; the situation scores are then combined the same way into TAS.

    >>> r = tas({"m1": {"awareness.accuracy": 0.9, "selection.f1": 0.5},
    ...          "m2": {"awareness.accuracy": 0.5, "selection.f1": 0.5}})
    >>> r["situation_weights"], r["tas"]
    ({'awareness': 1.0, 'selection': 0.0}, {'m1': 0.9, 'm2': 0.5})
    """
    if not model_scores:
        return {"metric_weights": {}, "situation_scores": {}, "situation_weights": {}, "tas": {}}
    metrics = _common_metrics(model_scores)
    situations: dict[str, list[str]] = {}
    for k in metrics:
        situations.setdefault(k.split(".", 1)[0], []).append(k)
    metric_weights: dict[str, dict[str, float]] = {}
    sit_scores: dict[str, dict[str, float]] = {m: {} for m in model_scores}
    for sit, keys in situations.items():
        sub = {m: {k: float(v[k]) for k in keys} for m, v in model_scores.items()}
        w = variance_weights(sub)
        metric_weights[sit] = w
        for m, s in weighted(sub, w).items():
            sit_scores[m][sit] = s
    sw = variance_weights(sit_scores)
    return {
        "metric_weights": metric_weights,
        "situation_scores": sit_scores,
        "situation_weights": sw,
        "tas": weighted(sit_scores, sw),
    }


# ---- registered leaf checks -----------------------------------------------------------------------
@scorer("toolassess.awareness")
def score_awareness(case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
    """One awareness record: the predicted class must equal the gold class."""
    gold = case.gold["label"]
    try:
        pred = parse_awareness(prediction)
    except AnswerError as exc:
        return failed(case, exc.code, str(exc), gold=gold, pred=None)
    if pred == gold:
        return passed(case, 1.0, gold=gold, pred=pred)
    return failed(case, "wrong_label", f"expected {gold}, got {pred}", gold=gold, pred=pred)


@scorer("toolassess.selection")
def score_selection(case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
    """One selection record, scored per record (both modes): right (1.0) iff the selected set is
    the gold set, else 0.0. Details: the record's binary ``gold_label`` and ``pred_label`` (see
    :func:`selection_labels`) and, for the per-candidate extra figure, the candidate
    ``decisions`` and ``candidate_share`` (the share of right candidate decisions)."""
    candidates = case.gold["candidates"]
    gold = set(case.gold["answer_tools"])
    try:
        selected = parse_selection(prediction)
    except AnswerError as exc:
        decisions = [(c in gold, False) for c in candidates]
        return failed(
            case, exc.code, str(exc), **_labels(gold, None), decisions=decisions, candidate_share=_share(decisions)
        )
    decisions = selection_decisions(candidates, gold, selected)
    labels = _labels(gold, selected)
    if selected == gold:
        return passed(case, 1.0, **labels, decisions=decisions, candidate_share=1.0)
    err = "unknown_tool" if selected - set(candidates) else "wrong_selection"
    return failed(
        case,
        err,
        f"expected {sorted(gold) or 'no tool'}, got {sorted(selected) or 'no tool'}",
        **labels,
        decisions=decisions,
        candidate_share=_share(decisions),
    )


class _Labels(TypedDict):
    gold_label: str
    pred_label: str


def _labels(gold: set[str], selected: set[str] | None) -> _Labels:
    g, p = selection_labels(gold, selected)
    return {"gold_label": g, "pred_label": p}


def _share(decisions: list[tuple[bool, bool]]) -> float:
    return sum(1 for g, p in decisions if g == p) / len(decisions) if decisions else 1.0
