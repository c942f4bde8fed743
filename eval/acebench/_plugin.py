"""The ``acebench`` benchmark plug-in: loading, scoring, metrics and gold predictions."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO, Iterable, Iterator

from benchsmith.eval import Benchmark, EvalCase, Mode, RecordResult, Row, benchmark, failed, passed, scorer
from benchsmith.eval.budget import check_limit, check_value
from benchsmith.eval.episodes import clean_summary, error_type
from benchsmith.eval.scoring import (
    json_line_at,
    mean,
    reliability,
    safe_ratio,
    scan_json_lines,
    sqrt_weights,
    syntax_errors_first,
)
from benchsmith.schemas import UserError

from . import _agent, _normal, _special
from ._decode import DecodeError, format_calls
from ._export import export_acebench
from ._report import AceBenchReport
from ._rules import RULES, STRICT, AceRules

NORMAL = (
    "normal_single_turn_single_function",
    "normal_single_turn_parallel_function",
    "normal_multi_turn_user_adjust",
    "normal_multi_turn_user_switch",
    "normal_similar_api",
    "normal_preference",
    "normal_atom_bool",
    "normal_atom_enum",
    "normal_atom_number",
    "normal_atom_list",
    "normal_atom_object_short",
    "normal_atom_object_deep",
)
SPECIAL = ("special_incomplete", "special_error_param", "special_irrelevant")
AGENT = ("agent_multi_turn", "agent_multi_step")
CATEGORIES = NORMAL + SPECIAL + AGENT
FAMILIES = {"normal": NORMAL, "special": SPECIAL, "agent": AGENT}
FAMILY_SIZES = {"normal": 700, "special": 150, "agent": 50}
MULTI_TURN = ("normal_multi_turn_user_adjust", "normal_multi_turn_user_switch")


def family_of(category: str) -> str:
    return category.split("_", 1)[0]


def family_sizes(cases: list[EvalCase]) -> dict[str, int]:
    """Samples per family of ``cases``, a multi-turn dialogue counted once (ACEBench's own files give
    normal 700, special 150, agent 50: the sizes behind the official Summary weights)."""
    units: dict[str, set[str]] = {}
    for c in cases:
        units.setdefault(family_of(c.category), set()).add(sample_unit(c.category, c.id))
    return {f: len(units[f]) for f in FAMILIES if f in units}


def sample_unit(category: str, case_id: str) -> str:
    """What counts as one sample of its family: a multi-turn dialogue (all its turns), else the case."""
    return dialogue_of(case_id) if category in MULTI_TURN else case_id


def dialogue_of(case_id: str) -> str:
    """``normal_multi_turn_user_adjust_3_1`` -> ``normal_multi_turn_user_adjust_3``."""
    return re.sub(r"_\d+$", "", case_id)


# ---- loading ----------------------------------------------------------------------------------
FIX = "pass an ACEBench data folder"


def _read_jsonl(path: Path) -> Iterator[tuple[int, int, dict[str, Any]]]:
    for n, offset, obj in scan_json_lines(path, fix=FIX):
        if not isinstance(obj.get("id"), str):
            raise UserError(f"{path}:{n}: expected an object with a string 'id'", fix="one JSON object per line")
        yield n, offset, obj


def load_folder(data: Path) -> list[EvalCase]:
    return list(iter_folder(data))


def iter_folder(data: Path) -> Iterator[EvalCase]:
    """The cases of an ACEBench folder, one at a time: each answer file is checked whole first and
    indexed by id; an answer is read from the open answer file when its record comes."""
    data = Path(data)
    if not data.is_dir():
        raise UserError(f"{data} is not a folder", fix="pass an ACEBench folder with data_<category>.json files")
    files = sorted(data.glob("data_*.json"))
    if not files:
        raise UserError(f"{data} holds no data_<category>.json file", fix="pass an ACEBench data folder")
    for f in files:
        category = f.stem[len("data_") :]
        if category not in CATEGORIES:
            raise UserError(
                f"{f}: unknown ACEBench category {category!r}",
                fix=f"rename or remove it; known: {', '.join(CATEGORIES)}",
            )
        answer_file = data / "possible_answer" / f.name
        if not answer_file.is_file():
            raise UserError(f"{answer_file} is missing", fix="possible_answer/ needs a file per data file")
        answers = _answer_lines(answer_file, category)
        with open(answer_file, "rb") as fh:
            yield from _data_cases(f, category, answer_file, answers, fh)


def _answer_lines(answer_file: Path, category: str) -> dict[str, tuple[int, int]]:
    """id -> (line number, byte offset) of its answer in ``answer_file`` (an id on several lines:
    the last one), the whole file checked."""
    answers: dict[str, tuple[int, int]] = {}
    with syntax_errors_first(answer_file, fix=FIX, then=_read_jsonl(answer_file)):
        for n, offset, obj in _read_jsonl(answer_file):
            if "ground_truth" not in obj:
                raise UserError(f"{answer_file} line {n}: no 'ground_truth'", fix="add the possible answer")
            if category.startswith("agent") and "mile_stone" not in obj:
                raise UserError(f"{answer_file} line {n}: no 'mile_stone'", fix="agent answers need milestones")
            answers[obj["id"]] = (n, offset)
    return answers


def _data_cases(
    f: Path, category: str, answer_file: Path, answers: dict[str, tuple[int, int]], fh: BinaryIO
) -> Iterator[EvalCase]:
    """The cases of data file ``f``, each with its answer read from ``fh`` (``answer_file``, open)."""
    agent = category.startswith("agent")
    needs = ("initial_config", "involved_classes") if agent else ("question", "function")
    seen: set[str] = set()
    with syntax_errors_first(f, fix=FIX, then=_read_jsonl(f)):
        for n, _, obj in _read_jsonl(f):
            rid = obj["id"]
            if rid in seen:
                raise UserError(f"{f} line {n}: duplicate id {rid}", fix="ids must be unique")
            seen.add(rid)
            where = answers.get(rid)
            if where is None:
                raise UserError(
                    f"{f} line {n}: id {rid} has no possible answer in {answer_file.name}",
                    fix="add it to possible_answer/",
                )
            bad = [k for k in needs if k not in obj]
            if bad or ("function" in obj and not isinstance(obj["function"], list)):
                raise UserError(
                    f"{f} line {n}: missing or bad {', '.join(bad) or 'function'}",
                    fix="records need question + function list (agent: initial_config, involved_classes)",
                )
            answer_line, offset = where
            ans = json_line_at(fh, offset)
            gold: Any = ans["ground_truth"]
            if agent:
                gold = {"state": gold, "milestones": ans["mile_stone"]}
            # every field's type is known here: model_construct skips re-checking them, and scoring
            # never builds EvalCase's validator
            yield EvalCase.model_construct(
                id=rid,
                benchmark="acebench",
                category=category,
                input={k: v for k, v in obj.items() if k != "id"},
                gold=gold,
                meta={"file": f.name, "line": n, "answer_line": answer_line}
                | ({"cluster": dialogue_of(rid)} if category in MULTI_TURN else {}),  # a dialogue's turns move together
            )


# ---- scoring ----------------------------------------------------------------------------------
@scorer("acebench.normal")
def score_normal(case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
    rules = RULES[mode]
    functions = case.input.get("function") or []
    try:
        calls = rules.output_decoder(prediction)
    except DecodeError as exc:
        return failed(case, "wrong_output_format", f"cannot decode the output: {exc}")
    check_limit("calls", len(calls))
    check_value(
        calls, prediction if isinstance(prediction, str) else None
    )  # folded strings are bounded by the decoder's FoldBudget
    try:
        ok, etype, reason, raw = rules.call_check(functions, calls, case.gold, case.category)
    except _normal.OfficialCrash as exc:  # only the official checker raises it
        return failed(case, "official_crash", f"the official checker would raise: {exc}")
    if ok:
        return passed(case)
    return failed(case, etype or "value_error", reason, raw_error_type=raw)


@scorer("acebench.special")
def score_special(case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
    text = prediction if isinstance(prediction, str) else ""
    ok, etype, reason, _raw = RULES[mode].special_check(case.category, text, case.gold)
    return passed(case) if ok else failed(case, etype or "error_detection", reason)


@scorer("acebench.agent")
def score_agent(case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
    rules = RULES[mode]
    gold = case.gold if isinstance(case.gold, dict) else {}
    turns, reported = _agent.parse_prediction(prediction)
    check_limit("calls", len(turns))
    check_value(reported, prediction if isinstance(prediction, str) else None)
    # the episode's calls are the turns read strictly: the replay's own calls when it reads them so
    strictly = rules.turn_decoder is STRICT.turn_decoder
    replayed: list[dict[str, Any]] = []
    if rules.trust_reported_state and reported is not None:
        # the official evaluator grades the end state recorded at inference time, as reported
        state: Any = json.loads(json.dumps(reported, default=str))
        notes: list[str] = []
        source = "reported"
    else:
        # strict never trusts a reported state: the end state is what the calls produce
        state, notes = _agent.replay(case.input, turns, rules, replayed if strictly else None)
        source = "replayed"
        if reported is not None and json.loads(json.dumps(reported, default=str)) != state:
            notes.append("the reported end state differs from the replay of the calls")
    end_ok, why = rules.end_state_check(state, gold.get("state"))
    if end_ok and rules.full_process_when_end_ok:
        process = 1.0
    else:
        process = _agent.process_score(turns, gold.get("milestones"), rules)
    details: dict[str, Any] = {"process": process, "turns": len(turns), "end_state": source, "replay_notes": notes[:20]}
    summary = _agent.episode_summary(prediction)
    summary = clean_summary(summary) if summary is not None else None
    if summary is not None:  # a benchsmith episode: its end reason and, when it failed, why
        calls = replayed if source == "replayed" and strictly else _agent.replayed_calls(case.input, turns, STRICT)
        gold_calls = [
            {"name": n, "arguments": a}
            for t in _agent.milestone_list(gold.get("milestones"))
            for n, a in _agent.decode_or_skip(t)
        ]
        details["episode"] = {**summary, "error_type": None if end_ok else error_type(summary, calls, gold_calls)}
    if end_ok:
        return passed(case, **details)
    return failed(case, "end_state_mismatch", why + (f" | {notes[0]}" if notes else ""), **details)


@dataclass(frozen=True, slots=True, kw_only=True)
class AceRow(Row):
    """An ACEBench record's row: for the agent categories, its process accuracy as well."""

    process: float = 0.0


