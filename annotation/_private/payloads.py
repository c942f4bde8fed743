"""Label Studio task payloads: a sample's data for the config of its kind, and a pre-annotation
from the automated checks and the model pre-screen.

>>> from datetime import datetime, timezone
>>> from benchsmith.schemas import Sample
>>> prov = {"source": "doc", "method": "manual", "created_at": datetime(2024, 1, 1, tzinfo=timezone.utc)}
>>> s = Sample(query="What is the weather in Paris?", provenance=prov,
...            gold=[{"call": {"name": "get_weather", "arguments": {"city": "Paris"}}, "verdict": "success"}])
>>> sample_kind(s)
'chain'
>>> task = task_payload(s, "chain")
>>> sorted(task["data"])
['answer', 'bs_id', 'check_summary', 'query', 'setup_text', 'state_text', 'steps', 'tools_text']
>>> task["data"]["steps"][0]["call"]
'{"name": "get_weather", "arguments": {"city": "Paris"}}'
>>> [r["value"] for r in task["predictions"][0]["result"]]
[{'choices': ['success']}]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from benchsmith.construction import state_changes
from benchsmith.construction.checks import CheckReport
from benchsmith.construction.sandbox import state_mismatches
from benchsmith.schemas import AnswerSpec, CheckResult, Sample, ToolCall, UserError

from .configs import KINDS, STAGES, Review, label_config, result_for, review_text

OBSERVATION_LIMIT = 1500  # characters of an observation (or a tool message, a thought) shown per step
TOOLS_LIMIT = 3000  # characters of the tools summary
MODEL_VERSION = "checks+prescreen"

# Which rejection reason a failing check stands for; (check, code) pairs override the check's default.
CHECK_REASONS = {
    "tool_docs": "other",
    "query_clarity": "unclear_query",
    "gold_signature": "wrong_call",
    "gold_references": "wrong_call",
    "dialogue_consistency": "wrong_call",
    "executability": "not_executable",
    "model_vote": "other",
    "near_duplicate": "duplicate",
}
CODE_REASONS = {
    ("dialogue_consistency", "no_final_answer"): "wrong_answer",
}

EXPECTED = {
    "incomplete": "Missing parameters: make no call yet; ask the user for the missing value(s)",
    "error_param": "Wrong values: make no call; point out the wrong value(s) to the user",
    "irrelevant": "No call: say that the tools cannot serve this request",
    "no_tool": "No call: answer directly, no tool is needed",
    "cannot_complete": "No call: say that the tools lack the action this request needs",
}


def sample_kind(sample: Sample) -> str:
    """``special`` (``"special"`` in the categories or ``metadata.special`` set), ``dialogue``, ``chain``
    (a gold step with a call) or ``query``, checked in that order.

    >>> from datetime import datetime, timezone
    >>> prov = {"source": "doc", "method": "manual", "created_at": datetime(2024, 1, 1, tzinfo=timezone.utc)}
    >>> sample_kind(Sample(query="What is 2+2?", provenance=prov))
    'query'
    >>> sample_kind(Sample(query="Book it.", categories=["special", "incomplete"], provenance=prov))
    'special'
    """
    if "special" in sample.categories or sample.metadata.get("special"):
        return "special"
    if sample.dialogue is not None:
        return "dialogue"
    if any(step.call is not None for step in sample.gold):
        return "chain"
    return "query"


def truncate(text: str, limit: int = OBSERVATION_LIMIT) -> str:
    """``text`` cut to ``limit`` characters with a marker saying how much was left out.

    >>> truncate("abcdef", 4)
    'abcd … [truncated: 2 more characters]'
    >>> truncate("abc", 4)
    'abc'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … [truncated: {len(text) - limit} more characters]"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _shown(value: Any, limit: int = OBSERVATION_LIMIT) -> str:
    return truncate(value if isinstance(value, str) else _dumps(value), limit)


def call_text(call: ToolCall | None) -> str:
    """A call as the JSON a reviewer can copy into a correction.

    >>> call_text(ToolCall(name="f", arguments={"x": 1}, label="out"))
    '{"name": "f", "arguments": {"x": 1}, "label": "out"}'
    """
    if call is None:
        return "(no call)"
    return _dumps(call.model_dump(mode="json", exclude_none=True))


def tools_text(sample: Sample) -> str:
    """One short line per tool: ``name(required, optional?): description``."""
    lines = []
    for tool in sample.tools:
        params = [p if p in tool.parameters.required else f"{p}?" for p in tool.parameters.properties]
        description = " ".join(tool.description.split())
        lines.append(f"{tool.name}({', '.join(params)}): {truncate(description, 160)}")
    return truncate("\n".join(lines), TOOLS_LIMIT) if lines else "(no tools)"


