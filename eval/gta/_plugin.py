"""The ``gta`` benchmark: GTA's ``dataset.json`` scored step by step and end to end.

Every sample yields one step case per gold assistant turn (id ``<id>#<turn index in
dialogs>``, category ``step:tool`` or ``step:answer``) and one end-to-end case (id ``<id>``,
category ``e2e``). A run may predict either setting or both; a setting without any prediction
is reported as ``null``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from benchsmith.eval import Benchmark, EvalCase, Mode, RecordResult, benchmark, failed, passed, safe_ratio
from benchsmith.schemas import UserError, read_json

from ._scorers import (
    CATEGORIES, Similarity, TurnError, answer_kind, answer_score, category_counts, f1_from_counts, norm_call,
    parse_final, parse_turn, references, score_tool_step, whitelist_pass,
)


def default_similarity() -> Similarity | None:
    """Cosine of sentence embeddings from ``benchsmith.eval._private.embeddings`` (its
    ``text_cosine``, or ``encode`` + ``cosine``); None when that module is not there."""
    try:
        from benchsmith.eval._private import embeddings  # type: ignore[attr-defined]
    except ImportError:
        return None
    fn = getattr(embeddings, "text_cosine", None)
    if callable(fn):
        return lambda a, b: float(fn(a, b))
    encode, cosine = getattr(embeddings, "encode", None), getattr(embeddings, "cosine", None)
    if callable(encode) and callable(cosine):
        def sim(a: str, b: str) -> float:
            vecs = encode([a, b])
            return float(cosine(vecs[0], vecs[1]))
        return sim
    return None


_UNSET: Any = object()


@benchmark("gta")
class GTA(Benchmark):
    """GTA: InstAcc, ToolAcc, ArgAcc, SummAcc (step by step); AnsAcc and per-category tool F1
    (end to end). ``similarity(a, b)`` scores subjective answers; by default the embeddings
    module of the evaluator, when installed."""

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
        data = Path(data)
        path = data / "dataset.json" if data.is_dir() else data
        if not path.is_file():
            raise UserError(f"{path} does not exist", fix="pass GTA's dataset.json or the folder holding it")
        raw = read_json(path)
        if not isinstance(raw, dict):
            raise UserError(f"{path} is not a JSON object of id -> sample", fix="use GTA's dataset.json layout")
        cases: list[EvalCase] = []
        for sid, s in raw.items():
            where = f"{path} sample {sid}"
            if not isinstance(s, dict) or not isinstance(s.get("dialogs"), list):
                raise UserError(f"{where} has no dialogs list", fix="each sample needs tools, files, dialogs, gt_answer")
            dialogs, gt = s["dialogs"], s.get("gt_answer")
            tools, files = s.get("tools", []), s.get("files", [])
            turns = [i for i, m in enumerate(dialogs) if isinstance(m, dict) and m.get("role") == "assistant"]
            if not turns:
                raise UserError(f"{where} has no assistant turn", fix="add the gold assistant turns")
            gold_calls: list[dict[str, Any]] = []
            for i in turns:
                msg = dialogs[i]
                try:
                    calls = [norm_call(c) for c in msg.get("tool_calls") or []]
                except TurnError as exc:
                    raise UserError(f"{where} turn {i}: {exc}", fix="fix the gold tool call") from None
                gold_calls.extend(calls)
                final = i == turns[-1]
                cases.append(EvalCase(
                    id=f"{sid}#{i}", benchmark="gta", category="step:tool" if calls else "step:answer",
                    input={"dialogs": dialogs[:i], "tools": tools, "files": files, "final": final},
                    gold={"tool_calls": calls, "thought": msg.get("thought"), "content": msg.get("content"),
                          "gt_answer": gt if (final and not calls) else None, "final": final},
                    meta={"sample": str(sid), "turn": i, "answer_kind": answer_kind(gt)}))
            first_user = [m for m in dialogs[:turns[0]] if isinstance(m, dict) and m.get("role") == "user"]
            last = dialogs[turns[-1]]
            cases.append(EvalCase(
                id=str(sid), benchmark="gta", category="e2e",
                input={"dialogs": first_user, "tools": tools, "files": files},
                gold={"tool_calls": gold_calls, "gt_answer": gt,
                      "content": last.get("content") if not last.get("tool_calls") else None},
                meta={"sample": str(sid), "answer_kind": answer_kind(gt)}))
        return cases

    # ---- score ---------------------------------------------------------------------------------
    def score(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        if case.category == "step:tool":
            return score_tool_step(case, prediction, mode)
        if case.category == "step:answer":
            return self._score_answer_step(case, prediction, mode)
        return self._score_e2e(case, prediction, mode)

    def _score_answer_step(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        try:
            turn = parse_turn(prediction)
        except TurnError as exc:
            return failed(case, exc.code, str(exc), inst=False, summ=0.0)
        inst = turn["kind"] == "answer"
        gt = case.gold["gt_answer"]
        kind = answer_kind(gt)
        if kind == "none":  # a non-final answer turn or an image-generation sample: only the type counts
            if inst:
                return passed(case, 1.0, inst=True, summ=None)
            return failed(case, "type_mismatch", "expected an answer, got tool calls", inst=False, summ=None)
        if not inst:
            return failed(case, "type_mismatch", "expected the final answer, got tool calls", inst=False, summ=0.0)
        summ, err = answer_score(turn["content"] or "", gt, mode, self.similarity)
        return self._answer_verdict(case, kind, summ, err, inst=True, summ=summ)

    def _score_e2e(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        gold_names = [c["name"] for c in case.gold["tool_calls"]]
        try:
            answer, calls = parse_final(prediction)
        except TurnError as exc:
            return failed(case, exc.code, str(exc), pred_tools=[], gold_tools=gold_names, summ=0.0)
        names = [c["name"] for c in calls]
        gt = case.gold["gt_answer"]
        kind = answer_kind(gt)
        if kind == "none":  # image generation: judged by the tools used
            tp = sum((Counter(names) & Counter(gold_names)).values())
            f = f1_from_counts(tp, len(names), len(gold_names))["f1"]
            f = 1.0 if f is None else f
            if f == 1.0:
                return passed(case, 1.0, pred_tools=names, gold_tools=gold_names, summ=None)
            return failed(case, "wrong_tools", "the tools used differ from the gold ones", score=f,
                          pred_tools=names, gold_tools=gold_names, summ=None)
        summ, err = answer_score(answer, gt, mode, self.similarity)
        return self._answer_verdict(case, kind, summ, err, pred_tools=names, gold_tools=gold_names, summ=summ)

    @staticmethod
    def _answer_verdict(case: EvalCase, kind: str, value: float, err: str | None, **details: Any) -> RecordResult:
        if err:
            return failed(case, err, "no embedding model to score a subjective answer", **details)
        if kind == "objective":
            if value == 1.0:
                return passed(case, 1.0, **details)
            return failed(case, "wrong_answer", "a whitelist group is missing or a blacklist alias appears", **details)
        if value >= 0.5:
            return passed(case, value, **details)
        return failed(case, "low_similarity", f"best cosine to the references is {value:.3f}", score=value, **details)

    # ---- aggregate -------------------------------------------------------------------------------
    def aggregate(self, cases: list[EvalCase], records: list[RecordResult], mode: Mode) -> dict[str, Any]:
        by_id = {c.id: c for c in cases}
        steps = [r for r in records if r.category.startswith("step:")]
        e2e = [r for r in records if r.category == "e2e"]
        out: dict[str, Any] = {"metric_mode": mode,
                               "step_by_step": self._step_figures(steps, by_id, mode),
                               "end_to_end": self._e2e_figures(e2e, by_id, mode)}
        out["error_types"] = dict(Counter(r.error_type for r in records if r.error_type).most_common())
        return out

    @staticmethod
    def _ran(recs: list[RecordResult]) -> bool:
        return any(r.error_type != "missing_prediction" for r in recs)

    def _step_figures(self, recs: list[RecordResult], by_id: dict[str, EvalCase], mode: Mode) -> dict[str, Any] | None:
        if not self._ran(recs):
            return None
        tool = [r for r in recs if r.category == "step:tool"]
        ans = [r for r in recs if r.category == "step:answer"]
        answered = [r for r in ans if answer_kind(by_id[r.id].gold.get("gt_answer")) != "none"]
        inst_hits = sum(1 for r in tool + ans if r.details.get("inst"))
        # official: answer turns of image-generation samples are counted as hits but not in the total
        total = len(tool) + (len(answered) if mode == "official" else len(ans))
        return {
            "steps": len(recs), "tool_steps": len(tool), "answer_steps": len(ans), "answered_samples": len(answered),
            "inst_acc": safe_ratio(inst_hits, total),
            "tool_acc": safe_ratio(sum(1 for r in tool if r.details.get("tool")), len(tool)),
            "arg_acc": safe_ratio(sum(1 for r in tool if r.details.get("arg")), len(tool)),
            "summ_acc": safe_ratio(sum(float(r.details.get("summ") or 0.0) for r in answered), len(answered)),
        }

    def _e2e_figures(self, recs: list[RecordResult], by_id: dict[str, EvalCase], mode: Mode) -> dict[str, Any] | None:
        if not self._ran(recs):
            return None
        answered = [r for r in recs if answer_kind(by_id[r.id].gold.get("gt_answer")) != "none"]
        totals = {c: {"pred": 0, "gold": 0, "tp": 0} for c in CATEGORIES}
        for r in recs:
            gold = r.details.get("gold_tools") or [c["name"] for c in by_id[r.id].gold["tool_calls"]]
            counts = category_counts(r.details.get("pred_tools") or [], gold, mode)
            for c in CATEGORIES:
                for k in ("pred", "gold", "tp"):
                    totals[c][k] += counts[c][k]
        return {
            "samples": len(recs), "answered_samples": len(answered),
            "ans_acc": safe_ratio(sum(float(r.details.get("summ") or 0.0) for r in answered), len(answered)),
            "tool_f1": {c: {**f1_from_counts(t["tp"], t["pred"], t["gold"]), **t} for c, t in totals.items()},
        }

    # ---- gold ----------------------------------------------------------------------------------
    @staticmethod
    def _gold_answer_text(gold: dict[str, Any]) -> str:
        gt, content = gold.get("gt_answer"), gold.get("content") or ""
        kind = answer_kind(gt)
        if kind == "subjective":
            return references(gt)[0]
        if kind == "objective" and not all(whitelist_pass(content, gt["whitelist"], gt.get("blacklist"), m)
                                           for m in ("official", "strict")):
            return "; ".join(g[0] for g in gt["whitelist"] if isinstance(g, list) and g)
        return content

    def gold_prediction(self, case: EvalCase) -> str:
        g = case.gold
        if case.category == "step:tool":
            return json.dumps({"thought": g.get("thought"), "tool_calls": g["tool_calls"]}, ensure_ascii=False)
        if case.category == "step:answer":
            return json.dumps({"thought": g.get("thought"), "content": self._gold_answer_text(g)}, ensure_ascii=False)
        return json.dumps({"answer": self._gold_answer_text(g), "tool_calls": g["tool_calls"]}, ensure_ascii=False)
