"""The ``gta`` benchmark: GTA's ``dataset.json`` scored step by step and end to end.

Every sample yields one step case per gold assistant turn (id ``<id>#<turn index in
dialogs>``, category ``step:tool`` or ``step:answer``) and one end-to-end case (id ``<id>``,
category ``e2e``). A run may predict either setting or both; a setting without any prediction
is reported as ``null``.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from benchsmith.eval import Benchmark, EvalCase, Mode, RecordResult, Row, benchmark, failed, passed
from benchsmith.eval.budget import budget_paused, embedding_text
from benchsmith.eval.scoring import reliability, safe_ratio
from benchsmith.schemas import UserError, read_json

from ._export import export_gta
from ._report import GTAReport
from ._rules import OFFICIAL, RULES, STRICT, GTARules
from ._scorers import (
    CATEGORIES,
    TOOL_CATEGORIES,
    Similarity,
    TurnError,
    answer_kind,
    answer_score,
    answered,
    category_counts,
    check_call,
    f1_from_counts,
    gta_category,
    image_gen_score,
    norm_call,
    parse_final,
    parse_turn,
    references,
    score_tool_step,
    scored_kind,
    tool_specs,
    whitelist_pass,
)

TOOLMETA = "toolmeta.json"  # GTA's tool metadata next to dataset.json (its executor reads the inputs from it)
ID_MAP = "id_map.json"  # written by benchsmith's derive/export: GTA id -> source sample id


def default_similarity() -> Similarity | None:
    """Cosine of sentence embeddings (as :func:`benchsmith.models.text_cosine`; each text cut to
    what the model reads, and the call that loads the model not counted against the record's
    time limit)."""
    from benchsmith.models import cosine, get_embedder

    def sim(a: str, b: str) -> float:
        emb = get_embedder()
        texts = [embedding_text(a), embedding_text(b)]
        with budget_paused() if not emb.loaded else contextlib.nullcontext():
            vecs = emb.encode(texts)
        return float(cosine(vecs[0], vecs[1]))

    return sim


_UNSET: Any = object()


def _read_optional(path: Path) -> Any:
    if not path.is_file():
        return None
    return read_json(path)


def _toolmeta(raw: Any, path: Path) -> dict[str, Any]:
    if raw is None:
        return {}
    items = raw.values() if isinstance(raw, dict) else raw if isinstance(raw, list) else None
    if items is None:
        raise UserError(f"{path} is neither an object nor a list of tools", fix="write GTA's toolmeta.json layout")
    return {t["name"]: t for t in items if isinstance(t, dict) and isinstance(t.get("name"), str)}


def _assistant_turns(where: str, s: Any) -> list[int]:
    if not isinstance(s, dict) or not isinstance(s.get("dialogs"), list):
        raise UserError(f"{where} has no dialogs list", fix="each sample needs tools, files, dialogs, gt_answer")
    turns = [i for i, m in enumerate(s["dialogs"]) if isinstance(m, dict) and m.get("role") == "assistant"]
    if not turns:
        raise UserError(f"{where} has no assistant turn", fix="add the gold assistant turns")
    return turns


def _gold_calls(where: str, i: int, msg: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        return [norm_call(c) for c in msg.get("tool_calls") or []]
    except TurnError as exc:
        raise UserError(f"{where} turn {i}: {exc}", fix="fix the gold tool call") from None


def _check_sample(where: str, s: Any) -> None:
    """Raise the :class:`UserError` building the sample's cases would raise."""
    for i in _assistant_turns(where, s):
        _gold_calls(where, i, s["dialogs"][i])


