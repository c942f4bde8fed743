"""The registered ``bfcl`` benchmark: loading BFCL v4 folders, scoring, aggregating, gold outputs."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterator

from benchsmith.eval import Benchmark, EvalCase, Mode, RecordResult, Row, benchmark, failed, passed, scorer
from benchsmith.eval.budget import check_limit, check_value
from benchsmith.eval.scoring import (
    json_line_at,
    mean,
    read_json_lines,
    safe_ratio,
    scan_json_lines,
    syntax_errors_first,
)
from benchsmith.schemas import UserError

from ._checker import strict_relevant_call
from ._decode import FC, FORMATS, PROMPT, Decoded, decode, has_call, value_prediction
from ._export import export_bfcl
from ._report import BFCLReport
from ._rules import RULES

PREFIX = "BFCL_v4_"
NON_LIVE_AST = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple")
LIVE_AST = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
AST_CATEGORIES = NON_LIVE_AST + LIVE_AST
IRRELEVANCE = ("irrelevance", "live_irrelevance")
RELEVANCE = ("live_relevance",)
CATEGORIES = AST_CATEGORIES + IRRELEVANCE + RELEVANCE


def is_ast(category: str) -> bool:
    return category in AST_CATEGORIES


# ---- loading ----------------------------------------------------------------------------------
def _jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    return read_json_lines(path, fix="check the BFCL data folder")


def _check_record(path: Path, n: int, row: dict[str, Any]) -> str:
    where = f"{path}:{n}"
    rid = row.get("id")
    if not isinstance(rid, str) or not rid:
        raise UserError(f"{where}: missing or non-string 'id'", fix="every BFCL record has a string id")
    funcs = row.get("function")
    if not isinstance(funcs, list):
        raise UserError(f"{where}: record {rid} has no 'function' list", fix="give the function documents")
    for f in funcs:
        params = f.get("parameters") if isinstance(f, dict) else None
        if (
            not isinstance(f, dict)
            or not isinstance(f.get("name"), str)
            or not isinstance(params, dict)
            or not isinstance(params.get("properties", {}), dict)
        ):
            raise UserError(
                f"{where}: record {rid} has a function without a name or a parameters object",
                fix="each function is {name, description, parameters: {type, properties, required}}",
            )
    if not isinstance(row.get("question"), list):
        raise UserError(f"{where}: record {rid} has no 'question' list", fix="question is a list of turns")
    return rid


def _check_answer(path: Path, n: int, row: dict[str, Any]) -> tuple[str, list]:
    where = f"{path}:{n}"
    rid = row.get("id")
    gt = row.get("ground_truth")
    if not isinstance(rid, str):
        raise UserError(f"{where}: possible answer without a string 'id'", fix="every answer has the record's id")
    if not isinstance(gt, list) or not gt:
        raise UserError(
            f"{where}: answer {rid} has no non-empty 'ground_truth' list",
            fix="ground_truth is [{function: {param: [allowed values]}}]",
        )
    for call in gt:
        if (
            not isinstance(call, dict)
            or len(call) != 1
            or not isinstance(next(iter(call.values())), dict)
            or not all(isinstance(v, list) for v in next(iter(call.values())).values())
        ):
            raise UserError(
                f"{where}: answer {rid} has a call that is not {{function: {{param: [allowed]}}}}",
                fix="ground_truth is [{function: {param: [allowed values]}}]",
            )
    return rid, gt


FIX = "check the BFCL data folder"


def load_folder(data: Path) -> list[EvalCase]:
    return list(iter_folder(data))


def iter_folder(data: Path) -> Iterator[EvalCase]:
    """The cases of a BFCL folder, one at a time (each answer file is checked whole first and
    indexed by line offset; an answer is read back, from the file kept open, when its record comes)."""
    data = Path(data)
    if not data.is_dir():
        raise UserError(f"BFCL data folder {data} does not exist", fix="pass the folder holding BFCL_v4_*.json")
    files = {p.name[len(PREFIX) : -len(".json")]: p for p in sorted(data.glob(f"{PREFIX}*.json"))}
    present = [c for c in CATEGORIES if c in files]
    if not present:
        raise UserError(
            f"{data} holds no BFCL_v4_<category>.json file of a supported category",
            fix=f"supported categories: {', '.join(CATEGORIES)}",
        )
    seen: dict[str, str] = {}
    for cat in present:
        path = files[cat]
        apath = data / "possible_answer" / path.name
        answers: dict[str, int] = {}  # id -> offset of its answer line (the last one)
        if is_ast(cat):
            if not apath.is_file():
                raise UserError(f"{apath} is missing", fix=f"the {cat} answers go in possible_answer/{path.name}")
            with syntax_errors_first(apath, fix=FIX):
                for n, offset, row in scan_json_lines(apath, fix=FIX):
                    rid, _ = _check_answer(apath, n, row)
                    answers[rid] = offset
        with contextlib.ExitStack() as stack, syntax_errors_first(path, fix=FIX):
            answer_file = stack.enter_context(open(apath, "rb")) if answers else None
            for n, _, row in scan_json_lines(path, fix=FIX):
                rid = _check_record(path, n, row)
                if rid in seen:
                    raise UserError(f"{path}:{n}: id {rid} repeats (first in {seen[rid]})", fix="ids must be unique")
                seen[rid] = f"{path.name}:{n}"
                gold = None
                if is_ast(cat):
                    if rid not in answers:
                        raise UserError(
                            f"{path}:{n}: record {rid} has no answer in possible_answer/{path.name}",
                            fix="add its ground_truth line or remove the record",
                        )
                    assert answer_file is not None  # an id in answers: the file was open
                    gold = json_line_at(answer_file, answers[rid])["ground_truth"]
                yield EvalCase(
                    id=rid,
                    benchmark="bfcl",
                    category=cat,
                    input={"question": row["question"], "functions": row["function"]},
                    gold=gold,
                    meta={"file": path.name, "line": n},
                )


# ---- scoring ----------------------------------------------------------------------------------
def _check_budget(d: Decoded, prediction: str) -> None:
    """The record's budget (when scored through ``score_cases``): number of calls, nesting depth
    and string length of what was decoded (folded strings are bounded by the decoder itself)."""
    if d.calls is not None:
        check_limit("calls", len(d.calls))
        check_value(d.calls, prediction if isinstance(prediction, str) else None)


@scorer("bfcl.ast")
def score_ast(case: EvalCase, prediction: str, mode: Mode, fmt: str = PROMPT) -> RecordResult:
    """AST categories: decode (official: with the decoder of ``fmt``), then the mode's AST check."""
    rules = RULES[mode]
    d = decode(prediction, rules, fmt)
    _check_budget(d, prediction)
    if d.error is not None or d.calls is None:
        return failed(case, d.error or "ast_decoder:decoder_failed", d.message, format_read=d.fmt)
    if rules.decoder_problems_fail and d.problems:
        code, msg = d.problems[0]
        return failed(case, code, msg, format_read=d.fmt)
    try:
        v = rules.ast_check(case.category, case.input.get("functions", []), case.gold, d.calls, d.fmt)
    except Exception as exc:  # noqa: BLE001 - the official checker raises here too
        if not rules.checker_crash_is_verdict:
            raise
        return failed(
            case,
            "official_checker_crash",
            f"the official checker raises {type(exc).__name__}: {exc} (its whole run stops)",
            format_read=d.fmt,
        )
    if v.ok:
        return passed(case, format_read=d.fmt)
    return failed(case, v.error_type or "ast_checker:unclear", v.message, format_read=d.fmt)


