"""The verification protocol (pure decisions over reviews; the workspace store keeps the state).

Round r: two independent reviewers per item (``review`` stage). Both accept → accepted; both
reject → rejected; a disagreement or a proposed fix → the ``adjudicate`` stage, where a third
reviewer sees both reviews and decides: accept, reject, or fix with a final corrected version.
A fixed item is re-executed and re-checked automatically; if the checks pass it goes to review
round r + 1, else it is rejected with the checks' reasons. After ``max_rounds`` rounds an item
still unresolved is rejected as ``unresolved``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

ACCEPT, FIX, REJECT = "accept", "fix", "reject"


@dataclass
class Decision:
    outcome: str  # accepted | rejected | adjudicate | revise | pending
    reasons: list[str] = field(default_factory=list)
    correction: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


def decide_review(reviews: list[dict[str, Any]], needed: int = 2) -> Decision:
    """``reviews``: ``[{"user", "decision", "reasons", "correction"}]`` (cancelled ones left out).
    Pending until ``needed`` distinct reviewers have answered.

    >>> decide_review([{"user": 1, "decision": "accept"}, {"user": 2, "decision": "accept"}]).outcome
    'accepted'
    >>> decide_review([{"user": 1, "decision": "accept"}, {"user": 2, "decision": "reject", "reasons": ["wrong_call"]}]).outcome
    'adjudicate'
    >>> decide_review([{"user": 1, "decision": "accept"}]).outcome
    'pending'
    """
    by_user: dict[Any, dict[str, Any]] = {}
    for r in reviews:
        by_user[r.get("user")] = r  # a reviewer's latest answer counts once
    if len(by_user) < needed:
        return Decision("pending")
    chosen = list(by_user.values())[:needed]
    decisions = [r.get("decision") for r in chosen]
    detail = {"decisions": decisions, "users": [r.get("user") for r in chosen]}
    if all(d == ACCEPT for d in decisions):
        return Decision("accepted", detail=detail)
    if all(d == REJECT for d in decisions):
        reasons = sorted({x for r in chosen for x in (r.get("reasons") or [])}) or ["rejected_by_reviewers"]
        return Decision("rejected", reasons=reasons, detail=detail)
    return Decision("adjudicate", detail=detail)


def decide_adjudication(review: dict[str, Any] | None) -> Decision:
    """The third reviewer's final word.

    >>> decide_adjudication({"user": 3, "decision": "fix", "correction": '{"query": "Q?"}'}).outcome
    'revise'
    """
    if review is None:
        return Decision("pending")
    d = review.get("decision")
    if d == ACCEPT:
        return Decision("accepted", detail={"adjudicator": review.get("user")})
    if d == FIX:
        if not (review.get("correction") or "").strip():
            return Decision("rejected", reasons=["fix_without_correction"], detail={"adjudicator": review.get("user")})
        return Decision("revise", correction=review["correction"], detail={"adjudicator": review.get("user")})
    return Decision(
        "rejected",
        reasons=list(review.get("reasons") or []) or ["rejected_by_adjudicator"],
        detail={"adjudicator": review.get("user")},
    )


class CorrectionError(ValueError):
    """A correction that cannot be applied (with the reason)."""


def apply_correction(sample: dict[str, Any], correction: str) -> dict[str, Any]:
    """A revised sample from a reviewer's correction: JSON with any of ``query``, ``gold`` (a list of
    calls ``{"name", "arguments", "label"?}`` or steps), ``answer``; plain text replaces the query.
    Observations are cleared: the revised chain is re-executed before it is used.

    >>> apply_correction({"query": "old", "gold": []}, "How many tracks are there?")["query"]
    'How many tracks are there?'
    """
    text = correction.strip()
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    out = dict(sample)
    if not isinstance(value, dict):
        if sample.get("dialogue") is not None:
            raise CorrectionError("a dialogue correction must be a JSON object")
        out["query"] = text
        return out
    unknown = set(value) - {"query", "gold", "answer", "context"}
    if unknown:
        raise CorrectionError(f"a correction may set query, gold, answer and context, not {sorted(unknown)}")
    for key in ("query", "context", "answer"):
        if key in value:
            out[key] = value[key]
    if "gold" in value:
        if not isinstance(value["gold"], list):
            raise CorrectionError("gold must be a list of calls")
        steps = []
        for i, g in enumerate(value["gold"]):
            if not isinstance(g, dict):
                raise CorrectionError(f"gold[{i}] must be an object")
            call = g.get("call") if isinstance(g.get("call"), dict) else g
            if not isinstance(call.get("name"), str):
                raise CorrectionError(f"gold[{i}] has no tool name")
            steps.append(
                {
                    "thought": g.get("thought"),
                    "call": {
                        "name": call["name"],
                        "arguments": call.get("arguments") or {},
                        "label": call.get("label") or f"out_{i + 1}",
                    },
                    "observation": None,
                    "verdict": None,
                }
            )
        out["gold"] = steps
    return out