def _error_types(rows: Iterable[Row]) -> dict[str, int]:
    """The error types of the failed rows, counted, by name."""
    return dict(sorted(Counter(r.error_type or "unknown" for r in rows if not r.ok).items()))


def _rounded(x: float, rules: AceRules) -> float:
    return round(x, 3) if rules.round_to_3_places else x


def _category(cat: str, rows: list[AceRow], rules: AceRules) -> dict[str, Any]:
    """The figures of one category's rows (multi-turn: per dialogue; agent: user simulator
    failures left out when the rules say so)."""

    def r3(x: float) -> float:
        return _rounded(x, rules)

    n, correct = len(rows), sum(r.ok for r in rows)
    counted = rows
    entry: dict[str, Any] = {"n": n, "correct": correct}
    if cat in MULTI_TURN:
        turns: dict[str, list[int]] = {}  # dialogue -> [turns, turns ok], in the order dialogues come
        for r in rows:
            t = turns.setdefault(dialogue_of(r.id), [0, 0])
            t[0] += 1
            t[1] += r.ok
        end = mean([1.0 if ok == n_turns else 0.0 for n_turns, ok in turns.values()])
        entry.update(
            dialogues=len(turns),
            turn_accuracy=safe_ratio(correct, n),
            accuracy=r3(end),
            end_accuracy=r3(end),
            process_accuracy=r3(mean([r3(ok / n_turns) for n_turns, ok in turns.values()])),
        )
    elif cat in AGENT:
        user_failed = sum(r.episode_error == "user_simulator_failure" for r in rows)
        if rules.skip_user_simulator_failures and user_failed:  # never charged to the model
            counted = [r for r in rows if r.episode_error != "user_simulator_failure"]
            n, correct = len(counted), sum(r.ok for r in counted)
            entry.update(n=n, correct=correct)
        acc = safe_ratio(correct, n)
        entry.update(
            accuracy=r3(acc),
            end_accuracy=r3(acc),
            process_accuracy=r3(mean([r.process for r in counted])),
            user_simulator_failures=user_failed,
        )
        kinds = Counter(r.episode_error for r in rows if r.episode_error)
        if kinds:
            entry["episode_error_types"] = dict(sorted(kinds.items()))
    elif cat in SPECIAL:
        entry["accuracy"] = safe_ratio(correct, n)  # the official summary does not round these
    else:
        entry["accuracy"] = r3(safe_ratio(correct, n))
    entry["error_types"] = _error_types(counted)
    return entry