def _sample_cases(
    where: str, sid: str, s: dict[str, Any], toolmeta: dict[str, Any], id_map: dict[str, Any], root: str
) -> Iterator[EvalCase]:
    """One step case per gold assistant turn, then the end-to-end case."""
    dialogs, gt = s["dialogs"], s.get("gt_answer")
    tools, files = s.get("tools", []), s.get("files", [])
    specs = tool_specs(tools, toolmeta)
    cats = {
        t["name"]: c
        for t in tools
        if isinstance(t, dict) and isinstance(t.get("name"), str) and (c := gta_category(t["name"], t.get("category")))
    }
    # cluster: a query's steps and its end-to-end record are resampled together (not independent)
    meta = {"sample": str(sid), "answer_kind": answer_kind(gt), "root": root, "cluster": f"gta:{sid}"}
    if str(sid) in id_map:
        meta["source_id"] = id_map[str(sid)]
    turns = _assistant_turns(where, s)
    gold_calls: list[dict[str, Any]] = []
    first_calls: list[dict[str, Any]] = []
    for i in turns:
        msg = dialogs[i]
        calls = _gold_calls(where, i, msg)
        gold_calls.extend(calls)
        first_calls.extend(calls[:1])
        final = i == turns[-1]
        yield EvalCase(
            id=f"{sid}#{i}",
            benchmark="gta",
            category="step:tool" if calls else "step:answer",
            input={"dialogs": dialogs[:i], "tools": tools, "files": files, "final": final},
            gold={
                "tool_calls": calls,
                "thought": msg.get("thought"),
                "content": msg.get("content"),
                "gt_answer": gt if not calls else None,
                "sample_gt": gt,
                "final": final,
                "specs": specs,
            },
            meta={**meta, "turn": i},
        )
    first_user = [m for m in dialogs[: turns[0]] if isinstance(m, dict) and m.get("role") == "user"]
    last = dialogs[turns[-1]]
    yield EvalCase(
        id=str(sid),
        benchmark="gta",
        category="e2e",
        input={"dialogs": first_user, "tools": tools, "files": files},
        gold={
            "tool_calls": gold_calls,
            "first_calls": first_calls,
            "gt_answer": gt,
            "content": last.get("content") if not last.get("tool_calls") else None,
            "specs": specs,
            "categories": cats,
        },
        meta=meta,
    )


_COUNTS = ("pred", "gold", "tp")
_SLOTS = tuple((c, k) for c in CATEGORIES for k in _COUNTS)  # the order of GTARow's flattened counts


@dataclass(frozen=True, slots=True, kw_only=True)
class GTARow(Row):
    """A GTA record's row: the step flags and figures its metrics count, whether its sample's
    gold is answered and, end to end, the per-category tool counts (``pred``, ``gold``, ``tp``
    for each of :data:`CATEGORIES`, in that order), as the record's mode counts them."""

    sample: str | None = None
    answered: bool = False
    tool: bool = False
    arg: bool = False
    inst: bool = False
    summ: float = 0.0
    called: bool = False
    call_error: bool = False
    counts: tuple[int, ...] = ()
    calls: int = 0
    call_errors: int = 0
    imggen: float = 0.0
    official_crash: bool = False


def _gold_calls_read(g: dict[str, Any], rules: GTARules) -> list[dict[str, Any]]:
    """An end-to-end case's gold calls: with ``first_call_only`` (official) the first call of each
    gold turn, else every call."""
    return g.get("first_calls", g["tool_calls"]) if rules.first_call_only else g["tool_calls"]


def _flat_counts(case: EvalCase, d: dict[str, Any], rules: GTARules) -> tuple[int, ...]:
    """An end-to-end record's per-category tool counts under ``rules``, flattened (:class:`GTARow`)."""
    g = case.gold
    gold = d.get("gold_tools")
    if gold is None:
        gold = [c["name"] for c in _gold_calls_read(g, rules)]
    counts = category_counts(d.get("pred_tools") or [], gold, rules, g.get("categories"))
    return tuple(counts[c][k] for c, k in _SLOTS)


def _step_figures(rows: list[GTARow], rules: GTARules) -> dict[str, Any] | None:
    """The step-by-step figures (None when no step record had a prediction)."""
    if all(r.error_type == "missing_prediction" for r in rows):
        return None
    tool = [r for r in rows if r.category == "step:tool"]
    ans = [r for r in rows if r.category == "step:answer"]
    n_answered = len({r.sample for r in rows if r.answered})  # each answered sample counts once
    called = [r for r in rows if r.called]
    # official: answer turns of image-generation samples are counted as hits but not in the total
    total = len(tool) + (n_answered if rules.inst_total_per_answered_sample else len(ans))
    out: dict[str, Any] = {
        "steps": len(rows),
        "tool_steps": len(tool),
        "answer_steps": len(ans),
        "answered_samples": n_answered,
        "inst_acc": safe_ratio(sum(r.inst for r in tool) + sum(r.inst for r in ans), total),
        "tool_acc": safe_ratio(sum(r.tool for r in tool), len(tool)),
        "arg_acc": safe_ratio(sum(r.arg for r in tool), len(tool)),
        "summ_acc": safe_ratio(sum([r.summ for r in ans]), n_answered),
        "tool_calls": len(called),
        "tool_call_errors": sum(r.call_error for r in called),
    }
    if rules.notes_gta_crashes and (not tool or not n_answered):
        out["official_crash"] = "GTA's evaluator divides by zero here (no gold tool turn or no answered sample)"
    return out