def setup_text(sample: Sample) -> str:
    """The context and the set-up calls run before the task, or ``(none)``."""
    lines = []
    if sample.context:
        lines.append("Context: " + truncate(sample.context))
    lines += [f"set-up: {call_text(call)}" for call in sample.setup]
    return "\n".join(lines) if lines else "(none)"


def answer_text(answer: AnswerSpec) -> str:
    """How the final answer is judged, in words.

    >>> from benchsmith.schemas import WhitelistAnswer
    >>> print(answer_text(WhitelistAnswer(whitelist=[["Paris"], ["12", "twelve"]], blacklist=[["London"]])))
    must mention: Paris; and: 12 | twelve
    must not mention: London
    """
    if answer.kind == "exact":
        return truncate("exact: " + _dumps(answer.value))
    if answer.kind == "whitelist":
        lines = ["must mention: " + "; and: ".join(" | ".join(group) for group in answer.whitelist)]
        if answer.blacklist:
            lines.append("must not mention: " + "; ".join(" | ".join(group) for group in answer.blacklist))
        return truncate("\n".join(lines))
    if answer.kind == "reference":
        return truncate("\n".join(f"reference: {r}" for r in answer.references))
    return "(no final answer is judged)"


def state_text(sample: Sample) -> str:
    """What the gold leaves changed in a stateful environment: the chain's changes from its start
    state (``metadata.start_state`` → ``metadata.expected_state``), or where a dialogue's final state
    misses the expected one; ``(no state recorded)`` otherwise.

    >>> from datetime import datetime, timezone
    >>> prov = {"source": "doc", "method": "manual", "created_at": datetime(2024, 1, 1, tzinfo=timezone.utc)}
    >>> meta = {"start_state": {"files": {"a": "1"}}, "expected_state": {"files": {"a": "2"}}}
    >>> print(state_text(Sample(query="Edit a.", provenance=prov, metadata=meta)))
    1 change from the start state:
    files.a: 1 → 2
    """
    meta = sample.metadata
    expected = meta.get("expected_state")
    if "start_state" in meta and expected is not None:
        changes = state_changes(meta["start_state"], expected)
        if not changes:
            return "no change from the start state (the task only reads)"
        head = f"{len(changes)} change{'s' if len(changes) != 1 else ''} from the start state:"
        return truncate("\n".join([head, *changes]))
    final = meta.get("final_state")
    if final is not None and expected is not None:
        misses = state_mismatches(final, expected)
        if not misses:
            return "the final state holds everything expected"
        return truncate("\n".join(["the final state misses the expected one:", *misses]))
    return "(no state recorded)"


def _request(sample: Sample) -> str:
    if sample.query is not None:
        return sample.query
    return "\n".join(m.content for m in sample.dialogue or [] if m.role == "user") or "(no request)"


def _steps(sample: Sample) -> list[dict[str, Any]]:
    steps = []
    for i, step in enumerate(sample.gold):
        title = f"Step {i + 1} · recorded verdict: {step.verdict or 'none'}" + (" · hidden" if step.hidden else "")
        steps.append(
            {
                "idx": i,
                "title": title,
                "thought": truncate(step.thought) if step.thought else "(no thought)",
                "call": call_text(step.call),
                "observation": "(no observation)" if step.observation is None else _shown(step.observation),
                "verdict": step.verdict or "",
            }
        )
    return steps


def _dialogue(sample: Sample) -> list[dict[str, Any]]:
    messages = []
    for m in sample.dialogue or []:
        name = m.role if m.role != "tool" or not m.name else f"tool ({m.name})"
        parts = [m.content] if m.content else []
        parts += [f"call: {call_text(c)}" for c in m.tool_calls]
        messages.append({"role": m.role, "name": name, "text": truncate("\n".join(parts)) if parts else "(empty)"})
    return messages


def special_kind(sample: Sample) -> str:
    """The special case's kind: ``metadata.special.kind``, else the first other category."""
    meta = sample.metadata.get("special")
    if isinstance(meta, Mapping) and isinstance(meta.get("kind"), str):
        return meta["kind"]
    return next((c for c in sample.categories if c != "special"), "special")


def expected_behaviour(sample: Sample) -> str:
    """What a model should do with a special case (missing params / wrong values / no call).

    >>> from datetime import datetime, timezone
    >>> prov = {"source": "doc", "method": "manual", "created_at": datetime(2024, 1, 1, tzinfo=timezone.utc)}
    >>> s = Sample(query="Book a table for tonight.", categories=["special", "incomplete"], provenance=prov,
    ...            answer={"kind": "exact", "value": {"book_table": ["restaurant", "people"]}})
    >>> print(expected_behaviour(s))
    Missing parameters: make no call yet; ask the user for the missing value(s)
    book_table: restaurant, people
    """
    kind = special_kind(sample)
    head = EXPECTED.get(kind, f"Special case {kind!r}: see the answer")
    value = sample.answer.value if sample.answer.kind == "exact" else None
    if kind == "incomplete" and isinstance(value, Mapping):
        detail = "\n".join(
            f"{api}: {', '.join(map(str, args)) if isinstance(args, list) else args}" for api, args in value.items()
        )
    elif kind == "error_param" and isinstance(value, Mapping):
        detail = "\n".join(
            f"{arg} = {', '.join(_dumps(v) for v in vals) if isinstance(vals, list) else _dumps(vals)}"
            for arg, vals in value.items()
        )
    else:
        detail = answer_text(sample.answer) if sample.answer.kind != "none" else ""
    return truncate(f"{head}\n{detail}" if detail else head)


