"""``executability``: the gold trajectory really runs and reproduces what it recorded.

The sample's environment is opened from ``sample.metadata["environment"]`` (a descriptor such as
``{"kind": "sandbox", "config": {...}}``) or, when that is absent and the sample's tools are
NL2API SLOT or SEL tools, from ``{"kind": "nl2api", "style": "slot"|"sel"}`` on the split folder
of ``context.env``. The set-up calls run first (unless the descriptor carries its own
``"setup"``), then every gold call in order:

* a step recorded as succeeding (verdict None or ``"success"``) must succeed and, when it
  recorded an observation, the new one must equal it (floats within ``context.float_tolerance``;
  an environment with a ``compare_view`` compares through it, leaving its volatile keys out, and
  one with a ``mismatch_code`` names a difference so: ``nondeterministic_replay`` for a live
  MCP server);
* a step recorded with any other verdict must fail (raise ``ToolError``); when its recorded
  observation is ``{"error": code}`` or ``{"code": code}`` the error code must match too.

A chain built on a stateful environment (``metadata.start_state`` and ``metadata.expected_state``,
recorded by the chains graph) must also leave the environment in the recorded end state
(through ``compare_view``; a difference is ``end_state_mismatch``, or the environment's
``mismatch_code``).

When no environment can be opened (no descriptor and tools that are not SLOT/SEL, no split
folder, an environment kind that is not installed) the check passes with code ``skipped`` and
says why, unless ``context.require_environment`` is set (then it fails with ``no_environment``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from benchsmith.construction import close_environment, open_environment, state_of
from benchsmith.schemas import CheckResult, Sample, UserError

from ._engine import CheckContext, check, failed, passed, skipped

NAME = "executability"
_SUCCESS = (None, "success")


def environment_descriptor(sample: Sample, context: CheckContext) -> tuple[dict[str, Any] | None, str]:
    """``(descriptor, why)``: the environment to replay ``sample`` in, or None and why there is none."""
    given = sample.metadata.get("environment")
    if given is not None:
        if not isinstance(given, dict) or not given.get("kind"):
            return None, f"metadata.environment is not a descriptor with a kind: {given!r}"[:200]
        return dict(given), ""
    tags = {tag for t in sample.tools for tag in t.tags}
    method = sample.provenance.method
    # SEL splits keep the SLOT tools next to their per-column getters and filters
    style = (
        "sel"
        if "sel" in tags or method == "nl2api.sel"
        else "slot"
        if "slot" in tags or method == "nl2api.slot"
        else None
    )
    if style is None:
        if method == "nl2api.rest":
            return None, "NL2API REST samples record every result row, not a replayable observation"
        return None, "no metadata.environment and the tools are not NL2API SLOT/SEL tools"
    if context.env.split is None:
        return None, "NL2API tools need their split folder and none was given (CheckContext.env.split / --split)"
    descriptor: dict[str, Any] = {"kind": "nl2api", "style": style}
    if sample.metadata.get("db_id"):  # a merged split: the sample's own database
        descriptor["db_id"] = sample.metadata["db_id"]
    return descriptor, ""


def _same(value: Any) -> Any:
    return value


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def first_difference(recorded: Any, now: Any, rel_tol: float = 1e-6, path: str = "") -> str | None:
    """Where two JSON values differ (a path and both values), or None when equal; numbers compare
    within ``rel_tol`` (and 1e-9 absolute), booleans only to booleans.

    >>> first_difference({"rows": [[1, 0.1 + 0.2]]}, {"rows": [[1, 0.3]]})
    >>> first_difference({"rows": [[1, "a"]]}, {"rows": [[1, "b"]]})
    "rows[0][1]: recorded 'a', now 'b'"
    """
    where = path or "the observation"
    if isinstance(recorded, bool) or isinstance(now, bool):
        return None if recorded is now else f"{where}: recorded {recorded!r}, now {now!r}"
    if isinstance(recorded, (int, float)) and isinstance(now, (int, float)):
        if recorded == now or math.isclose(recorded, now, rel_tol=rel_tol, abs_tol=1e-9):
            return None
        return f"{where}: recorded {recorded!r}, now {now!r}"
    if isinstance(recorded, list) and isinstance(now, list):
        for i, (a, b) in enumerate(zip(recorded, now)):
            diff = first_difference(a, b, rel_tol, f"{path}[{i}]")
            if diff:
                return diff
        if len(recorded) != len(now):
            return f"{where}: recorded {len(recorded)} items, now {len(now)}"
        return None
    if isinstance(recorded, dict) and isinstance(now, dict):
        if set(recorded) != set(now):
            keys = sorted(set(recorded) ^ set(now))
            return f"{where}: keys differ ({', '.join(map(str, keys[:5]))})"
        for k in recorded:
            diff = first_difference(recorded[k], now[k], rel_tol, f"{path}.{k}" if path else str(k))
            if diff:
                return diff
        return None
    return None if recorded == now else f"{where}: recorded {_short(recorded)}, now {_short(now)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _recorded_error_code(observation: Any) -> str | None:
    if isinstance(observation, dict):
        code = observation.get("error", observation.get("code"))
        return code if isinstance(code, str) else None
    return None


@check(NAME)
def executability(sample: Sample, context: CheckContext | None = None) -> CheckResult:
    ctx = context or CheckContext()
    descriptor, why = environment_descriptor(sample, ctx)
    if descriptor is not None:
        try:
            env = open_environment(descriptor, ctx.env)
        except UserError as exc:
            descriptor, why = None, f"cannot open the {descriptor.get('kind')} environment: {exc}"
    if descriptor is None:
        if ctx.require_environment:
            return failed(NAME, "no_environment", why)
        return skipped(NAME, why)
    try:
        return _replay(sample, descriptor, env, ctx)
    finally:
        close_environment(env)


def _replay(sample: Sample, descriptor: dict[str, Any], env: Any, ctx: CheckContext) -> CheckResult:
    from benchsmith.construction.nl2api import ToolError

    if "setup" not in descriptor:
        for i, call in enumerate(sample.setup, 1):
            try:
                env.call(call.name, call.arguments, call.label)
            except ToolError as exc:
                return failed(NAME, "setup_failed", f"set-up call {i} ({call.name}) failed: {exc.code}: {exc}")
    ran = 0
    for i, step in enumerate(sample.gold, 1):
        call = step.call
        if call is None:
            continue
        ran += 1
        where = f"gold step {i} ({call.name})"
        try:
            now = env.call(call.name, call.arguments, call.label)
        except ToolError as exc:
            if step.verdict in _SUCCESS:
                return failed(NAME, "call_failed", f"{where} failed: {exc.code}: {exc}")
            expected = _recorded_error_code(step.observation)
            if expected is not None and expected != exc.code:
                return failed(
                    NAME,
                    "error_mismatch",
                    f"{where} was recorded failing with {expected!r}, now with {exc.code!r}: {exc}",
                )
            continue
        if step.verdict not in _SUCCESS:
            return failed(NAME, "unexpected_success", f"{where} was recorded as {step.verdict!r} but now succeeds")
        if step.observation is not None:
            view = getattr(env, "compare_view", _same)  # an environment may leave volatile keys out
            diff = first_difference(view(_plain(step.observation)), view(_plain(now)), ctx.float_tolerance)
            if diff:
                return failed(NAME, getattr(env, "mismatch_code", "observation_mismatch"), f"{where}: {diff}")
    meta = sample.metadata
    end = ""
    if "start_state" in meta and meta.get("expected_state") is not None and callable(getattr(env, "state", None)):
        view = getattr(env, "compare_view", _same)
        diff = first_difference(view(_plain(meta["expected_state"])), view(state_of(env)), ctx.float_tolerance)
        if diff:
            code = getattr(env, "mismatch_code", "end_state_mismatch")
            return failed(NAME, code, f"the end state after the gold chain: {diff}")
        end = ", the recorded end state reached"
    return passed(
        NAME,
        f"{len(sample.setup) if 'setup' not in descriptor else 0} set-up and {ran} gold call(s) "
        f"reproduced in {descriptor['kind']}{end}",
    )