def _e2e_figures(rows: list[GTARow], rules: GTARules) -> dict[str, Any] | None:
    """The end-to-end figures (None when no end-to-end record had a prediction)."""
    if all(r.error_type == "missing_prediction" for r in rows):
        return None
    answered_rows = [r for r in rows if r.answered]
    ans = sum([r.summ for r in answered_rows])
    totals = {c: {k: 0 for k in _COUNTS} for c in CATEGORIES}
    for r in rows:
        for (c, k), n in zip(_SLOTS, r.counts):
            totals[c][k] += n
    out: dict[str, Any] = {
        "samples": len(rows),
        "answered_samples": len(answered_rows),
        "ans_acc": safe_ratio(ans, len(answered_rows)),
        "tool_f1": {c: {**f1_from_counts(t["tp"], t["pred"], t["gold"], rules), **t} for c, t in totals.items()},
        "tool_calls": sum(r.calls for r in rows),
        "tool_call_errors": sum(r.call_errors for r in rows),
    }
    if rules.imggen_by_arguments:
        out["ans_acc_w_imggen"] = safe_ratio(ans + sum([r.imggen for r in rows]), len(rows))
    if rules.notes_gta_crashes:
        crashes = sum(r.official_crash for r in rows)
        if crashes:
            out["official_crash"] = (
                f"GTA's evaluator raises KeyError 'none' on {crashes} sample(s) whose "
                "gold calls use tools outside its 14; figures count them under the "
                "declared categories"
            )
    return out


def gta_metrics(rows: list[GTARow], rules: GTARules) -> dict[str, Any]:
    """GTA's scores.json under ``rules``: step-by-step and end-to-end figures (each None when that
    setting had no prediction), error types by count, and pass^k / pass@k when the end-to-end
    episodes ran as trials (``--trials``)."""
    out: dict[str, Any] = {
        "metric_mode": rules.mode,
        "step_by_step": _step_figures([r for r in rows if r.category.startswith("step:")], rules),
        "end_to_end": _e2e_figures([r for r in rows if r.category == "e2e"], rules),
        "error_types": dict(Counter(r.error_type for r in rows if r.error_type).most_common()),
    }
    rel = reliability(rows)
    if rel is not None:
        out["reliability"] = rel
    return out