def acebench_metrics(rows: list[AceRow], rules: AceRules) -> dict[str, Any]:
    """ACEBench's scores.json: per category, per family and the Summary (official rules: ACEBench's
    fixed sqrt weights, figures rounded to 3 places where ACEBench rounds them; strict: weights from
    the data's own family sizes, a multi-turn dialogue counted once, nothing rounded)."""
    by_cat: dict[str, list[AceRow]] = {}
    units: dict[str, set[str]] = {}  # family -> its sample units (as family_sizes counts them)
    for r in rows:
        by_cat.setdefault(r.category, []).append(r)
        units.setdefault(family_of(r.category), set()).add(sample_unit(r.category, r.id))
    cats = {cat: _category(cat, by_cat[cat], rules) for cat in CATEGORIES if cat in by_cat}
    families: dict[str, float] = {}
    for fam, members in FAMILIES.items():
        present = [c for c in members if c in cats]
        if not present:
            continue
        accuracies = [cats[c]["accuracy"] for c in present]
        if rules.missing_category_is_zero:
            families[fam] = _rounded(sum(accuracies) / len(members), rules)
        else:
            families[fam] = _rounded(mean(accuracies), rules)
    out: dict[str, Any] = {"categories": cats, "families": families}
    if rules.fixed_summary_weights:
        weights = sqrt_weights(FAMILY_SIZES)
        w = {f: round(v, 4) for f, v in weights.items()}  # 0.578 / 0.2676 / 0.1545
        out["summary"] = _rounded(sum(families.get(f, 0.0) * w[f] for f in w), rules)
        out["summary_weights"] = w
        out["summary_sizes"] = dict(FAMILY_SIZES)
        out["summary_weights_source"] = "acebench_fixed"
    else:
        # the data's own family sizes (a multi-turn dialogue counts once, as in ACEBench's 700/150/50,
        # which ACEBench's own files reproduce exactly)
        sizes = {f: len(units[f]) for f in FAMILIES if f in units and f in families}
        weights = sqrt_weights(sizes) if sizes else {}
        out["summary"] = _rounded(sum(families[f] * weights[f] for f in weights), rules) if weights else 0.0
        out["summary_weights"] = weights
        out["summary_sizes"] = sizes
        out["summary_weights_source"] = "data"
    out["accuracy"] = safe_ratio(sum(r.ok for r in rows), len(rows))
    rel = reliability(rows)
    if rel is not None:
        out["reliability"] = rel
    return out