# ------------------------------------------------------------------- pre-annotation ----


def reason_for(result: CheckResult) -> str:
    """The rejection reason a failing check stands for (``other`` when unknown).

    >>> reason_for(CheckResult(name="executability", ok=False, code="call_failed"))
    'not_executable'
    >>> reason_for(CheckResult(name="dialogue_consistency", ok=False, code="no_final_answer"))
    'wrong_answer'
    """
    if result.code == "check_error":
        return "other"
    return CODE_REASONS.get((result.name, result.code or ""), CHECK_REASONS.get(result.name, "other"))


def _report(sample: Sample, checks: CheckReport | None) -> CheckReport | None:
    """The given report, else one rebuilt from ``sample.verification`` (when it holds checks)."""
    if checks is not None:
        return checks
    v = sample.verification
    if v is None or not v.checks:
        return None
    return CheckReport(accepted=v.status != "rejected" and all(c.ok for c in v.checks), results=list(v.checks))


def _votes(sample: Sample, prescreen: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The pre-screen votes: ``prescreen["votes"]``, a single vote ``prescreen``, else
    ``sample.metadata["votes"]``; malformed entries are left out."""
    if prescreen is not None:
        raw: Any = prescreen.get("votes") if "votes" in prescreen else [prescreen]
    else:
        raw = sample.metadata.get("votes")
    if not isinstance(raw, list):
        return []
    return [dict(v) for v in raw if isinstance(v, Mapping) and v.get("vote") in ("accept", "reject")]


def _vote_line(votes: list[dict[str, Any]]) -> str:
    accepts = sum(1 for v in votes if v["vote"] == "accept")
    each = "; ".join(
        f"{v.get('model', '?')} ({v['vote']})" + (f": {v['reason']}" if v.get("reason") else "") for v in votes
    )
    return truncate(f"pre-screen: {accepts} of {len(votes)} votes accept — {each}", 600)


def check_summary(checks: CheckReport | None, votes: Sequence[Mapping[str, Any]] = ()) -> str:
    """The automated checks (one line each) and the pre-screen votes, as text.

    >>> rep = CheckReport(False, [CheckResult(name="query_clarity", ok=True),
    ...                           CheckResult(name="executability", ok=False, code="call_failed", reason="f: 404")])
    >>> print(check_summary(rep, [{"model": "m", "vote": "accept"}]))
    rejected by executability
    PASS query_clarity
    FAIL executability [call_failed]: f: 404
    pre-screen: 1 of 1 votes accept — m (accept)
    """
    if checks is None:
        lines = ["no automated checks run"]
    else:
        first = checks.rejected_by
        lines = [f"rejected by {first.name}" if first is not None else f"accepted: {len(checks.results)} checks passed"]
        for r in checks.results:
            status = "FAIL" if not r.ok else ("SKIP" if r.code == "skipped" else "PASS")
            code = f" [{r.code}]" if r.code and r.code != "skipped" else ""
            lines.append(f"{status} {r.name}{code}" + (f": {r.reason}" if r.reason else ""))
    if votes:
        lines.append(_vote_line(list(votes)))
    return truncate("\n".join(lines))


def pre_annotation(
    sample: Sample, kind: str, checks: CheckReport | None = None, prescreen: Mapping[str, Any] | None = None
) -> tuple[Review, float | None] | None:
    """The Review the automated checks and the pre-screen suggest, and its score; None when
    there is nothing to suggest.

    * checks rejected → ``reject`` with the reasons of the failing checks (:func:`reason_for`);
      checks passed → ``accept``;
    * a majority of pre-screen votes rejecting → ``reject`` (reason ``other`` unless the checks
      gave one); votes alone, mostly accepting → ``accept``; the votes are quoted in the comment;
    * per-step verdicts (chain) are the sample's own recorded step verdicts;
    * the score is the share of accepting votes, else 1.0 / 0.0 for checks passed / rejected.
    """
    report = _report(sample, checks)
    votes = _votes(sample, prescreen)
    decision: str | None = None
    reasons: list[str] = []
    notes: list[str] = []
    score: float | None = None
    if report is not None:
        decision = "accept" if report.accepted else "reject"
        reasons = [reason_for(r) for r in report.failures]
        notes += [f"check {r.name} [{r.code}]: {r.reason}" for r in report.failures]
        score = 1.0 if report.accepted else 0.0
    if votes:
        accepts = sum(1 for v in votes if v["vote"] == "accept")
        score = round(accepts / len(votes), 4)
        if 2 * (len(votes) - accepts) > len(votes):
            decision = "reject"
            reasons = reasons or ["other"]
        elif decision is None:
            decision = "accept"
        notes.append(_vote_line(votes))
    step_verdicts = {i: s.verdict for i, s in enumerate(sample.gold) if s.verdict} if kind == "chain" else {}
    if decision is None and not step_verdicts:
        return None
    comment = truncate("\n".join(notes), 1000)
    return Review(decision=decision, reasons=reasons, step_verdicts=step_verdicts, comment=comment), score


def _as_review(review: Review | Mapping[str, Any] | None) -> Review | None:
    if review is None or isinstance(review, Review):
        return review
    return Review(**{k: v for k, v in review.items() if k in Review.model_fields})


def item_key(sample_id: str, stage: str | None, round: int | None) -> str:
    """The stable key of an item's task at one stage and round: what makes a push idempotent.

    >>> item_key("s1", "review", 1)
    's1@review/r1'
    """
    return f"{sample_id}@{stage or '?'}/r{round if round is not None else '?'}"


def task_key(data: Mapping[str, Any], stage: str | None = None, round: int | None = None) -> str | None:
    """The key of a task from its ``data`` (``bs_id``, ``bs_stage``, ``bs_round``); ``stage`` and
    ``round`` (its project's) stand in for fields a task lacks: tasks pushed before ``bs_stage``
    existed get the same key as new ones. None for a task that is not benchsmith's.

    >>> old = {"bs_id": "s1", "bs_round": 2}
    >>> task_key(old, "review", 2) == task_key({**old, "bs_stage": "review"}) == "s1@review/r2"
    True
    """
    sample_id = data.get("bs_id")
    if sample_id is None:
        return None
    stage = data.get("bs_stage") or stage
    round = data.get("bs_round", round)
    return item_key(str(sample_id), stage, int(round) if round is not None else None)


def task_payload(
    sample: Sample,
    kind: str | None = None,
    checks: CheckReport | None = None,
    prescreen: Mapping[str, Any] | None = None,
    *,
    stage: str = "review",
    reviews: Sequence[Review | Mapping[str, Any] | None] = (),
) -> dict[str, Any]:
    """The Label Studio task (``{"data", "predictions"}``) of ``sample`` for ``label_config(kind, stage)``.

    ``kind`` defaults to :func:`sample_kind`. ``data`` holds exactly the fields the config refers to,
    plus ``bs_id`` (the sample id) and, for a chain, ``steps[i].idx`` / ``.verdict``; observations,
    thoughts and tool messages are cut to :data:`OBSERVATION_LIMIT` characters. At the
    ``adjudicate`` stage ``reviews`` (two :class:`Review` or ``{"decision", "reasons", ...}`` dicts)
    fill ``review_1`` / ``review_2``. ``predictions`` holds the pre-annotation
    (:func:`pre_annotation`), or nothing.
    """
    kind = kind or sample_kind(sample)
    if kind not in KINDS:
        label_config(kind)  # raises the UserError
    if stage not in STAGES:
        raise UserError(f"unknown annotation stage {stage!r}", fix=f"choose from {', '.join(STAGES)}")
    report = _report(sample, checks)
    data: dict[str, Any] = {"bs_id": sample.id}
    if kind == "dialogue":
        data["dialogue"] = _dialogue(sample)
    else:
        data["query"] = _request(sample)
    data["tools_text"] = tools_text(sample)
    data["setup_text"] = setup_text(sample)
    if kind == "chain":
        data["steps"] = _steps(sample)
    if kind in ("chain", "dialogue"):
        data["state_text"] = state_text(sample)
    if kind == "special":
        data["special_kind"] = special_kind(sample)
        data["expected"] = expected_behaviour(sample)
    else:
        data["answer"] = answer_text(sample.answer)
    data["check_summary"] = check_summary(report, _votes(sample, prescreen))
    if stage == "adjudicate":
        given = [_as_review(r) for r in reviews][:2]
        given += [None] * (2 - len(given))
        data["review_1"], data["review_2"] = review_text(given[0]), review_text(given[1])
    predictions = []
    suggested = pre_annotation(sample, kind, report, prescreen)
    if suggested is not None:
        review, score = suggested
        prediction: dict[str, Any] = {"model_version": MODEL_VERSION, "result": result_for(kind, review)}
        if score is not None:
            prediction["score"] = score
        predictions.append(prediction)
    return {"data": data, "predictions": predictions}
