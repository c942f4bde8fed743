"""Simulated reviewers: distinct Label Studio users whose annotations are posted through the API.
For tests (scripted policies) and for non-interactive runs of the main job (verdicts from the
automated checks, marked as supplied automatically in the datasheet)."""

from __future__ import annotations

from typing import Any, Callable

from benchsmith.schemas import Sample

REVIEWERS = ("auto-reviewer-1", "auto-reviewer-2")
ADJUDICATOR = "auto-adjudicator"
# the first failing check -> the review form's rejection reason
REASON_OF_CHECK = {
    "query_clarity": "unclear_query",
    "gold_signature": "wrong_call",
    "gold_references": "wrong_call",
    "executability": "not_executable",
    "dialogue_consistency": "other",
    "tool_docs": "other",
    "model_vote": "other",
}

Policy = Callable[[str, int, dict[str, Any]], dict[str, Any]]


def checks_policy(context: Any) -> Policy:
    """Verdicts from the automated checks: a reviewer accepts what passes every rule check and
    rejects the rest with the matching reason; the second reviewer also follows recorded model
    votes (a majority of reject votes → reject); the adjudicator decides by the checks alone."""
    from benchsmith.construction.checks import DEFAULT_CHECKS, run_checks

    rules = [c for c in DEFAULT_CHECKS if c != "model_vote"]

    def policy(stage: str, reviewer: int, item: dict[str, Any]) -> dict[str, Any]:
        sample = Sample.model_validate(item["sample"])
        report = run_checks(sample, rules, context)
        if not report.accepted:
            first = report.rejected_by
            return {
                "decision": "reject",
                "reasons": [REASON_OF_CHECK.get(first.name, "other")],
                "comment": f"automatic: {first.name}: {first.code}",
            }
        votes = [v.get("vote") for v in sample.metadata.get("votes") or [] if v.get("vote") in ("accept", "reject")]
        if stage == "review" and reviewer == 2 and votes and votes.count("reject") > len(votes) / 2:
            return {"decision": "reject", "reasons": ["other"], "comment": "automatic: the model votes reject"}
        return {"decision": "accept", "comment": "automatic: every rule check passes"}

    return policy


def simulate(
    workspace: Any, ls: Any, policy: Policy, *, reviewers: tuple[str, ...] = REVIEWERS, adjudicator: str = ADJUDICATOR
) -> dict[str, int]:
    """Post the missing annotations of every open task: two reviewers per review task, one
    adjudicator per adjudication task. Idempotent: a user who already annotated a task is skipped,
    and a user or an annotation whose creation reply was lost is found by ``ls`` before it is retried
    (``ensure_user`` by username, ``annotate`` by the annotation's marker), not created twice."""
    from .configs import Review, result_for

    users = {name: ls.ensure_user(name) for name in (*reviewers, adjudicator)}
    for name, uid in users.items():
        workspace.store.add_user(uid, name, simulated=True)
    posted = {"review": 0, "adjudicate": 0}
    items = {it["sample_id"]: it for it in workspace.store.items() if it["status"] in ("review", "adjudicate")}
    for p in workspace.store.projects():
        tasks = {
            sid: tid
            for sid, tid in workspace.store.task_ids(p["project_id"]).items()
            if sid in items and items[sid]["status"] == p["stage"] and items[sid]["round"] == p["round"]
        }
        if not tasks:
            continue
        done: dict[int, set[int]] = {}
        for t in ls.annotated_tasks(p["project_id"], tasks.values()):
            done[int(t["id"])] = {a.get("completed_by") for a in t.get("annotations") or []}
        who = [(i + 1, reviewers[i]) for i in range(len(reviewers))] if p["stage"] == "review" else [(1, adjudicator)]
        for sid, tid in tasks.items():
            item = items[sid]
            for idx, name in who:
                if users[name] in done.get(tid, set()):
                    continue
                verdict = policy(p["stage"], idx, item)
                ls.annotate(tid, result_for(item["kind"], Review.model_validate(verdict)), users[name])
                posted[p["stage"]] += 1
    return posted
