"""The ``agent`` benchmark: loading episodes from benchsmith samples, scoring and metrics.

A case is one sample with an environment (``metadata.environment``) and something to reach:
``metadata.expected_state`` (scenarios; dialogues built from scenarios), else the end state the
constructed dialogue reached (``metadata.final_state``, checked by review), else, for NL2API
environments, the answer of the gold's last successful call. Categories: ``scenario`` and
``dialogue``. There is no official evaluator for this data: both modes score the same way.

Scoring never trusts a reported state: the prediction's calls are replayed in a fresh environment
(environments are deterministic) and the replay's end state is compared. When the expected state
already holds before any call (a read-only task: "how much is left on my account?"), the end state
cannot tell, and every milestone must be reached as well.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from benchsmith.construction import EnvContext, close_environment, open_environment
from benchsmith.construction.sandbox import (
    is_scenarios_file,
    load_scenarios,
    process_accuracy,
    scenario_to_sample,
    state_mismatches,
)
from benchsmith.eval import Benchmark, EvalCase, Mode, RecordResult, Row, benchmark, failed, passed, scorer
from benchsmith.eval.budget import check_limit, check_value
from benchsmith.eval.episodes import clean_summary, error_type
from benchsmith.eval.scoring import mean, reliability, safe_ratio
from benchsmith.schemas import RowError, Sample, Split, ToolError, UserError, check_jsonl, loads_json, scan_jsonl

from ._report import AgentReport

CATEGORIES = ("scenario", "dialogue")
MAX_REPLAY = 200


def _case(sample: Sample, where: str) -> EvalCase | None:
    meta = sample.metadata
    env = meta.get("environment")
    if not isinstance(env, dict) or not env.get("kind"):
        return None
    dialogue = sample.dialogue or []
    if not dialogue and "scenario_id" not in meta and "expected_state" not in meta:
        return None  # a plain single-query sample: the nl2api task runs those
    instruction = meta.get("goal") or sample.query
    if not instruction:
        users = [m.content for m in dialogue if m.role == "user"]
        instruction = " ".join(users)
    if not instruction:
        raise UserError(
            f"{where}: sample {sample.id} has no goal or query to give the simulated user",
            fix="add metadata.goal (or query) to the sample",
        )
    gold_calls = [
        s.call.model_dump(mode="json", exclude_none=True)
        for s in sample.gold
        if s.call is not None and s.verdict in (None, "success")
    ]
    milestones = meta.get("milestones") or ([gold_calls] if gold_calls else [])
    gold: dict[str, Any] = {"calls": gold_calls, "milestones": milestones}
    if meta.get("expected_state") is not None:
        gold["state"], gold["state_source"] = meta["expected_state"], "expected_state"
    elif meta.get("final_state") is not None:
        gold["state"], gold["state_source"] = meta["final_state"], "reviewed_final_state"
    elif env.get("kind") != "nl2api":
        raise UserError(
            f"{where}: sample {sample.id} has no expected or final state to score against",
            fix="add metadata.expected_state, or build it with `benchsmith construct dialogues`",
        )
    tools = [t.model_dump(mode="json", exclude_none=True) for t in sample.tools]
    case_id = (meta.get("scenario_id") if not dialogue else None) or sample.id
    if not case_id:
        raise UserError(f"{where}: a sample without an id", fix="give every sample an id")
    return EvalCase(
        id=str(case_id),
        benchmark="agent",
        category="dialogue" if dialogue else "scenario",
        input={
            "instruction": instruction,
            "persona": meta.get("persona"),
            "tools": tools,
            "environment": env,
            "setup": [c.model_dump(mode="json", exclude_none=True) for c in sample.setup],
        },
        gold=gold,
        meta={"file": where, "scenario_id": meta.get("scenario_id")},
    )


def load_agent_cases(data: str | Path) -> list[EvalCase]:
    """Cases from ``sandbox`` (the packaged scenarios), a scenarios JSONL file, or a split / samples
    file holding scenario or dialogue samples."""
    return list(iter_agent_cases(data))


def iter_agent_cases(data: str | Path) -> Iterator[EvalCase]:
    """:func:`load_agent_cases` one case at a time: a samples file is read one line at a time (its
    bad rows are all reported, as ``read_jsonl`` reports them, before any other error);
    scenarios files are read whole (their ids are checked against each other) and turned into cases
    one at a time."""
    data = Path(data)
    samples: Iterator[tuple[Sample, str]]
    rows_file: Path | None = None  # a samples file: its bad rows are reported before any other error
    if str(data) == "sandbox" and not data.exists():
        samples = ((scenario_to_sample(s), "packaged scenarios") for s in load_scenarios())
    elif data.is_file() and is_scenarios_file(data):
        samples = ((scenario_to_sample(s), str(data)) for s in load_scenarios(data))
    elif data.is_file():
        rows_file = data
        samples = _samples(data)
    elif data.is_dir() and Split(data).has(Split.SAMPLES):
        rows_file = Split(data).path(Split.SAMPLES)
        samples = _samples(rows_file)
    elif data.is_dir() and (data / "scenarios.jsonl").is_file():
        path = data / "scenarios.jsonl"
        samples = ((scenario_to_sample(s), str(path)) for s in load_scenarios(path))
    else:
        raise UserError(
            f"{data}: no agent data here",
            fix="pass 'sandbox', a scenarios JSONL file, or a split / samples file with dialogue or scenario samples",
        )
    n_samples = n_cases = 0
    for s, where in samples:
        n_samples += 1
        try:
            c = _case(s, where)
        except UserError:
            if rows_file is not None:
                check_jsonl(rows_file, Sample)
            raise
        if c is not None:
            n_cases += 1
            yield c
    if n_samples and not n_cases:
        raise UserError(
            f"{data}: none of its {n_samples} samples is an episode (no environment with a dialogue, "
            "scenario or expected state)",
            fix="build dialogues with `benchsmith construct dialogues`",
        )


def _samples(path: Path) -> Iterator[tuple[Sample, str]]:
    """The samples of a samples file one at a time (a bad row: every bad row of the file reported)."""
    where = str(path)
    for _, row in scan_jsonl(path, Sample):
        if isinstance(row, RowError):
            check_jsonl(path, Sample)  # raises, listing every bad row of the file
        else:
            yield row, where


def split_dir(case: EvalCase) -> Path | None:
    where = Path(str(case.meta.get("file") or ""))
    return where.parent if where.name.endswith(".jsonl") else None


def open_case_env(case: EvalCase) -> Any:
    """A fresh environment for ``case`` (its descriptor; NL2API tools on the split's database)."""
    return open_environment(case.input["environment"], EnvContext(split=split_dir(case)))


def replay(case: EvalCase, calls: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]], Any]:
    """Run ``calls`` again in a fresh environment: ``(end state, calls with ok/code, the last
    successful call's answer rows or None)``."""
    env = open_case_env(case)
    try:
        done = []
        last_label = None
        for n, c in enumerate(calls[:MAX_REPLAY]):
            name, args = c.get("name"), c.get("arguments")
            label = c.get("label") or f"out_{n + 1}"  # the episode's own labels (eval/agent/_task.py)
            try:
                env.call(str(name), args if isinstance(args, dict) else {}, label)
                done.append({"name": name, "arguments": args, "ok": True})
                last_label = label
            except ToolError as exc:
                done.append({"name": name, "arguments": args, "ok": False, "code": getattr(exc, "code", None)})
        log = getattr(env, "log", None)
        if isinstance(log, list) and len(log) == len(done):  # the sandbox's own log: arguments with references resolved
            done = [{**d, "arguments": getattr(r, "arguments", d["arguments"])} for d, r in zip(done, log)]
        snap = getattr(env, "state", None)
        state = json.loads(json.dumps(snap(), default=str)) if callable(snap) else None
        answer = None
        if last_label is not None and callable(getattr(env, "answer", None)):
            try:
                answer = env.answer(last_label)
            except (KeyError, ToolError):
                answer = None
        return state, done, answer
    finally:
        close_environment(env)  # a live server stops with its replay


