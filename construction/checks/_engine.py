"""The quality-check engine: checks are pure functions ``(sample) -> CheckResult`` registered by
name and run as an ordered tuple; a sample is accepted when every check passes, and a rejected
sample records every failing check with its reason (the first one is ``rejected_by``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from benchsmith.schemas import CheckResult, Sample, UserError

Check = Callable[[Sample], CheckResult]
CHECKS: dict[str, Check] = {}


def check(name: str) -> Callable[[Check], Check]:
    """Register a pure check ``(sample) -> CheckResult`` under ``name``."""

    def deco(fn: Check) -> Check:
        if name in CHECKS:
            raise ValueError(f"check {name} registered twice")
        CHECKS[name] = fn
        return fn

    return deco


def passed(name: str) -> CheckResult:
    return CheckResult(name=name, ok=True)


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


def run_checks(sample: Sample, names: Iterable[str] | None = None) -> CheckReport:
    """Run the named checks (default: :data:`DEFAULT_CHECKS`) in order; a check that raises is a
    failed result naming the exception, never a crash."""
    from . import DEFAULT_CHECKS

    order = tuple(names) if names is not None else DEFAULT_CHECKS
    unknown = [n for n in order if n not in CHECKS]
    if unknown:
        raise UserError(f"unknown check(s): {', '.join(unknown)}", fix=f"choose from {', '.join(sorted(CHECKS))}")
    results = []
    for name in order:
        try:
            res = CHECKS[name](sample)
        except Exception as exc:  # noqa: BLE001 - a check bug rejects the sample with the reason, not the run
            res = failed(name, "check_error", f"{type(exc).__name__}: {exc}")
        results.append(res)
    return CheckReport(all(r.ok for r in results), results)
