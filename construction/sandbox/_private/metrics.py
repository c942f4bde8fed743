"""Agent metrics in the manner of ACEBench: end-state accuracy and process accuracy.

**End state.** The expected state may be partial. Objects match when every expected key is
present and matches (keys not named are ignored); lists match when they have the same length
and match item by item, in order; numbers match within 1e-6 (``True`` is not ``1``); anything
else must be equal. Unlike ACEBench's official checker, an expected domain missing from the
final state is a mismatch, never skipped.

**Process.** Milestones are the calls that must happen, in order. The score is n/m, where m is
the number of milestones and n the number matched by ACEBench's in-order scan: each milestone
is looked for from just after the previous match onwards, and a milestone that is never found
ends the scan (later ones count as missed). A call matches a milestone when their signatures
(:func:`call_signature`) are equal. With alternative milestone lists the best score counts; no
milestones score 1.0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchsmith.schemas import ToolCall

from .engine import CallRecord

FLOAT_TOLERANCE = 1e-6


def state_mismatches(final_state: Any, expected: Any, path: str = "") -> list[str]:
    """Where ``final_state`` differs from the (partial) ``expected`` state, one line per place.

    >>> state_mismatches({"a": {"x": 1, "y": 2}, "b": [1, 2]}, {"a": {"x": 1}, "b": [1, 3]})
    ['b.1: expected 3, got 2']
    """
    where = path or "(state)"
    if isinstance(expected, Mapping):
        if not isinstance(final_state, Mapping):
            return [f"{where}: expected an object, got {_short(final_state)}"]
        out: list[str] = []
        for key, value in expected.items():
            sub = f"{path}.{key}" if path else str(key)
            if key not in final_state:
                out.append(f"{sub}: missing (expected {_short(value)})")
            else:
                out.extend(state_mismatches(final_state[key], value, sub))
        return out
    if isinstance(expected, list):
        if not isinstance(final_state, list):
            return [f"{where}: expected a list, got {_short(final_state)}"]
        if len(final_state) != len(expected):
            return [f"{where}: expected {len(expected)} item(s), got {len(final_state)}"]
        out = []
        for i, (got, want) in enumerate(zip(final_state, expected)):
            out.extend(state_mismatches(got, want, f"{path}.{i}" if path else str(i)))
        return out
    if not _scalar_equal(final_state, expected):
        return [f"{where}: expected {_short(expected)}, got {_short(final_state)}"]
    return []


def end_state_accuracy(final_state: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    """Whether the final sandbox state matches the expected (partial) state.

    >>> end_state_accuracy({"food": {"session": "Leo", "orders": []}}, {"food": {"session": "Leo"}})
    True
    >>> end_state_accuracy({"food": {"session": None}}, {"food": {"session": "Leo"}})
    False
    """
    return not state_mismatches(final_state, expected)


def call_signature(call: ToolCall | CallRecord | Mapping[str, Any]) -> str:
    """A canonical text of a call: name and arguments sorted by key, JSON values, and integral
    floats written as integers (so ``2.0`` and ``2`` agree).

    >>> call_signature({"name": "get_menu", "arguments": {"restaurant": "Golden Wok"}})
    'get_menu(restaurant="Golden Wok")'
    >>> call_signature({"name": "delete_message", "arguments": {"message_id": 3.0}})
    'delete_message(message_id=3)'
    """
    name, arguments = _name_and_arguments(call)
    parts = [
        f"{k}={json.dumps(_canonical(v), sort_keys=True, ensure_ascii=False, separators=(',', ':'))}"
        for k, v in sorted(arguments.items())
    ]
    return f"{name}({', '.join(parts)})"


def process_accuracy(
    executed_calls: Iterable[ToolCall | CallRecord | Mapping[str, Any]], milestones: Sequence[Any]
) -> float:
    """Share of milestones reached in order (best over alternative milestone lists).

    ``executed_calls`` are the agent's calls in order; :class:`CallRecord` entries that failed
    (``ok`` false) do not count. ``milestones`` is a list of calls, or a list of such lists
    (alternatives).

    >>> ms = [{"name": "enable_wifi"}, {"name": "send_message", "arguments": {"recipient": "Ada", "text": "hi"}}]
    >>> process_accuracy([{"name": "device_status"}, {"name": "enable_wifi"}], ms)
    0.5
    >>> process_accuracy([{"name": "enable_wifi", "arguments": {}},
    ...                   {"name": "send_message", "arguments": {"text": "hi", "recipient": "Ada"}}], ms)
    1.0
    """
    done = [call_signature(c) for c in executed_calls if not (isinstance(c, CallRecord) and not c.ok)]
    alternatives = _alternatives(milestones)
    if not alternatives:
        return 1.0
    best = 0.0
    for alt in alternatives:
        if not alt:
            return 1.0
        wanted = [call_signature(m) for m in alt]
        pos = hits = 0
        for sig in wanted:
            while pos < len(done):
                pos += 1
                if done[pos - 1] == sig:
                    hits += 1
                    break
        best = max(best, hits / len(wanted))
    return best


def _alternatives(milestones: Sequence[Any]) -> list[list[Any]]:
    if not milestones:
        return []
    if all(isinstance(m, (list, tuple)) for m in milestones):
        return [list(m) for m in milestones]
    return [list(milestones)]


def _name_and_arguments(call: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(call, (ToolCall, CallRecord)):
        return call.name, dict(call.arguments)
    if isinstance(call, Mapping) and isinstance(call.get("name"), str):
        args = call.get("arguments") or {}
        if isinstance(args, Mapping):
            return call["name"], dict(args)
    raise TypeError(f"not a call: {_short(call)} (need {{'name': ..., 'arguments': {{...}}}})")


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def _scalar_equal(got: Any, want: Any) -> bool:
    if isinstance(got, bool) or isinstance(want, bool):
        return type(got) is type(want) and got == want
    if isinstance(got, (int, float)) and isinstance(want, (int, float)):
        return math.isclose(got, want, rel_tol=0.0, abs_tol=FLOAT_TOLERANCE)
    return type(got) is type(want) and got == want


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
