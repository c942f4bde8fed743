"""The ``nl2api`` benchmark: benchsmith NL2API splits (executed) and NESTful files (static).

A split directory (``samples.jsonl``, ``toolset.json``, ``database.sqlite``; REST splits
``endpoints.json``) gives cases whose predicted sequences are really executed on the split's
read-only database (a merged split's ``databases/<db_id>.sqlite`` named by the sample's
``metadata.db_id``, a REST endpoint's by its own ``db_id``), opened and checked when the split is loaded, so a damaged database or a
split file of the wrong shape stops the run with a ``UserError``; the sample's hidden set-up
calls run through the runtime's set-up entry point, a predicted call to a hidden tool is an
``unknown_tool``); NESTful records (``input`` / ``output`` sequences with ``$label$``
references, optional ``sample_id`` / ``gold_answer`` / ``tools``) are scored on intent, slot
and full-sequence match only, since their tools are not available here.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from benchsmith.construction.nl2api import (
    QueryTimeout,
    Rejection,
    Runtime,
    SplitTools,
    ToolError,
    read_manifest,
    result_rows,
    run_and_check,
    run_endpoint,
)
from benchsmith.eval import Benchmark, EvalCase, Mode, RecordResult, Row, benchmark, failed, passed
from benchsmith.eval.scoring import mean
from benchsmith.schemas import (
    ExactAnswer,
    Sample,
    Split,
    ToolCall,
    UnresolvedReference,
    UserError,
    loads_json,
    read_text,
    resolve_references,
)

from ._report import NL2APIReport
from ._rules import RULES
from ._scorers import PredictionError, answers_match, call_metrics, one_call, parse_calls

STYLES = ("slot", "sel", "rest")
METRICS = ("intent_p", "intent_r", "intent_f1", "slot_p", "slot_r", "slot_f1")


class _Split(SplitTools):
    """What executing predictions on one split needs; its files are read and its database is
    opened and checked at once (a broken split is a ``UserError`` before any record is scored)."""

    def __init__(self, root: Path, style: str) -> None:
        super().__init__(root, check=True)
        self.style = style


class _ExecError(Exception):
    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


def _split_style(root: Path, samples: list[Sample]) -> str:
    manifest = Split(root).manifest_path
    if manifest.is_file():
        style = read_manifest(manifest).style
        if style in STYLES:
            return style
    for s in samples:
        for c in s.categories:
            if c in STYLES:
                return c
    return "rest" if Split(root).has(Split.ENDPOINTS) else "slot"


def _nestful_records(path: Path) -> list[Any]:
    """The records of a NESTful file: one JSON array (or object), or one record per line."""
    text = read_text(path)
    try:
        data = loads_json(text)
        return data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(loads_json(line))
                except json.JSONDecodeError as exc:
                    raise UserError(
                        f"{path}:{n} is not JSON ({exc.msg})", fix="write one NESTful record per line"
                    ) from None
        return rows


def _is_nestful_record(rec: Any) -> bool:
    return isinstance(rec, dict) and "output" in rec and ("input" in rec or "query" in rec)


_FIGURES = ("intent_p", "intent_r", "intent_f1", "slot_p", "slot_r", "slot_f1", "sequence_match")


@dataclass(frozen=True, slots=True, kw_only=True)
class NL2APIRow(Row):
    """An NL2API record's row: its figures (:data:`_FIGURES`) and whether it completed (what
    executed records count)."""

    intent_p: float = 0.0
    intent_r: float = 0.0
    intent_f1: float = 0.0
    slot_p: float = 0.0
    slot_r: float = 0.0
    slot_f1: float = 0.0
    sequence_match: float = 0.0
    completion: bool = False


def _block(rows: list[NL2APIRow]) -> dict[str, Any]:
    """The figures of one group of records (all, or one category): means over its records."""

    def fig(k: str) -> float:
        return mean([getattr(r, k) for r in rows])

    executed = [1.0 if r.completion else 0.0 for r in rows if r.category.split("/", 1)[0] in STYLES]
    return {
        "records": len(rows),
        "intent": {"precision": fig("intent_p"), "recall": fig("intent_r"), "f1": fig("intent_f1")},
        "slot": {"precision": fig("slot_p"), "recall": fig("slot_r"), "f1": fig("slot_f1")},
        "full_sequence_accuracy": fig("sequence_match"),
        "completion_rate": mean(executed) if executed else None,
    }


def nl2api_metrics(rows: list[NL2APIRow], mode: Mode) -> dict[str, Any]:
    """NL2API's scores.json: the figures over every record, then per category, the error types by
    count and the mode."""
    by_cat: dict[str, list[NL2APIRow]] = {}
    for r in rows:
        by_cat.setdefault(r.category, []).append(r)
    out = _block(rows)
    out["by_category"] = {c: _block(by_cat[c]) for c in sorted(by_cat)}
    out["error_types"] = dict(Counter(r.error_type for r in rows if r.error_type).most_common())
    out["metric_mode"] = mode
    return out


@benchmark("nl2api")
class NL2API(Benchmark[NL2APIRow]):
    """NL2API scoring: intent and slot P/R/F1, full-sequence match, completion by execution."""

    rules = MappingProxyType(RULES)
    report = NL2APIReport()

    def __init__(self) -> None:
        self._splits: dict[str, _Split] = {}

    # ---- load ----------------------------------------------------------------------------------
    def load(self, data: Path) -> list[EvalCase]:
        data = Path(data)
        if data.is_dir() and Split(data).has(Split.SAMPLES):
            return self._load_split(data)
        if data.is_dir():
            files = sorted(p for p in data.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
            cases: list[EvalCase] = []
            for f in files:
                recs = _nestful_records(f)
                if recs and all(_is_nestful_record(r) for r in recs):
                    cases.extend(self._load_nestful(f, recs))
            if not cases:
                raise UserError(
                    f"{data} holds neither a benchsmith split (samples.jsonl) nor NESTful records",
                    fix="pass a split directory built by benchsmith nl2api build, or a NESTful .json/.jsonl",
                )
            return cases
        if data.is_file():
            recs = _nestful_records(data)
            return self._load_nestful(data, recs)
        raise UserError(f"{data} does not exist", fix="pass a split directory or a NESTful data file")

    def _load_split(self, root: Path) -> list[EvalCase]:
        split = Split.open(root)
        samples = split.samples()
        style = _split_style(root, samples)
        if not split.has(Split.DATABASE) and not split.has_databases():
            raise UserError(f"split {root} has no database.sqlite", fix="rebuild the split (its database is copied in)")
        if style == "rest" and not split.has(Split.ENDPOINTS):
            raise UserError(f"REST split {root} has no endpoints.json", fix="rebuild the split with --style rest")
        if style == "sel" and not split.has(Split.TOOLSET):
            raise UserError(
                f"SEL split {root} has no toolset.json", fix="rebuild the split with this benchsmith version"
            )
        key = str(root.resolve())
        tools = self._splits[key] = _Split(root, style)
        cases = []
        for line, s in enumerate(samples, 1):
            env = s.metadata.get("environment")
            if s.dialogue is not None or (isinstance(env, dict) and env.get("kind") not in (None, "nl2api")):
                continue  # dialogues and sandbox scenarios are episodes: the agent benchmark plays them
            answer = s.answer if isinstance(s.answer, ExactAnswer) else None
            cases.append(
                EvalCase(
                    # a dataset's own difficulty (BIRD) splits the report: slot/simple, slot/moderate, ...
                    id=s.id or f"line-{line}",
                    benchmark="nl2api",
                    category=style
                    + next((f"/{c.split(':', 1)[1]}" for c in s.categories if c.startswith("difficulty:")), ""),
                    input={
                        "query": s.query,
                        "context": s.context,
                        "tools": [t.model_dump(mode="json", exclude_none=True) for t in s.tools],
                    },
                    gold={
                        "calls": [c.call.model_dump(mode="json") for c in s.gold if c.call is not None],
                        "answer": answer.value if answer else None,
                        "ordered": answer.ordered if answer else False,
                        "float_tolerance": answer.float_tolerance if answer else 1e-6,
                    },
                    meta={
                        "source": "split",
                        "split": key,
                        "style": style,
                        "line": line,
                        "source_id": s.provenance.source_id,
                        "setup": [c.model_dump(mode="json") for c in s.setup],
                        "sql": s.metadata.get("sql"),
                        "difficulty": s.difficulty,
                    },
                )
            )
            db_id = s.metadata.get("db_id")
            if db_id is not None:
                cases[-1].meta["db_id"] = db_id
        self._open_databases(tools, cases)
        return cases

    @staticmethod
    def _open_databases(split: _Split, cases: list[EvalCase]) -> None:
        """Open (and check) every database the cases run on now: a missing or damaged one stops the
        load with a ``UserError`` rather than failing records one by one."""
        for case in cases:
            db_id = case.meta.get("db_id")
            if db_id is not None and not isinstance(db_id, str):
                raise UserError(
                    f"{split.root / Split.SAMPLES} line {case.meta['line']}: metadata.db_id {db_id!r} is not a string",
                    fix="name the sample's database by its db_id",
                )
            try:
                split.db_for(db_id)
            except UserError as exc:
                if db_id is None:
                    raise UserError(
                        f"{split.root / Split.SAMPLES} line {case.meta['line']} has no metadata.db_id, "
                        f"and split {split.root} has several databases but no {Split.DATABASE}",
                        fix="give every sample of a merged split its metadata.db_id",
                    ) from exc
                raise
        for name, endpoint in split.endpoints.items():
            if endpoint.get("db_id") is not None:
                try:
                    split.db_for(endpoint["db_id"])
                except UserError as exc:
                    raise UserError(
                        f"{split.root / Split.ENDPOINTS}: endpoint {name!r}: {exc}",
                        fix="rebuild the split with --style rest",
                    ) from None

    def _load_nestful(self, path: Path, recs: list[Any]) -> list[EvalCase]:
        cases = []
        for i, rec in enumerate(recs):
            where = f"{path} record {i + 1}"
            if not _is_nestful_record(rec):
                raise UserError(f"{where} is not a NESTful record", fix="each record needs 'input' and 'output'")
            output = rec["output"]
            if isinstance(output, str):
                try:
                    output = loads_json(output)
                except json.JSONDecodeError:
                    raise UserError(f"{where}: 'output' is a string but not JSON", fix="store the call list") from None
            if not isinstance(output, list):
                raise UserError(f"{where}: 'output' is not a list of calls", fix="store the call list")
            try:
                calls = [one_call(c, n) for n, c in enumerate(output, 1)]
            except PredictionError as exc:
                raise UserError(f"{where}: {exc}", fix="fix the gold call") from None
            tools = rec.get("tools")
            if isinstance(tools, str):
                try:
                    tools = loads_json(tools)
                except json.JSONDecodeError:
                    tools = None
            cases.append(
                EvalCase(
                    id=str(rec.get("sample_id") or rec.get("id") or f"{path.stem}-{i + 1}"),
                    benchmark="nl2api",
                    category="nestful",
                    input={"query": rec.get("input", rec.get("query")), "tools": tools},
                    gold={"calls": calls, "answer": rec.get("gold_answer")},
                    meta={"source": "nestful", "file": str(path), "index": i},
                )
            )
        return cases

    # ---- score ---------------------------------------------------------------------------------
    def score(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        executable = case.meta.get("source") == "split"
        zero: dict[str, Any] = {
            **{k: 0.0 for k in METRICS},
            "sequence_match": False,
            "completion": False if executable else None,
        }
        try:
            pred = parse_calls(prediction)
        except PredictionError as exc:
            return failed(case, exc.code, str(exc), **zero)
        rules = RULES[mode]
        m = call_metrics(pred, case.gold["calls"], rules)
        if not executable:
            m["completion"] = None
            if m["sequence_match"]:
                return passed(case, 1.0, **m)
            return failed(case, "sequence_mismatch", "the predicted sequence differs from the gold one", **m)
        m["completion"] = False
        if not pred:
            return failed(case, "empty_sequence", "no calls predicted", **m)
        split = self._split_for(case)
        try:
            rows = self._execute(split, case, pred)
        except _ExecError as exc:
            return failed(case, exc.code, str(exc), **m)
        gold = case.gold
        if gold["answer"] is None:
            return failed(case, "no_gold_answer", "the sample has no exact answer to compare with", **m)
        expected = [list(r) for r in gold["answer"]]
        ok = answers_match(expected, rows, ordered=gold["ordered"], rules=rules, tolerance=gold["float_tolerance"])
        if (
            not ok
            and gold["ordered"]
            and rules.ties_in_any_order
            and split.style != "rest"
            and case.meta.get("sql")
            and answers_match(expected, rows, ordered=False, rules=rules, tolerance=gold["float_tolerance"])
        ):
            ok = self._tie_aware(split, case, pred, expected)
        m["completion"] = ok
        if ok:
            return passed(case, 1.0, **m)
        same_rows = gold["ordered"] and answers_match(
            expected, rows, ordered=False, rules=rules, tolerance=gold["float_tolerance"]
        )
        return failed(
            case,
            "order_mismatch" if same_rows else "wrong_answer",
            f"expected {len(expected)} rows {expected[:3]!r}, got {len(rows)} rows {rows[:3]!r}",
            **m,
        )

    def _split_for(self, case: EvalCase) -> _Split:
        key = case.meta["split"]
        if key not in self._splits:  # a case made by another instance
            root = Path(key)
            self._splits[key] = _Split(root, case.meta.get("style", "slot"))
        return self._splits[key]

    @staticmethod
    def _execute(split: _Split, case: EvalCase, pred: list[dict[str, Any]]) -> list[list[Any]]:
        """Run the predicted calls (after the sample's set-up); the final output's rows."""
        try:
            calls = [ToolCall.model_validate(c) for c in pred]
        except ValidationError as exc:
            raise _ExecError("malformed_call", f"not a valid tool call: {exc.errors()[0]['msg']}") from None
        try:
            db_id = case.meta.get("db_id")
            if split.style == "rest":
                outputs: dict[str, Any] = {}
                final: Any = None
                for call in calls:
                    endpoint = split.endpoints.get(call.name)
                    if endpoint is None:
                        raise _ExecError("unknown_tool", f"unknown endpoint {call.name!r}")
                    args = resolve_references(call.arguments, outputs)
                    extra = sorted(set(args) - set(endpoint["parameters"]))
                    if extra:
                        raise _ExecError("unknown_argument", f"endpoint {call.name} has no parameter {extra[0]!r}")
                    missing = sorted(set(endpoint["parameters"]) - set(args))
                    if missing:
                        raise _ExecError("missing_argument", f"endpoint {call.name} needs parameter {missing[0]!r}")
                    # each endpoint runs on its own database (a merged split's endpoints name theirs)
                    final = run_endpoint(split.db_for(endpoint.get("db_id") or db_id), endpoint, args)
                    if call.label:
                        outputs[call.label] = final
                return [list(r) for r in final["rows"]]
            db = split.db_for(db_id)
            rt = Runtime(db, split.bindings)
            rt.setup(ToolCall.model_validate(c) for c in case.meta.get("setup", []))
            final = None
            for call in calls:
                final = rt.call(call)
            return [list(r) for r in result_rows(final, db)]
        except _ExecError:
            raise
        except UnresolvedReference as exc:
            raise _ExecError("bad_reference", str(exc)) from None
        except ToolError as exc:
            raise _ExecError(exc.code, str(exc)) from None
        except QueryTimeout as exc:
            raise _ExecError("timeout", str(exc)) from None
        except sqlite3.Error as exc:
            raise _ExecError("sql_error", str(exc)) from None
        except RecursionError:
            raise _ExecError("tool_error", "argument nesting too deep") from None
        except Exception as exc:  # noqa: BLE001 - a tool crash on model input fails this record only
            raise _ExecError("tool_error", f"{type(exc).__name__}: {exc}") from None

    @staticmethod
    def _tie_aware(split: _Split, case: EvalCase, pred: list[dict[str, Any]], expected: list[list[Any]]) -> bool:
        """Rows right, order differs: accept swaps among rows tied on the SQL's ORDER BY keys."""
        try:
            run_and_check(
                split.db_for(case.meta.get("db_id")),
                [ToolCall.model_validate(c) for c in case.meta.get("setup", [])],
                [ToolCall.model_validate(c) for c in pred],
                [tuple(r) for r in expected],
                True,
                bindings=split.bindings,
                sql=case.meta["sql"],
            )
            return True
        except (Rejection, ValidationError):
            return False
        except Exception:  # noqa: BLE001
            return False

    # ---- metrics ---------------------------------------------------------------------------------
    def row(self, case: EvalCase, record: RecordResult, mode: Mode) -> NL2APIRow:
        d = record.details
        return NL2APIRow.of(
            case,
            record,
            completion=bool(d.get("completion")),
            **{k: float(d.get(k) or 0.0) for k in _FIGURES},
        )

    def metrics(self, rows: list[NL2APIRow], mode: Mode) -> dict[str, Any]:
        return nl2api_metrics(rows, mode)

    def gold_prediction(self, case: EvalCase) -> str:
        return json.dumps(
            [{k: v for k, v in c.items() if not (k == "label" and v is None)} for c in case.gold["calls"]],
            ensure_ascii=False,
        )

    def close(self) -> None:
        for s in self._splits.values():
            s.close()
