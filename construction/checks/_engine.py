"""The quality-check engine: checks are pure functions ``(sample) -> CheckResult`` or
``(sample, context) -> CheckResult`` registered by name and run as an ordered tuple; a sample is
accepted when every check passes, and a rejected sample records every failing check with its
reason (the first one is ``rejected_by``)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from benchsmith.construction import EnvContext
from benchsmith.schemas import CheckResult, Registry, Sample, UserError

Check = Callable[..., CheckResult]
CHECKS: Registry[Check] = Registry(
    "check",
    tuple(
        f"benchsmith.construction.checks.{m}"
        for m in ("clarity", "dialogue", "execution", "signature", "tool_docs", "vote")
    ),
)
# name -> (the registered function, whether it takes a context); decided once at registration
_TAKES_CONTEXT: dict[str, tuple[Check, bool]] = {}


@dataclass(frozen=True)
class CheckContext:
    """What checks may need besides the sample; every field has a default that works offline.

    >>> CheckContext().vote_quorum, CheckContext().near_dup_threshold
    (1, 0.92)
    """

    env: EnvContext = field(default_factory=EnvContext)  # split folder etc. for ``executability``
    vote_quorum: int = 1  # model_vote: fewer votes than this (but some) -> no_quorum
    vote_ties_reject: bool = False  # model_vote: an even split rejects too
    near_dup_threshold: float = 0.92  # check_samples: cosine at or above which a later sample is dropped
    query_min_words: int = 3  # query_clarity length bounds (query or user turns joined)
    query_max_chars: int = 4000
    float_tolerance: float = 1e-6  # executability: relative tolerance of float observations
    require_environment: bool = False  # executability: fail (no_environment) instead of skipping
    options: Mapping[str, Any] = field(default_factory=dict)  # free-form, for checks registered elsewhere


def _wants_context(fn: Check) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: the classic form
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def check(name: str) -> Callable[[Check], Check]:
    """Register a pure check ``(sample) -> CheckResult`` or ``(sample, context) -> CheckResult``
    under ``name`` (which form is decided from the signature, once)."""

    def deco(fn: Check) -> Check:
        CHECKS.add(name, fn)
        _TAKES_CONTEXT[name] = (fn, _wants_context(fn))
        return fn

    return deco


def passed(name: str, reason: str = "", code: str | None = None) -> CheckResult:
    return CheckResult(name=name, ok=True, reason=reason[:500], code=code)


def skipped(name: str, reason: str) -> CheckResult:
    """A check that could not judge the sample: it passes with code ``skipped`` and says why."""
    return passed(name, reason, "skipped")


def failed(name: str, code: str, reason: str) -> CheckResult:
    return CheckResult(name=name, ok=False, code=code, reason=reason[:500])


@dataclass
class CheckReport:
    """The verdict on one sample."""

    accepted: bool
    results: list[CheckResult] = field(default_factory=list)

    @property
    def rejected_by(self) -> CheckResult | None:
        return next((r for r in self.results if not r.ok), None)

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.ok]


def resolve_names(names: Iterable[str] | None = None) -> tuple[str, ...]:
    """The check order to run (default :data:`DEFAULT_CHECKS`); unknown names are a UserError."""
    from . import DEFAULT_CHECKS

    order = tuple(names) if names is not None else DEFAULT_CHECKS
    unknown = [n for n in order if n not in CHECKS]
    if unknown:
        raise UserError(f"unknown check(s): {', '.join(unknown)}", fix=f"choose from {', '.join(sorted(CHECKS))}")
    return order


def run_checks(sample: Sample, names: Iterable[str] | None = None, context: CheckContext | None = None) -> CheckReport:
    """Run the named checks (default: :data:`DEFAULT_CHECKS`) in order; a check that raises is a
    failed result naming the exception, never a crash."""
    order = resolve_names(names)
    ctx = context if context is not None else CheckContext()
    results = []
    for name in order:
        fn = CHECKS[name]
        known = _TAKES_CONTEXT.get(name)
        if known is None or known[0] is not fn:  # put into CHECKS by hand
            known = _TAKES_CONTEXT[name] = (fn, _wants_context(fn))
        try:
            res = fn(sample, ctx) if known[1] else fn(sample)
        except Exception as exc:  # noqa: BLE001 - a check bug rejects the sample with the reason, not the run
            res = failed(name, "check_error", f"{type(exc).__name__}: {exc}")
        results.append(res)
    return CheckReport(all(r.ok for r in results), results)