@benchmark("acebench")
class AceBench(Benchmark[AceRow]):
    """ACEBench (normal / special / agent), official and strict modes."""

    rules = MappingProxyType(RULES)
    report = AceBenchReport()
    exporter = staticmethod(export_acebench)

    def load(self, data: Path) -> list[EvalCase]:
        return load_folder(Path(data))

    def score(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        fam = family_of(case.category)
        if fam == "special":
            return score_special(case, prediction, mode)
        if fam == "agent":
            return score_agent(case, prediction, mode)
        return score_normal(case, prediction, mode)

    def iter_cases(self, data: Path) -> Iterator[EvalCase]:
        return iter_folder(Path(data))

    def row(self, case: EvalCase, record: RecordResult, mode: Mode) -> AceRow:
        if record.category in AGENT:
            return AceRow.of(case, record, process=float(record.details.get("process", 1.0 if record.ok else 0.0)))
        return AceRow.of(case, record)

    def metrics(self, rows: list[AceRow], mode: Mode) -> dict[str, Any]:
        return acebench_metrics(rows, RULES[mode])

    def gold_prediction(self, case: EvalCase) -> str:
        fam = family_of(case.category)
        if fam == "special":
            return _special.gold_message(case.category, case.gold)
        if fam == "agent":
            # the official inference record: the end state reached and the calls made (first milestone list)
            gold = case.gold if isinstance(case.gold, dict) else {}
            stones = gold.get("milestones")
            if isinstance(stones, list) and stones and isinstance(stones[0], list):
                stones = stones[0]
            state = gold.get("state")
            state = state if isinstance(state, list) else [state] if isinstance(state, dict) else []
            return json.dumps({"result": state, "process": [str(s) for s in (stones or [])]}, ensure_ascii=False)
        gold = case.gold[0] if isinstance(case.gold, list) and case.gold else case.gold
        names = {
            f["name"] for f in case.input.get("function") or [] if isinstance(f, dict) and f.get("name") is not None
        }
        calls = [
            (_normal.resolve_name(k, names), v if isinstance(v, dict) else {})
            for k, v in (gold.items() if isinstance(gold, dict) else [])
        ]
        return format_calls(calls)