def _read_only(case: EvalCase) -> bool:
    """The expected end state already holds before any call (a question, not a change)."""
    env = open_case_env(case)
    try:
        snap = getattr(env, "state", None)
        gold = case.gold if isinstance(case.gold, dict) else {}
        return callable(snap) and not state_mismatches(json.loads(json.dumps(snap(), default=str)), gold.get("state"))
    finally:
        close_environment(env)


def _rows(value: Any) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in (value or []))


@scorer("agent.episode")
def score_episode(case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
    """An episode prediction: its calls replayed in a fresh environment, the end state (or the last
    answer) against the gold, process accuracy and, for a failure, the episode's error type."""
    try:
        pred = loads_json(prediction) if isinstance(prediction, str) else prediction
    except ValueError:
        pred = None
    if not isinstance(pred, dict) or not isinstance(pred.get("calls"), list):
        return failed(case, "wrong_output_format", "the prediction is not an episode record (a JSON object with calls)")
    calls = [c for c in pred["calls"] if isinstance(c, dict)]
    check_limit("calls", len(calls))
    # replayed in the environment, compared, serialised: within the budget and MAX_DEPTH (else TooDeep)
    check_value(calls, prediction if isinstance(prediction, str) else None)
    summary = clean_summary(pred.get("episode"))
    state, done, answer = replay(case, calls)
    gold = case.gold if isinstance(case.gold, dict) else {}
    process = process_accuracy([c for c in done if c["ok"]], gold.get("milestones") or [])
    if "state" in gold:
        diff = state_mismatches(state, gold["state"]) if state is not None else ["no end state"]
        ok, why = not diff, "; ".join(diff[:3])
        if ok and process < 1.0 and _read_only(case):
            # the goal changes nothing, so the end state cannot tell: its milestones must all be reached
            ok, why = False, "a read-only task: the end state is the initial one, and not every milestone was reached"
    else:
        _, _, gold_answer = replay(case, gold.get("calls") or [])
        ok = answer is not None and _rows(answer) == _rows(gold_answer)
        why = "" if ok else ("no successful call" if answer is None else "the last answer differs from the gold answer")
    details: dict[str, Any] = {
        "process": process,
        "end_state": ok,
        "calls": len(done),
        "episode": {**summary, "error_type": None if ok else error_type(summary, done, gold.get("calls"))},
    }
    if ok:
        return passed(case, **details)
    return failed(
        case, details["episode"]["error_type"] or "end_state_mismatch", why or "the end state differs", **details
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRow(Row):
    """An episode's row: its process accuracy and the episode's end reason (None: not given)."""

    process: float = 0.0
    end: str | None = None


def agent_metrics(rows: list[AgentRow], mode: Mode) -> dict[str, Any]:
    """The agent benchmark's scores.json: end state and process accuracy over the counted episodes
    (a user simulator failure is never charged to the model), per category, error types, end
    reasons and, over trials, pass^k / pass@k. Both modes give the same figures."""
    counted = [r for r in rows if r.error_type != "user_simulator_failure"]
    cats: dict[str, Any] = {}
    for cat in CATEGORIES:
        rs = [r for r in counted if r.category == cat]
        if not rs:
            continue
        ok = sum(r.ok for r in rs)
        cats[cat] = {
            "n": len(rs),
            "correct": ok,
            "end_state_accuracy": safe_ratio(ok, len(rs)),
            "process_accuracy": mean([r.process for r in rs]),
        }
    out: dict[str, Any] = {
        "end_state_accuracy": safe_ratio(sum(r.ok for r in counted), len(counted)),
        "process_accuracy": mean([r.process for r in counted]),
        "episodes": len(rows),
        "counted_episodes": len(counted),
        "user_simulator_failures": len(rows) - len(counted),
        "error_types": dict(sorted(Counter(r.error_type or "unknown" for r in rows if not r.ok).items())),
        "categories": cats,
        "end_reasons": dict(sorted(Counter(r.end or "unknown" for r in rows).items())),
        "user_never_stopped": sum(r.ok and r.end == "user_turn_budget" for r in rows),
    }
    rel = reliability(rows)
    if rel is not None:
        out["reliability"] = rel
    return out


@benchmark("agent")
class AgentBench(Benchmark[AgentRow]):
    """Episodes on sandbox scenarios and constructed dialogues (end state, process, pass^k)."""

    report = AgentReport()

    def load(self, data: Path) -> list[EvalCase]:
        return load_agent_cases(data)

    def score(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        return score_episode(case, prediction, mode)

    def iter_cases(self, data: Path) -> Iterator[EvalCase]:
        return iter_agent_cases(data)

    def row(self, case: EvalCase, record: RecordResult, mode: Mode) -> AgentRow:
        episode = record.details.get("episode") or {}
        return AgentRow.of(
            case, record, process=float(record.details.get("process", 0.0)), end=episode.get("end") or None
        )

    def metrics(self, rows: list[AgentRow], mode: Mode) -> dict[str, Any]:
        return agent_metrics(rows, mode)

    def gold_prediction(self, case: EvalCase) -> str:
        gold = case.gold if isinstance(case.gold, dict) else {}
        calls = [{k: c[k] for k in ("name", "arguments", "label") if k in c} for c in gold.get("calls") or []]
        return json.dumps({"calls": calls, "episode": {"end": "user_stop"}}, ensure_ascii=False)
