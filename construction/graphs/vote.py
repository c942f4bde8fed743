"""Model vote: k voter models each judge a finished sample (accept / reject with a reason). The
votes go into ``metadata["votes"]``; the ``model_vote`` check decides from them, so the vote and
the decision rule stay separate. A voter whose reply cannot be read abstains, its raw reply kept.
"""

from __future__ import annotations

import json
from typing import Any

from benchsmith.construction import (
    ACCEPTED,
    BaseState,
    ConstructionGraph,
    ModelStep,
    ParseError,
    call_model,
    graph,
    json_object,
)
from benchsmith.schemas import Sample

MAX = 300


class VoteState(BaseState, total=False):
    sample: dict[str, Any]
    votes: list[dict[str, Any]]
    voters: int


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX else text[:MAX] + " …"


def _vars(state: dict[str, Any]) -> dict[str, Any]:
    s = state["sample"]
    calls = [
        f"{g['call']['name']}({json.dumps(g['call'].get('arguments') or {}, ensure_ascii=False)}) -> "
        f"{_short(g.get('observation'))}"
        for g in s.get("gold") or []
        if g.get("call")
    ]
    dialogue = [f"{m['role']}: {_short(m.get('content') or '')}" for m in s.get("dialogue") or []]
    answer = s.get("answer") or {"kind": "none"}
    shown = {
        "exact": lambda a: _short(a.get("value")),
        "reference": lambda a: _short(a.get("references", [""])[0]),
        "whitelist": lambda a: _short(a.get("whitelist")),
    }.get(answer.get("kind"), lambda a: "(not judged)")(answer)
    return {"query": s.get("query"), "dialogue": dialogue, "calls": calls, "answer": shown}


def _parse(state: dict[str, Any], text: str) -> dict[str, Any]:
    value = json_object(text, ("vote",))
    if value["vote"] not in ("accept", "reject"):
        raise ParseError("bad_vote", f"unknown vote {value['vote']!r}")
    return {"vote": value["vote"], "reason": str(value.get("reason") or "")[:300]}


VOTE = ModelStep(
    "vote",
    "voter",
    "construction/vote",
    _vars,
    _parse,
    schema=lambda s: {
        "type": "object",
        "properties": {"vote": {"enum": ["accept", "reject"]}, "reason": {"type": "string", "maxLength": 200}},
        "required": ["vote", "reason"],
    },
    max_tokens=96,
)


def vote_once(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    """One voter (the next in line) votes; one node run per voter, so a resumed run repeats at most one."""
    ctx = runtime.context
    voters = ctx.models.voter_models()
    i = len(state.get("votes") or [])
    text, record = call_model(VOTE, state, ctx, model=voters[i])
    try:
        vote = {"model": voters[i].name, "voter": i + 1, **_parse(state, text)}
        record["parsed"] = True
    except ParseError as exc:
        vote = {"model": voters[i].name, "voter": i + 1, "vote": "abstain", "reason": exc.reason, "raw": text}
        record["parsed"] = False
    return {"votes": [*(state.get("votes") or []), vote], "voters": len(voters), "calls": [record]}


def after_vote(state: dict[str, Any]) -> str:
    return "vote" if len(state["votes"]) < state["voters"] else "finish"


def finish(state: dict[str, Any]) -> dict[str, Any]:
    sample = dict(state["sample"])
    sample["metadata"] = {**(sample.get("metadata") or {}), "votes": state["votes"]}
    return {"status": ACCEPTED, "outputs": [sample]}


@graph("vote")
class VoteGraph(ConstructionGraph):
    description = "k voter models each accept or reject a finished sample; votes recorded for the model_vote check"
    roles = ("voter",)
    steps = (VOTE,)

    def read_items(self, source: Any) -> list[tuple[str, dict[str, Any]]]:

        from benchsmith.schemas import Split, read_jsonl

        path = Split.samples_file(source, fix="pass a samples JSONL file")
        return [(s.id, s.model_dump(mode="json")) for s in read_jsonl(path, Sample)]

    def initial(self, item_id: str, item: dict[str, Any], seed: int) -> dict[str, Any]:
        state = super().initial(item_id, item, seed)
        state.update({"sample": item, "votes": [], "voters": 0})
        return state

    def build(self) -> Any:
        from langgraph.graph import END, START, StateGraph

        g = StateGraph(VoteState)
        g.add_node("vote", vote_once)
        g.add_node("finish", finish)
        g.add_edge(START, "vote")
        g.add_conditional_edges("vote", after_vote, ["vote", "finish"])
        g.add_edge("finish", END)
        return g
