"""Scenarios: a user goal, the initial sandbox config, gold calls, the expected end state and the
milestones; loading them from JSONL, verifying them by execution, and turning them into samples."""

from __future__ import annotations

import importlib.resources
import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from benchsmith.schemas import (
    CheckResult,
    ExactAnswer,
    JsonlError,
    NoAnswer,
    Provenance,
    RowError,
    Sample,
    Step,
    StrictModel,
    ToolCall,
    ToolError,
    UserError,
    Verification,
    iter_jsonl_lenient,
)

from .engine import CallRecord, Sandbox
from .metrics import process_accuracy, state_mismatches

DATA_PACKAGE = "benchsmith.construction.sandbox"
DATA_FILE = "scenarios.jsonl"


class Scenario(StrictModel):
    """One agent task: the user's goal, the sandbox it starts from, and what success looks like.

    ``milestones`` are the calls that must happen in order (process accuracy); a list of lists
    gives alternatives. Empty milestones mean the gold calls themselves.
    """

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    query: str = Field(min_length=1)
    persona: str | None = None
    domains: dict[str, dict[str, Any]] = Field(min_length=1)
    gold: list[ToolCall] = Field(min_length=1)
    expected_state: dict[str, Any] = Field(min_length=1)
    milestones: list[ToolCall] | list[list[ToolCall]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _fits_its_sandbox(self) -> Scenario:
        if not self.query.strip():
            raise ValueError("query must not be blank")
        try:
            sandbox = Sandbox(self.domains)
        except UserError as exc:
            raise ValueError(str(exc)) from None
        unknown = sorted(set(self.expected_state) - set(self.domains))
        if unknown:
            raise ValueError(f"expected_state names domain(s) {unknown} that are not in domains")
        tools = {t.name for t in sandbox.tools()}
        for call in [*self.gold, *self.milestone_calls()]:
            if call.name not in tools:
                raise ValueError(f"call {call.name!r} is not a tool of domains {sorted(self.domains)}")
        return self

    def milestone_calls(self) -> list[ToolCall]:
        """Every milestone call (of every alternative)."""
        flat: list[ToolCall] = []
        for m in self.milestones:
            flat.extend(m if isinstance(m, list) else [m])
        return flat

    def milestone_lists(self) -> list[list[ToolCall]]:
        """The alternative milestone lists (the gold calls when none are given)."""
        if not self.milestones:
            return [list(self.gold)]
        if isinstance(self.milestones[0], list):
            return [list(m) for m in self.milestones]  # type: ignore[arg-type]
        return [list(self.milestones)]  # type: ignore[arg-type]


class ScenarioReport(StrictModel):
    """The outcome of :func:`verify_scenario`: every check, the gold run's log and end state."""

    scenario_id: str
    ok: bool
    checks: list[CheckResult]
    log: list[CallRecord] = Field(default_factory=list)
    final_state: dict[str, Any] | None = None

    @property
    def reasons(self) -> list[str]:
        """``"check: reason"`` of every failed check."""
        return [f"{c.name}: {c.reason}" for c in self.checks if not c.ok]


def is_scenarios_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a scenarios JSONL file (its first row has ``domains`` and ``expected_state``)
    rather than a samples file."""
    import json

    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    row = json.loads(line)
                except ValueError:
                    return False
                return isinstance(row, dict) and "domains" in row and "expected_state" in row
    return False


def load_scenarios(path: str | os.PathLike[str] | None = None) -> list[Scenario]:
    """The scenarios of a JSONL file (default: the packaged set). Bad rows and repeated ids raise
    ``JsonlError`` listing each one as ``file:line``."""
    if path is None:
        resource = importlib.resources.files(DATA_PACKAGE) / "data" / DATA_FILE
        with importlib.resources.as_file(resource) as real:
            return _load(Path(real))
    return _load(Path(path))


def _load(path: Path) -> list[Scenario]:
    good, bad = iter_jsonl_lenient(path, Scenario)
    rows = len(good) + len(bad)
    seen: dict[str, int] = {}
    for line, s in good:
        if s.id in seen:
            bad.append(RowError(line, f"scenario id {s.id!r} repeats line {seen[s.id]}; give it a new id"))
        seen.setdefault(s.id, line)
    if bad:
        raise JsonlError(path, sorted(bad), rows)
    return [s for _, s in good]


def verify_scenario(scenario: Scenario | Mapping[str, Any]) -> ScenarioReport:
    """Run the gold calls on a fresh sandbox: every call must succeed, the end state must match
    the expected state, the milestones must be reached, and a second run must agree."""
    s = scenario if isinstance(scenario, Scenario) else Scenario.model_validate(scenario)
    first = _run(s)
    checks = [
        first.calls_check,
        _end_state_check(first.state, s.expected_state),
        _milestones_check(first.sandbox.log, s),
    ]
    second = _run(s)
    same = second.state == first.state and [r.model_dump() for r in second.sandbox.log] == [
        r.model_dump() for r in first.sandbox.log
    ]
    checks.append(
        CheckResult(
            name="deterministic",
            ok=same,
            reason="" if same else "a second run gave different observations or state",
            code=None if same else "nondeterministic",
        )
    )
    return ScenarioReport(
        scenario_id=s.id, ok=all(c.ok for c in checks), checks=checks, log=first.sandbox.log, final_state=first.state
    )


class _Run:
    def __init__(self, sandbox: Sandbox, calls_check: CheckResult) -> None:
        self.sandbox = sandbox
        self.calls_check = calls_check
        self.state = sandbox.state()


def _run(s: Scenario) -> _Run:
    sandbox = Sandbox(s.domains)
    for i, call in enumerate(s.gold, 1):
        try:
            sandbox.call(call.name, call.arguments, call.label)
        except ToolError as exc:
            return _Run(
                sandbox,
                CheckResult(
                    name="gold_calls",
                    ok=False,
                    code=exc.code,
                    reason=f"gold call {i} ({call.name}) failed: {exc}"[:500],
                ),
            )
    return _Run(sandbox, CheckResult(name="gold_calls", ok=True, reason=f"{len(s.gold)} call(s) succeeded"))


def _end_state_check(final: dict[str, Any], expected: dict[str, Any]) -> CheckResult:
    problems = state_mismatches(final, expected)
    if not problems:
        return CheckResult(name="end_state", ok=True)
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return CheckResult(name="end_state", ok=False, code="state_mismatch", reason=("; ".join(problems[:3]) + more)[:500])


def _milestones_check(log: list[CallRecord], s: Scenario) -> CheckResult:
    score = process_accuracy(log, [[m.model_dump() for m in alt] for alt in s.milestone_lists()])
    if score == 1.0:
        return CheckResult(name="milestones", ok=True)
    return CheckResult(
        name="milestones",
        ok=False,
        code="milestones_unreached",
        reason=f"the gold calls reach only {score:.0%} of the milestones",
    )


def scenario_to_sample(
    scenario: Scenario | Mapping[str, Any],
    *,
    answer: Literal["none", "state"] = "none",
    source: str = "sandbox",
    created_at: datetime | None = None,
) -> Sample:
    """A verified benchsmith :class:`Sample` of ``scenario``: its query, the sandbox's tools, the
    gold calls with their observations, and the environment, expected state and milestones in
    ``metadata``. ``answer="state"`` judges the exact final state instead of no answer. A scenario
    that fails verification raises ``UserError`` with the reasons."""
    s = scenario if isinstance(scenario, Scenario) else Scenario.model_validate(scenario)
    report = verify_scenario(s)
    if not report.ok:
        raise UserError(
            f"scenario {s.id} does not verify: {'; '.join(report.reasons)}",
            fix="correct its gold calls, expected_state or milestones",
        )
    created = created_at or datetime.now(timezone.utc)
    gold = [
        Step(
            call=ToolCall(name=r.name, arguments=c.arguments, label=r.label),
            observation=r.observation,
            verdict="success",
        )
        for r, c in zip(report.log, s.gold)
    ]
    sandbox = Sandbox(s.domains)
    kind = "multi_step" if len(s.gold) > 1 else "single_step"
    metadata: dict[str, Any] = {
        "environment": {"kind": "sandbox", "config": s.domains},
        "expected_state": s.expected_state,
        "milestones": [[m.model_dump(mode="json", exclude_none=True) for m in alt] for alt in s.milestone_lists()],
        "scenario_id": s.id,
    }
    if s.persona:
        metadata["persona"] = s.persona
    return Sample(
        query=s.query,
        tools=sandbox.tools(),
        gold=gold,
        answer=ExactAnswer(value=report.final_state, ordered=True) if answer == "state" else NoAnswer(),
        categories=["agent", *s.domains, kind],
        provenance=Provenance(source=source, source_id=s.id, method="sandbox", created_at=created),
        verification=Verification(status="verified", method="sandbox", checks=report.checks, verified_at=created),
        metadata=metadata,
    )
