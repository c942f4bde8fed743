"""``model_vote``: the verdict of k judge models, recorded by the voting graph in
``sample.metadata["votes"]`` as ``[{"model": ..., "vote": "accept"|"reject", "reason": ...}]``.

* no votes recorded (key absent or empty list): passes with code ``skipped``, reason
  "no votes recorded";
* ``bad_votes``: the key is not a list of such objects;
* ``no_quorum``: fewer votes than ``context.vote_quorum``;
* ``majority_reject``: more than half of the votes reject (an even split rejects only with
  ``context.vote_ties_reject``); the reason quotes the rejecting models' reasons.

>>> from datetime import datetime, timezone
>>> from benchsmith.schemas import Sample
>>> prov = {"source": "doc", "method": "manual", "created_at": datetime(2024, 1, 1, tzinfo=timezone.utc)}
>>> votes = [{"model": "a", "vote": "reject", "reason": "ambiguous"}, {"model": "b", "vote": "reject"},
...          {"model": "c", "vote": "accept"}]
>>> r = model_vote(Sample(query="Which city is the largest?", provenance=prov, metadata={"votes": votes}))
>>> r.ok, r.code, r.reason
(False, 'majority_reject', '2 of 3 votes reject: a: ambiguous; b')
"""

from __future__ import annotations

from benchsmith.schemas import CheckResult, Sample

from ._engine import CheckContext, check, failed, passed, skipped

NAME = "model_vote"


@check(NAME)
def model_vote(sample: Sample, context: CheckContext | None = None) -> CheckResult:
    ctx = context or CheckContext()
    votes = sample.metadata.get("votes")
    if votes is None or votes == []:
        return skipped(NAME, "no votes recorded")
    if not isinstance(votes, list):
        return failed(NAME, "bad_votes", f"metadata.votes is a {type(votes).__name__}, not a list")
    for k, v in enumerate(votes, 1):
        if not isinstance(v, dict) or v.get("vote") not in ("accept", "reject"):
            return failed(
                NAME, "bad_votes", f"vote {k} is not {{'model', 'vote': 'accept'|'reject', 'reason'}}: {v!r}"[:300]
            )
    if len(votes) < ctx.vote_quorum:
        return failed(NAME, "no_quorum", f"{len(votes)} vote(s) recorded, the quorum is {ctx.vote_quorum}")
    rejects = [v for v in votes if v["vote"] == "reject"]
    n = len(votes)
    if 2 * len(rejects) > n or (ctx.vote_ties_reject and 2 * len(rejects) == n):
        why = "; ".join(
            f"{v.get('model', '?')}: {v['reason']}" if v.get("reason") else str(v.get("model", "?")) for v in rejects
        )
        return failed(NAME, "majority_reject", f"{len(rejects)} of {n} votes reject: {why}")
    return passed(NAME, f"{n - len(rejects)} of {n} votes accept")
