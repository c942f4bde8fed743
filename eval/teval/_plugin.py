"""The ``teval`` benchmark: T-Eval's own data files (or ``benchsmith eval derive`` output, which
uses the same layout) -> cases, scores per ability and format, and the Overall figure."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from benchsmith.eval import Benchmark, EvalCase, Mode, RecordResult, Row, benchmark, failed
from benchsmith.eval.scoring import SCORERS, mean
from benchsmith.schemas import UserError, read_json

from . import _scorers
from ._export import export_teval
from ._parse import ResponseError, load_response, plan_from_json
from ._report import TEvalReport
from ._rules import RULES, TEvalRules
from ._scorers import ABILITIES, scorer_name

# file stem (lower case, version suffix allowed) -> (abilities, default format)
_FILE_KINDS: list[tuple[re.Pattern[str], tuple[str, ...], str | None]] = [
    (re.compile(r"^instruct(_v\d+)?"), ("instruct",), None),
    (re.compile(r"^plan_json"), ("plan",), "json"),
    (re.compile(r"^plan_str"), ("plan",), "str"),
    (re.compile(r"^(reason_retrieve_understand|rru)_json"), ("reason", "retrieve", "understand"), "json"),
    (re.compile(r"^reason_str"), ("reason",), "str"),
    (re.compile(r"^retrieve_str"), ("retrieve",), "str"),
    (re.compile(r"^understand_str"), ("understand",), "str"),
    (re.compile(r"^review_str"), ("review",), "str"),
    (re.compile(r"^review_json"), ("review",), "json"),
]

# the formats the official aggregator reads for each ability (Review: review_str only)
_OFFICIAL_FORMATS = {
    "instruct": ("json", "string"),
    "plan": ("str", "json"),
    "reason": ("str", "json"),
    "retrieve": ("str", "json"),
    "understand": ("str", "json"),
    "review": ("str",),
}


def file_kind(path: Path) -> tuple[tuple[str, ...], str | None] | None:
    stem = path.stem.lower()
    for pattern, abilities, fmt in _FILE_KINDS:
        if pattern.match(stem):
            return abilities, fmt
    return None


def _record_format(record: dict[str, Any], default: str | None) -> str | None:
    meta = record.get("meta_data") if isinstance(record.get("meta_data"), dict) else record.get("meta")
    if isinstance(meta, dict):
        fmt = meta.get("response_format") or meta.get("prompt_type")
        if isinstance(fmt, str) and fmt:
            return fmt
    return default


def load_teval(data: Path) -> list[EvalCase]:
    files = [data] if data.is_file() else sorted(p for p in data.glob("*.json")) if data.is_dir() else []
    if not data.exists():
        raise UserError(f"T-Eval data {data} does not exist", fix="pass a folder of T-Eval *.json files")
    cases: list[EvalCase] = []
    for path in files:
        kind = file_kind(path)
        if kind is None:
            continue
        abilities, default_fmt = kind
        content = read_json(path, fix="T-Eval files are one JSON object id -> record")  # UserError naming file, line
        if not isinstance(content, dict):
            raise UserError(f"{path}: expected one JSON object mapping id -> record", fix="use T-Eval's layout")
        for key, record in content.items():
            if not isinstance(record, dict) or "ground_truth" not in record:
                raise UserError(
                    f"{path}: record {key!r} has no ground_truth",
                    fix="each record needs origin_prompt, ground_truth and meta_data (plan: meta)",
                )
            fmt = _record_format(record, default_fmt)
            if fmt is None:
                raise UserError(
                    f"{path}: record {key!r} has no meta_data.response_format",
                    fix="set response_format to json or string (instruct), json or str (others)",
                )
            given = record.get("meta")
            meta_block = given if isinstance(given, dict) else {}
            # records derived from one gold chain (or one record scored for several abilities) are
            # not independent: the bootstrap resamples them together
            given_data = record.get("meta_data")
            source = (given_data if isinstance(given_data, dict) else meta_block).get("source_sample")
            cluster = f"source:{source}" if source is not None else f"{path.stem}/{key}"
            inputs = {"origin_prompt": record.get("origin_prompt", [])}
            if "template" in record:
                inputs["template"] = record["template"]
            if "API_list" in meta_block:
                inputs["api_list"] = meta_block["API_list"]
            for ability in abilities:
                scored_as = "string" if ability == "instruct" and fmt == "str" else fmt
                name = scorer_name(ability, scored_as)
                if name not in SCORERS:
                    raise UserError(
                        f"{path}: record {key!r} has unknown format {fmt!r} for {ability}",
                        fix="instruct: json | string; the others: json | str",
                    )
                cases.append(
                    EvalCase(
                        id=f"{path.stem}/{key}",
                        benchmark="teval",
                        category=f"{ability}/{fmt}",
                        input=inputs,
                        gold=record["ground_truth"],
                        meta={
                            "file": path.name,
                            "key": str(key),
                            "ability": ability,
                            "format": fmt,
                            "scorer": name,
                            "cluster": cluster,
                        },
                    )
                )
    if not cases:
        raise UserError(
            f"no T-Eval records under {data}",
            fix="pass a folder with T-Eval files (instruct_v2.json, plan_json_v2.json, ...) "
            "or the output of `benchsmith eval derive`",
        )
    return cases


def render_gold(case: EvalCase) -> str:
    """The gold answer written as a model should answer the record."""
    ability, fmt, gold = case.meta["ability"], case.meta["format"], case.gold
    if ability == "instruct":
        template = case.input.get("template") or {}
        g = gold if isinstance(gold, dict) else {}
        thought = g.get("thought", "") or ""
        if fmt == "json":
            return json.dumps(
                {
                    template.get("thought", "thought"): thought,
                    template.get("action", "action"): g.get("action"),
                    template.get("args", "args"): g.get("args", {}),
                },
                ensure_ascii=False,
            )
        return (
            f"{template.get('thought_start', '')}{thought}{template.get('thought_end', '')}"
            f"{template.get('action_start', '')}{g.get('action', '')}{template.get('action_end', '')}"
            f"{template.get('args_start', '')}{g.get('args', {})!r}{template.get('args_end', '')}"
        )
    if ability == "plan":
        try:
            steps = plan_from_json(gold)
        except ResponseError:
            return ""
        raw = load_response(gold, "[", "]")
        if fmt == "json":
            return json.dumps(raw, ensure_ascii=False)
        lines = []
        for step in raw:
            if str(step.get("name")) == _scorers.FINISH:
                continue
            args = step.get("args", {})
            lines.append(f"Use {step['name']} with {args!r}")
        return "\n".join(lines) if lines else (steps[0]["name"] if steps else "")
    if ability == "review":
        letter = _scorers.gold_letter(gold)
        if fmt == "json":
            return json.dumps({"answer": letter, "is_finished": letter == "A"})
        return f"Answer: {letter}"
    try:
        step = _scorers.gold_step(gold)
    except ResponseError:
        return ""
    if fmt == "json":
        return json.dumps(step, ensure_ascii=False)
    if ability == "reason":
        return step["thought"]
    if ability == "retrieve":
        return step["name"]
    raw_args = load_response(gold, "{", "}").get("args", {}) if not isinstance(gold, dict) else gold.get("args", {})
    return str(raw_args)


@dataclass(frozen=True, slots=True, kw_only=True)
class TEvalRow(Row):
    """A T-Eval record's row: its figures beside the score (instruct: format and argument
    match; plan: precision and recall)."""

    format: float = 0.0
    args_em: float = 0.0
    precision: float = 0.0
    recall: float = 0.0


def teval_metrics(rows: list[TEvalRow], rules: TEvalRules) -> dict[str, Any]:
    """T-Eval's scores.json: per category (in [0, 1]), per ability and Overall (x100). The mode's
    rules say whether instruct's format / args_em and review's score are rounded to 4 places
    (``round_to_4_places``), whether instruct records tagged ``str`` count as ``string``
    (``instruct_str_counts``; T-Eval's own aggregator reads only the formats of
    ``_OFFICIAL_FORMATS``) and whether a figure with a part missing is None
    (``figures_need_every_part``)."""
    by_cat: dict[str, list[TEvalRow]] = {}  # in the order categories first come
    for r in rows:
        by_cat.setdefault(r.category, []).append(r)
    categories: dict[str, Any] = {}
    for cat, rs in sorted(by_cat.items()):
        entry: dict[str, Any] = {
            "records": len(rs),
            "score": mean(r.score for r in rs),
            "ok": sum(r.ok for r in rs),
            "parse_rate": mean(0.0 if r.error_type in ("parse_error", "missing_prediction") else 1.0 for r in rs),
        }
        if cat.startswith("instruct/"):
            fm, em = mean(r.format for r in rs), mean(r.args_em for r in rs)
            if rules.round_to_4_places:
                fm, em = round(fm, 4), round(em, 4)
            entry.update(format=fm, args_em=em, score=(fm + em) / 2)
        elif cat.startswith("plan/"):
            entry["precision"] = mean(r.precision for r in rs)
            entry["recall"] = mean(r.recall for r in rs)
        elif cat.startswith("review/") and rules.round_to_4_places:
            entry["score"] = round(entry["score"], 4)
        categories[cat] = entry

    abilities: dict[str, float | None] = {}
    for ability in ABILITIES:
        wanted = _OFFICIAL_FORMATS[ability]  # review: review/str only, in both modes
        if ability == "instruct" and rules.instruct_str_counts:
            # instruct string and str records pooled: their scores taken as one list
            pooled: dict[str, list[float]] = {}
            for cat, rs in by_cat.items():
                a, _, f = cat.partition("/")
                if a == "instruct" and f in ("json", "string", "str"):
                    pooled.setdefault("string" if f == "str" else f, []).extend(r.score for r in rs)
            vals = [mean(scores) for scores in pooled.values()]
        else:
            vals = [categories[f"{ability}/{f}"]["score"] for f in wanted if f"{ability}/{f}" in categories]
        whole = len(vals) == len(wanted) if rules.figures_need_every_part else bool(vals)
        abilities[ability] = mean(vals) * 100 if whole else None
    ignored = []
    for cat in categories:
        a, _, f = cat.partition("/")
        if not rules.instruct_str_counts and f not in _OFFICIAL_FORMATS.get(a, ()):
            ignored.append(cat)  # as T-Eval's aggregator, which reads these formats only
        if rules.instruct_str_counts and a == "review" and f != "str":
            ignored.append(cat)  # review/json
    present = [v for v in abilities.values() if v is not None]
    whole = len(present) == len(ABILITIES) if rules.figures_need_every_part else bool(present)
    overall = mean(present) if whole else None
    return {
        "overall": overall,
        "abilities": abilities,
        "missing_abilities": [a for a, v in abilities.items() if v is None],
        "categories": categories,
        "not_in_overall": sorted(ignored),
        "scale": "overall and abilities x100; categories in [0, 1]",
        "records_ok": sum(r.ok for r in rows),
    }


@benchmark("teval")
class TEval(Benchmark[TEvalRow]):
    """T-Eval (six abilities x json/str). Data: T-Eval's JSON files or a derived folder."""

    report = TEvalReport()
    exporter = staticmethod(export_teval)
    rules = MappingProxyType(RULES)

    def load(self, data: Path) -> list[EvalCase]:
        return load_teval(Path(data))

    def score(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        fn = SCORERS.get(case.meta.get("scorer", ""))
        if fn is None:
            return failed(case, "unknown_category", f"no scorer for {case.category}")
        return fn(case, prediction if isinstance(prediction, str) else str(prediction), mode)

    def row(self, case: EvalCase, record: RecordResult, mode: Mode) -> TEvalRow:
        d = record.details
        if case.category.startswith("instruct/"):
            return TEvalRow.of(case, record, format=float(d.get("format", 0.0)), args_em=float(d.get("args_em", 0.0)))
        if case.category.startswith("plan/"):
            return TEvalRow.of(
                case, record, precision=float(d.get("precision", 0.0)), recall=float(d.get("recall", 0.0))
            )
        return TEvalRow.of(case, record)

    def metrics(self, rows: list[TEvalRow], mode: Mode) -> dict[str, Any]:
        return teval_metrics(rows, RULES[mode])

    def gold_prediction(self, case: EvalCase) -> str:
        return render_gold(case)
