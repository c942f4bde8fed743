"""Agent family scoring: reading a prediction, replaying its calls on the sandbox, and the
end-state / process comparisons.

The apps themselves are :mod:`benchsmith.construction.sandbox`'s ACEBench-flavoured domains
(``acebench_phone``, ``acebench_message``, ``acebench_reminder``, ``acebench_food``,
``acebench_travel`` for BaseApi, MessageApi, ReminderApi, FoodPlatform, Travel), built from a
record's ``involved_classes`` and ``initial_config`` by :class:`AceBenchSandbox`; their initial
data is what the EN gold end states imply. A call that fails (no involved class has it, bad
arguments, a failing lookup) stops the rest of its turn.

Exported state per class (what the gold end states hold): BaseApi ``wifi``, ``logged_in``;
MessageApi ``inbox``; ReminderApi ``reminder_list``; FoodPlatform ``users``,
``logged_in_users``, ``orders``; Travel ``users``, ``reservations``. States are JSON round-tripped
(integer keys become strings) before comparison.

A prediction may also carry the official inference record's end state (``result``); official
mode grades that state as reported (the official evaluator executes nothing), strict mode
always grades the replay of the calls (see :func:`parse_prediction` and
``AceRules.trust_reported_state``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from benchsmith.construction.sandbox import AceBenchSandbox, ToolError
from benchsmith.eval.budget import check_time, check_value

from ._decode import Call, DecodeError, decode_strict

if TYPE_CHECKING:  # _rules names this module's comparisons
    from ._rules import AceRules


def parse_turns(prediction: str) -> list[str]:
    """The agent prediction: a JSON list of turn strings, or one turn per non-empty line."""
    text = prediction if isinstance(prediction, str) else ""
    stripped = text.strip()
    if stripped.startswith('["') or stripped.startswith('[ "') or stripped == "[]" or stripped.startswith("[\n"):
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, list) and all(isinstance(t, str) for t in obj):
            return obj
    return [line for line in text.splitlines() if line.strip()]


def _is_state(obj: Any) -> bool:
    """A reported end state: a list of one-key objects ``{ClassName: {attribute: value}}``."""
    return isinstance(obj, list) and all(isinstance(c, dict) and len(c) == 1 for c in obj)


def parse_prediction(prediction: str) -> tuple[list[str], list[dict[str, Any]] | None]:
    """An agent prediction: ``(turns, reported end state or None)``.

    Accepted forms: the official inference record's fields as one JSON object
    ``{"result": [{Class: {...}}, ...], "process": ["[call(...)]", ...]}`` (state and call
    strings, either may be absent); a JSON list of class states (the official ``result``
    field alone); otherwise the turns read by :func:`parse_turns`.
    """
    text = prediction.strip() if isinstance(prediction, str) else ""
    if text.startswith("{") or text.startswith("[{") or text.startswith("[ {") or text.startswith("[\n"):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict) and ("result" in obj or "process" in obj):
            state = obj.get("result")
            process = obj.get("process")
            turns = [t for t in process if isinstance(t, str)] if isinstance(process, list) else []
            return turns, (state if _is_state(state) else None)
        if isinstance(obj, list) and obj and _is_state(obj):
            return [], obj
    return parse_turns(prediction), None


def decode_turn(turn: str, decoder: Callable[[Any], list[Call]] = decode_strict) -> list[tuple[str, dict[str, Any]]]:
    """The ``(name, arguments)`` calls of one turn read by ``decoder`` (an :class:`AceRules`' ``turn_decoder``)."""
    calls = decoder(turn)
    check_value(calls, turn)  # run, compared and serialised below: within the budget and MAX_DEPTH (else TooDeep)
    out = []
    for c in calls:
        name = next(iter(c))
        out.append((name, c[name]))
    return out


def replay(
    case_input: dict[str, Any], turns: list[str], rules: AceRules, calls: list[dict[str, Any]] | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Run every turn ``rules.turn_decoder`` decodes in a fresh sandbox; returns (end state, notes on
    failed turns). ``calls``, when given, receives every call run: ``{name, arguments, ok, code}``."""
    involved = [c for c in case_input.get("involved_classes", []) if isinstance(c, str)]
    config = case_input.get("initial_config") or {}
    box = AceBenchSandbox(involved, config if isinstance(config, dict) else {})
    notes: list[str] = []
    for n, turn in enumerate(turns[:200]):
        check_time()
        try:
            decoded = decode_turn(turn, rules.turn_decoder)
        except DecodeError as exc:
            notes.append(f"turn {n}: not decodable ({exc})")
            continue
        for name, args in decoded:
            try:
                box.call(name, args)
                if calls is not None:
                    calls.append({"name": name, "arguments": args, "ok": True})
            except ToolError as exc:
                notes.append(f"turn {n}: {exc}")
                if calls is not None:
                    calls.append({"name": name, "arguments": args, "ok": False, "code": exc.code})
                break
    return box.state(), notes


# ---- comparisons ------------------------------------------------------------------------------
def compare_official(model: list[dict[str, Any]], gold: Any) -> tuple[bool, str]:
    golds = gold if isinstance(gold, list) else [gold]
    if len(golds) != len(model):
        return False, "wrong number of classes"
    errors: list[str] = []
    for g in golds:
        if not isinstance(g, dict) or not g:
            continue
        match = next((m for m in model if set(m) == set(g)), None)
        if match is None:
            continue  # the official checker silently skips a class it cannot pair by name
        cls = next(iter(g))
        gattrs, mattrs = g[cls], match[cls]
        if not isinstance(gattrs, dict):
            continue
        if not isinstance(mattrs, dict):  # a reported state that is no object (the official checker raises)
            errors.append(f"{cls} is not an object of attributes")
            continue
        for attr, mval in mattrs.items():
            if attr not in gattrs:
                errors.append(f"{cls}.{attr} missing in the answer")
                continue
            gval = gattrs[attr]
            if isinstance(gval, dict):
                for k, v in gval.items():
                    if not isinstance(mval, dict) or k not in mval or v != mval[k]:
                        errors.append(f"{cls}.{attr}.{k} differs")
            elif gval != mval:
                errors.append(f"{cls}.{attr} differs")
    return (not errors), "; ".join(errors)[:300]


def resolve_gold_classes(model: list[dict[str, Any]], gold: Any) -> tuple[dict[str, Any], list[str]]:
    """Pair gold class states with sandbox classes: exact name, then case-insensitive, then same attributes."""
    golds = [g for g in (gold if isinstance(gold, list) else [gold]) if isinstance(g, dict) and len(g) == 1]
    names = [next(iter(m)) for m in model]
    exports = {next(iter(m)): set(next(iter(m.values()))) for m in model}
    paired: dict[str, Any] = {}
    problems: list[str] = []
    for g in golds:
        gname = next(iter(g))
        target = gname if gname in names and gname not in paired else None
        if target is None:
            target = next((n for n in names if n.lower() == gname.lower() and n not in paired), None)
        if target is None and isinstance(g[gname], dict):
            cands = [n for n in names if n not in paired and exports[n] == set(g[gname])]
            target = cands[0] if len(cands) == 1 else None
        if target is None:
            problems.append(f"gold class {gname} matches no involved class")
            continue
        if target != gname:
            problems.append(f"gold class {gname} read as {target}")
        paired[target] = g[gname]
    return paired, problems


def compare_strict(model: list[dict[str, Any]], gold: Any) -> tuple[bool, str]:
    paired, problems = resolve_gold_classes(model, gold)
    hard = [p for p in problems if "matches no" in p]
    if hard:
        return False, "; ".join(hard)
    errors = []
    for m in model:
        cls = next(iter(m))
        if cls not in paired:
            errors.append(f"{cls}: no gold state")
            continue
        g, s = paired[cls], m[cls]
        for attr in sorted(set(g) | set(s)):
            if g.get(attr, object()) != s.get(attr, object()):
                errors.append(f"{cls}.{attr} differs")
    return (not errors), "; ".join(errors)[:300]


def _norm_call_string(s: str, rules: AceRules) -> Any:
    if rules.milestones_as_text:
        return s.strip()
    try:
        return ("calls", json.dumps(decode_turn(s), sort_keys=True, default=str))
    except DecodeError:
        return ("text", " ".join(s.split()))


def process_score(turns: list[str], milestones: Any, rules: AceRules) -> float:
    """Share of gold milestones found in order in the turns (best over alternative lists)."""
    if not isinstance(milestones, list) or not milestones:
        return 1.0
    alts = milestones if isinstance(milestones[0], list) else [milestones]
    got = [_norm_call_string(t, rules) for t in turns]
    best = 0.0
    for alt in alts:
        check_time()
        if not isinstance(alt, list) or not alt:
            return 1.0
        pos, hits = 0, 0
        for stone in alt:
            want = _norm_call_string(str(stone), rules)
            while pos < len(got):
                pos += 1
                if got[pos - 1] == want:
                    hits += 1
                    break
        score = hits / len(alt)
        best = max(best, round(score, 3) if rules.round_to_3_places else score)
    return best


# ---- benchsmith episodes ----------------------------------------------------------------------------
def episode_summary(prediction: Any) -> dict[str, Any] | None:
    """The ``episode`` summary a benchsmith episode adds to its inference record, else None."""
    text = prediction.strip() if isinstance(prediction, str) else ""
    if not text.startswith("{") or '"episode"' not in text:
        return None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    summary = obj.get("episode") if isinstance(obj, dict) else None
    return summary if isinstance(summary, dict) else None


def milestone_list(milestones: Any) -> list[str]:
    """The first alternative of the gold milestones, as call strings."""
    if not isinstance(milestones, list) or not milestones:
        return []
    first = milestones[0] if isinstance(milestones[0], list) else milestones
    return [str(m) for m in first]


def decode_or_skip(turn: str) -> list[tuple[str, dict[str, Any]]]:
    try:
        return decode_turn(turn)
    except DecodeError:
        return []


def replayed_calls(case_input: dict[str, Any], turns: list[str], rules: AceRules) -> list[dict[str, Any]]:
    """The calls of ``turns`` as a fresh sandbox runs them (read by ``rules``): ``{name, arguments, ok, code}``."""
    calls: list[dict[str, Any]] = []
    replay(case_input, turns, rules, calls)
    return calls