@scorer("bfcl.relevance")
def score_relevance(case: EvalCase, prediction: str, mode: Mode, fmt: str = PROMPT) -> RecordResult:
    """(Ir)relevance categories: is there a function call, and (strict, relevance) a sound one?"""
    rules = RULES[mode]
    d = decode(prediction, rules, fmt)
    _check_budget(d, prediction)
    contains = has_call(d)
    if case.category in IRRELEVANCE:
        if contains:
            return failed(
                case,
                "irrelevance_error:decoder_success",
                "a function call was decoded where none is due",
                format_read=d.fmt,
            )
        return passed(case, format_read=d.fmt)
    if not contains:
        return failed(
            case,
            "relevance_error:decoder_failed",
            f"no function call decoded{': ' + d.message if d.message else ''}",
            format_read=d.fmt,
        )
    if rules.relevance_needs_sound_call:
        v = strict_relevant_call(case.input.get("functions", []), d.calls or [], d.fmt)
        if not v.ok:
            return failed(case, v.error_type or "relevance_error:unclear", v.message, format_read=d.fmt)
    return passed(case, format_read=d.fmt)


# ---- gold outputs -----------------------------------------------------------------------------
def _render(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_render(k)}: {_render(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_render(x) for x in v) + "]"
    return repr(v)


def render_calls(calls: list[tuple[str, dict[str, Any]]], fmt: str = PROMPT) -> str:
    """Calls ``[(name, arguments)]`` written in an output format: the prompt format's Python call
    syntax, or the FC format (BFCL's FC result: ``[{name: arguments as JSON text}]``, a name's
    "." written "_" as FC APIs require). No call: the empty output.

    >>> render_calls([("m.f", {"a": 3, "b": "x"})])
    "[m.f(a=3, b='x')]"
    >>> print(render_calls([("m.f", {"a": 3})], "fc"))
    [{"m_f": "{\\"a\\": 3}"}]
    """
    if not calls:
        return ""
    if fmt == FC:
        return json.dumps(
            [{name.replace(".", "_"): json.dumps(args, ensure_ascii=False)} for name, args in calls], ensure_ascii=False
        )
    return (
        "["
        + ", ".join(f"{name}({', '.join(f'{k}={_render(v)}' for k, v in args.items())})" for name, args in calls)
        + "]"
    )


def _first_of_answer_dict(d: Any) -> Any:
    """An allowed dict ``{key: [allowed...]}`` rendered with each key's first allowed value."""
    if not isinstance(d, dict):
        return d
    return {k: vals[0] for k, vals in d.items() if isinstance(vals, list) and vals and vals[0] != ""}


def _gold_value(allowed: list, schema: Any, language: str) -> Any:
    value = allowed[0]
    t = schema.get("type") if isinstance(schema, dict) else None
    if t == "dict":
        value = _first_of_answer_dict(value)
    elif (
        t in ("array", "tuple")
        and isinstance(schema.get("items"), dict)
        and schema["items"].get("type") == "dict"
        and isinstance(value, list)
    ):
        value = [_first_of_answer_dict(x) for x in value]
    if language != "python" and not isinstance(value, str):
        value = json.dumps(value)
    return value


def _gold_choice(p: str, allowed: list, props: dict, required: set[str]) -> tuple[bool, Any]:
    """Whether parameter ``p`` is written in the gold call, and the allowed value used.

    The first allowed value, except: a leading ``""`` (may be omitted) omits the parameter
    unless the schema requires it (then the first other allowed value is used); a parameter the
    schema does not define is omitted when it may be.
    """
    if not allowed:
        return False, None
    if p not in props and "" in allowed:
        return False, None
    if allowed[0] == "":
        if p in required:
            rest = [a for a in allowed if a != ""]
            return (True, rest[0]) if rest else (False, None)
        return False, None
    return True, allowed[0]


def gold_calls(functions: list, gold: list, language: str = "python") -> list[tuple[str, dict[str, Any]]]:
    """The gold calls ``[(name, arguments)]``, values chosen by :func:`_gold_choice`."""
    schema_of = {f.get("name"): f.get("parameters") or {} for f in functions if isinstance(f, dict)}
    out = []
    for call in gold:
        name, args = next(iter(call.items()))
        raw_params = schema_of.get(name)
        params = raw_params if isinstance(raw_params, dict) else {}
        raw_props = params.get("properties")
        props = raw_props if isinstance(raw_props, dict) else {}
        raw_required = params.get("required")
        required = {p for p in raw_required if isinstance(p, str)} if isinstance(raw_required, list) else set()
        chosen = {}
        for p, allowed in args.items():
            keep, value = _gold_choice(p, allowed, props, required)
            if keep:
                chosen[p] = _gold_value([value], props.get(p), language)
        out.append((name, chosen))
    return out


def render_gold(functions: list, gold: list, language: str = "python", fmt: str = PROMPT) -> str:
    """The gold calls in an output format (prompt-format Python syntax by default).

    >>> fns = [{"name": "m.f", "parameters": {"required": ["c"], "properties": {
    ...     "a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "float"}}}}]
    >>> render_gold(fns, [{"m.f": {"a": [3], "b": ["", "x"], "c": ["", 2.5]}}])
    '[m.f(a=3, c=2.5)]'
    """
    return render_calls(gold_calls(functions, gold, language), fmt) or "[]"


_WORD = re.compile(r"[a-z0-9]+")


def _plausible(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return "example"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    # built per call (fresh lists and dicts); looked up by whatever JSON value "type" holds
    by_type: dict[Any, Any] = {"integer": 1, "float": 1.0, "boolean": True, "array": [], "tuple": [], "dict": {}}
    return by_type.get(schema.get("type"), "example")


def relevance_call(functions: list, question: Any) -> tuple[str, dict[str, Any]] | None:
    """A call to the function sharing most words with the question, required parameters filled in."""
    text = json.dumps(question, ensure_ascii=False).lower()
    words = set(_WORD.findall(text))
    best, best_score = None, -1
    for f in functions:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            continue
        fwords = set(_WORD.findall((f["name"] + " " + str(f.get("description", ""))).lower()))
        score = len(words & fwords)
        if score > best_score:
            best, best_score = f, score
    if best is None:
        return None
    raw_params = best.get("parameters")
    params = raw_params if isinstance(raw_params, dict) else {}
    raw_props = params.get("properties")
    props = raw_props if isinstance(raw_props, dict) else {}
    raw_required = params.get("required")
    required = [p for p in raw_required if isinstance(p, str)] if isinstance(raw_required, list) else []
    return best["name"], {p: _plausible(props.get(p)) for p in required}


def relevance_gold(functions: list, question: Any, fmt: str = PROMPT) -> str:
    """:func:`relevance_call` in an output format (``[]`` when there is no function)."""
    call = relevance_call(functions, question)
    return render_calls([call], fmt) if call else "[]"


# ---- the plug-in ------------------------------------------------------------------------------
def _acc(by_cat: dict[str, dict[str, Any]], cat: str) -> float | None:
    return by_cat[cat]["accuracy"] if cat in by_cat else None


def _present_mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return mean(vals) if vals else None


@dataclass(frozen=True, slots=True, kw_only=True)
class BFCLRow(Row):
    """A BFCL record's row: the output format it was scored in and the one its text was read as."""

    format: str
    format_read: str | None = None


def bfcl_metrics(rows: list[BFCLRow], mode: Mode, default_format: str = PROMPT) -> dict[str, Any]:
    """BFCL's scores.json: accuracy per category and BFCL's summary (non-live AST: the mean of
    simple (itself the mean of the three languages), multiple, parallel and parallel multiple;
    live AST: pooled over its records; irrelevance; overall: the mean of the three present)."""
    by_cat: dict[str, dict[str, Any]] = {}
    errors: dict[str, int] = {}
    read: dict[str, int] = {}
    for r in rows:
        slot = by_cat.setdefault(r.category, {"correct": 0, "total": 0})
        slot["total"] += 1
        slot["correct"] += int(r.ok)
        if not r.ok and r.error_type:
            errors[r.error_type] = errors.get(r.error_type, 0) + 1
        if r.format_read:
            read[r.format_read] = read.get(r.format_read, 0) + 1
    for slot in by_cat.values():
        slot["accuracy"] = safe_ratio(slot["correct"], slot["total"])
    simple = _present_mean([_acc(by_cat, c) for c in ("simple_python", "simple_java", "simple_javascript")])
    non_live = _present_mean([simple] + [_acc(by_cat, c) for c in ("multiple", "parallel", "parallel_multiple")])
    live_correct = sum(by_cat[c]["correct"] for c in LIVE_AST if c in by_cat)
    live_total = sum(by_cat[c]["total"] for c in LIVE_AST if c in by_cat)
    live = safe_ratio(live_correct, live_total) if live_total else None
    irrelevance = _present_mean([_acc(by_cat, c) for c in IRRELEVANCE])
    relevance = _acc(by_cat, "live_relevance")
    overall = _present_mean([non_live, live, irrelevance])
    ordered = {c: by_cat[c] for c in CATEGORIES if c in by_cat}
    ordered.update({c: v for c, v in by_cat.items() if c not in ordered})
    formats = sorted({r.format for r in rows}) or [default_format]
    return {
        "format": formats[0] if len(formats) == 1 else "mixed",
        "formats_read": read,
        "categories": ordered,
        "summary": {
            "non_live_ast": non_live,
            "simple_ast": simple,
            "live_ast": live,
            "irrelevance": irrelevance,
            "relevance": relevance,
            "overall": overall,
        },
        "error_types": dict(sorted(errors.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


@benchmark("bfcl")
class BFCL(Benchmark[BFCLRow]):
    """BFCL v4 single-turn categories: AST (non-live and live) and (ir)relevance.

    Option ``format`` (``prompt`` | ``fc``): the output format of the predictions, i.e. which of
    BFCL's decoders official mode uses. Not given: the format a run recorded in a case's
    ``meta["format"]`` (``eval run`` in tools mode writes ``fc``), else ``prompt``.
    """

    report = BFCLReport()
    exporter = staticmethod(export_bfcl)
    rules = MappingProxyType(RULES)

    option_values = {"format": FORMATS}

    def output_format(self, case: EvalCase) -> str:
        fmt = self.options.get("format") or case.meta.get("format")
        return fmt if fmt in FORMATS else PROMPT

    def load(self, data: Path) -> list[EvalCase]:
        return load_folder(data)

    def iter_cases(self, data: Path) -> Iterator[EvalCase]:
        return iter_folder(data)

    def score(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        if is_ast(case.category):
            return score_ast(case, prediction, mode, self.output_format(case))
        return score_relevance(case, prediction, mode, self.output_format(case))

    def row(self, case: EvalCase, record: RecordResult, mode: Mode) -> BFCLRow:
        fmt = record.details.get("format_read")
        return BFCLRow.of(case, record, format=self.output_format(case), format_read=fmt or None)

    def metrics(self, rows: list[BFCLRow], mode: Mode) -> dict[str, Any]:
        return bfcl_metrics(rows, mode, self.options.get("format") or PROMPT)

    def gold_prediction(self, case: EvalCase) -> str:
        functions = case.input.get("functions", [])
        fmt = self.output_format(case)
        if case.category in IRRELEVANCE:
            return ""
        if case.category in RELEVANCE:
            text = relevance_gold(functions, case.input.get("question"), fmt)
        else:
            from ._checker import language_of

            text = render_gold(functions, case.gold or [], language_of(case.category), fmt)
        # an FC result is a value (the list of calls), not a text reply
        return value_prediction(json.loads(text)) if fmt == FC else text