@benchmark("gta")
class GTA(Benchmark[GTARow]):
    """GTA: InstAcc, ToolAcc, ArgAcc, SummAcc (step by step); AnsAcc and per-category tool F1
    (end to end). ``similarity(a, b)`` scores subjective answers; by default the embeddings
    module of the evaluator, when installed."""

    report = GTAReport()
    exporter = staticmethod(export_gta)
    rules = RULES  # MappingProxyType({"strict": STRICT, "official": OFFICIAL}): what each mode does

    def __init__(self, similarity: Similarity | None = _UNSET) -> None:
        self._similarity = similarity
        self._resolved = similarity is not _UNSET

    @property
    def similarity(self) -> Similarity | None:
        if not self._resolved:
            self._similarity = default_similarity()
            self._resolved = True
        return self._similarity

    # ---- load ----------------------------------------------------------------------------------
    def load(self, data: Path) -> list[EvalCase]:
        return list(self.iter_cases(data))

    def iter_cases(self, data: Path) -> Iterator[EvalCase]:
        """The cases one sample at a time. ``dataset.json`` is one JSON object, read whole; every
        sample is checked before the first case is given (the errors :meth:`load` reports), and
        a sample's cases are built when it is reached."""
        data = Path(data)
        path = data / "dataset.json" if data.is_dir() else data
        if not path.is_file():
            raise UserError(f"{path} does not exist", fix="pass GTA's dataset.json or the folder holding it")
        raw = read_json(path)
        if not isinstance(raw, dict):
            raise UserError(f"{path} is not a JSON object of id -> sample", fix="use GTA's dataset.json layout")
        toolmeta = _toolmeta(_read_optional(path.parent / TOOLMETA), path.parent / TOOLMETA)
        id_map = _read_optional(path.parent / ID_MAP)
        id_map = id_map if isinstance(id_map, dict) else {}
        root = str(path.parent.absolute())
        for sid, s in raw.items():
            _check_sample(f"{path} sample {sid}", s)
        for sid, s in raw.items():
            yield from _sample_cases(f"{path} sample {sid}", sid, s, toolmeta, id_map, root)

    # ---- score ---------------------------------------------------------------------------------
    def score(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        if case.category == "step:tool":
            return score_tool_step(case, prediction, mode)
        if case.category == "step:answer":
            return self._score_answer_step(case, prediction, RULES[mode])
        return self._score_e2e(case, prediction, RULES[mode])

    def _score_answer_step(self, case: EvalCase, prediction: str, rules: GTARules) -> RecordResult:
        try:
            turn = parse_turn(prediction, rules)
        except TurnError as exc:
            return failed(
                case,
                exc.code,
                str(exc),
                inst=False,
                summ=0.0,
                called=rules.unreadable_is_failed_call,
                call_error="unreadable" if rules.unreadable_is_failed_call else None,
            )
        inst = turn["kind"] == "answer"
        gt = case.gold["gt_answer"]
        # official scores every gold answer turn against the sample's answer; strict only the final one
        scored = answered(gt, rules) and (rules.scores_every_answer_turn or case.gold.get("final", True))
        called = not inst
        call_error = (
            check_call(turn["tool_calls"][0], case.gold.get("specs") or {}, case.meta.get("root", ""))
            if called
            else None
        )
        extra: dict[str, Any] = {"called": called, "call_error": call_error}
        if not scored:  # a non-final answer turn or an image-generation sample: only the type counts
            if inst:
                return passed(case, 1.0, inst=True, summ=None, **extra)
            return failed(case, "type_mismatch", "expected an answer, got tool calls", inst=False, summ=None, **extra)
        if not inst:
            return failed(
                case, "type_mismatch", "expected the final answer, got tool calls", inst=False, summ=0.0, **extra
            )
        summ, err = answer_score(turn["content"] or "", gt, rules, self.similarity, "step")
        return self._answer_verdict(case, scored_kind(gt, rules), summ, err, inst=True, summ=summ, **extra)

    def _score_e2e(self, case: EvalCase, prediction: str, rules: GTARules) -> RecordResult:
        g = case.gold
        gold_names = [c["name"] for c in _gold_calls_read(g, rules)]
        base: dict[str, Any] = {"gold_tools": gold_names}
        if rules.notes_gta_crashes:
            unknown = sorted({n for n in gold_names if n not in TOOL_CATEGORIES})
            if unknown:
                base["official_crash"] = (
                    f"GTA's evaluator (every mode) raises KeyError 'none': gold tool(s) {', '.join(unknown)} are "
                    "not among its 14 tools; counted under the category the data declares for them, else left out"
                )
        try:
            answer, calls = parse_final(prediction, rules)
        except TurnError as exc:
            if rules.imggen_by_arguments and not answered(g["gt_answer"], rules):  # an empty trajectory
                base["imggen"] = image_gen_score([], [], _gold_calls_read(g, rules), None)[0]
            return failed(case, exc.code, str(exc), pred_tools=[], summ=0.0, calls=0, call_errors=0, **base)
        specs, root = g.get("specs") or {}, case.meta.get("root", "")
        errors = [check_call(c, specs, root) for c in calls]
        # skips_unknown_tool_calls (official): a call to a tool outside the case's tools runs as GTA's
        # InvalidAction and has no category
        names = [
            c["name"] for c, e in zip(calls, errors) if not (rules.skips_unknown_tool_calls and e == "unknown_tool")
        ]
        details = {**base, "pred_tools": names, "calls": len(calls), "call_errors": sum(1 for e in errors if e)}
        gt = g["gt_answer"]
        if not answered(gt, rules):  # image generation
            if rules.imggen_by_arguments:
                score, err = image_gen_score(calls, errors, _gold_calls_read(g, rules), self.similarity, root)
                details.update(summ=None, imggen=score)
                if err:
                    return failed(case, err, "no embedding model to compare the image-generation arguments", **details)
                if score >= 0.5:
                    return passed(case, min(1.0, score), **details)
                return failed(
                    case,
                    "wrong_tools",
                    "the image-generating calls differ from the gold ones",
                    score=min(1.0, score),
                    **details,
                )
            tp = sum((Counter(names) & Counter(gold_names)).values())
            f = f1_from_counts(tp, len(names), len(gold_names))["f1"]
            f = 1.0 if f is None else f
            if f == 1.0:
                return passed(case, 1.0, summ=None, **details)
            return failed(
                case, "wrong_tools", "the tools used differ from the gold ones", score=f, summ=None, **details
            )
        summ, err = answer_score(answer, gt, rules, self.similarity, "e2e")
        return self._answer_verdict(case, scored_kind(gt, rules), summ, err, summ=summ, **details)

    @staticmethod
    def _answer_verdict(case: EvalCase, kind: str, value: float, err: str | None, **details: Any) -> RecordResult:
        if err:
            return failed(case, err, "no embedding model to score a subjective answer", **details)
        if kind == "objective":
            if value == 1.0:
                return passed(case, 1.0, **details)
            return failed(case, "wrong_answer", "a whitelist group is missing or a blacklist alias appears", **details)
        if kind == "counted":
            return failed(case, "unscored_answer", "GTA counts this gt_answer but never scores it", **details)
        if value >= 0.5:
            return passed(case, value, **details)
        return failed(case, "low_similarity", f"best cosine to the references is {value:.3f}", score=value, **details)

    # ---- metrics ---------------------------------------------------------------------------------
    def row(self, case: EvalCase, record: RecordResult, mode: Mode) -> GTARow:
        rules, d = RULES[mode], record.details
        if record.category.startswith("step:"):
            gt = case.gold.get("sample_gt")
            return GTARow.of(
                case,
                record,
                sample=case.meta["sample"],
                answered=answered(gt, rules),
                tool=bool(d.get("tool")),
                arg=bool(d.get("arg")),
                inst=bool(d.get("inst")),
                summ=float(d.get("summ") or 0.0),
                called=bool(d.get("called")),
                call_error=bool(d.get("call_error")),
            )
        if record.category == "e2e":
            gt = case.gold.get("gt_answer")
            return GTARow.of(
                case,
                record,
                answered=answered(gt, rules),
                summ=float(d.get("summ") or 0.0),
                counts=_flat_counts(case, d, rules),
                calls=int(d.get("calls") or 0),
                call_errors=int(d.get("call_errors") or 0),
                imggen=float(d.get("imggen") or 0.0),
                official_crash=bool(d.get("official_crash")),
            )
        return GTARow.of(case, record)

    def metrics(self, rows: list[GTARow], mode: Mode) -> dict[str, Any]:
        return gta_metrics(rows, RULES[mode])

    # ---- gold ----------------------------------------------------------------------------------
    @staticmethod
    def _gold_answer_text(gold: dict[str, Any]) -> str:
        gt, content = gold.get("gt_answer"), gold.get("content") or ""
        if not gold.get("final", True):
            return content
        kind = answer_kind(gt)
        if kind == "subjective":
            return references(gt)[0]
        # (an objective gt_answer is always a dict: the isinstance test only tells the type checker)
        if (
            kind == "objective"
            and isinstance(gt, dict)
            and not all(whitelist_pass(content, gt["whitelist"], gt.get("blacklist"), r) for r in (OFFICIAL, STRICT))
        ):
            return "; ".join(g[0] for g in gt["whitelist"] if isinstance(g, list) and g)
        return content

    def gold_prediction(self, case: EvalCase) -> str:
        g = case.gold
        if case.category == "step:tool":
            return json.dumps({"thought": g.get("thought"), "tool_calls": g["tool_calls"]}, ensure_ascii=False)
        if case.category == "step:answer":
            return json.dumps({"thought": g.get("thought"), "content": self._gold_answer_text(g)}, ensure_ascii=False)
        return json.dumps({"answer": self._gold_answer_text(g), "tool_calls": g["tool_calls"]}, ensure_ascii=False)
