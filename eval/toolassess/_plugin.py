"""The ``toolassess`` benchmark: tool-use awareness, tool selection and multi-task scenarios
from benchsmith's ToolAssess JSONL (one record a line, ``task`` = awareness | selection | multi;
see ``docs/eval/toolassess.md``)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from benchsmith.eval import Benchmark, EvalCase, Mode, RecordResult, Row, benchmark, failed, passed
from benchsmith.eval.budget import check_limit, check_value
from benchsmith.eval.scoring import mean
from benchsmith.schemas import UserError, loads_json

from ._report import ToolAssessReport
from ._scorers import (
    AWARENESS_CLASSES,
    SELECTION_CLASSES,
    classification_counts,
    norm_label,
    score_awareness,
    score_selection,
    selection_labels,
)

TASKS = ("awareness", "selection", "multi")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a data file, read one line at a time (lines split as
    ``bytes.splitlines`` splits them); a file that cannot be read or is not UTF-8 is a
    :class:`UserError` naming the file and line."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})", fix="check the path and its permissions") from None
    n = 0
    with fh:
        while True:
            try:
                chunk = fh.readline()
            except OSError as exc:
                raise UserError(
                    f"{path}: cannot be read ({exc.strerror})", fix="check the path and its permissions"
                ) from None
            if not chunk:
                break
            for line in chunk.splitlines():  # a lone \r ends a line too, as in bytes.splitlines
                n += 1
                try:
                    yield n, line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise UserError(
                        f"{path}:{n}: not UTF-8 text (bad byte at column {exc.start + 1})",
                        fix="re-save the file as UTF-8",
                    ) from None


def _first_unreadable(path: Path) -> None:
    """Raise the error of ``path``'s first unreadable or non-UTF-8 line, if it has one (what reading
    the whole file before checking any line reported first)."""
    for _ in _lines(path):
        pass


def _tool_names(tools: Any, where: str) -> list[str]:
    if not isinstance(tools, list):
        raise UserError(
            f"{where}: 'tools' must be a list", fix="list the candidate tools (names or objects with a name)"
        )
    names = []
    for t in tools:
        name = t.get("name") if isinstance(t, dict) else t
        if not isinstance(name, str) or not name:
            raise UserError(f"{where}: a tool has no name", fix="give every candidate tool a name")
        names.append(name)
    return names


def _sub_gold(task: str, rec: dict[str, Any], where: str) -> dict[str, Any]:
    if task == "awareness":
        label = norm_label(rec.get("label"))
        if label is None:
            raise UserError(
                f"{where}: label {rec.get('label')!r} is not a class", fix=f"use one of {', '.join(AWARENESS_CLASSES)}"
            )
        return {"label": label}
    if task == "selection":
        names = _tool_names(rec.get("tools"), where)
        answer = rec.get("answer_tools")
        if not isinstance(answer, list) or not all(isinstance(a, str) for a in answer):
            raise UserError(f"{where}: 'answer_tools' must be a list of tool names", fix="write [] when no tool fits")
        unknown = sorted(set(answer) - set(names))
        if unknown:
            raise UserError(
                f"{where}: answer tool {unknown[0]!r} is not among the candidate tools",
                fix="answer_tools must name candidates from 'tools'",
            )
        return {"candidates": names, "answer_tools": sorted(set(answer))}
    raise UserError(f"{where}: unknown task {task!r}", fix=f"use one of {', '.join(TASKS)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAssessRow(Row):
    """A ToolAssess record's row: awareness and selection, the (gold, predicted) label pair;
    selection, how many candidate-tool decisions fell in each (gold, predicted) pair of
    :data:`_DECISIONS`; multi-task, the share of sub-tasks right."""

    label: tuple[Any, Any] = (None, None)
    decisions: tuple[int, ...] = ()
    share: float = 0.0


_TOOL = ("true_tool", "false_tool")
_DECISIONS = tuple((g, p) for g in _TOOL for p in _TOOL)


def _scenarios(shares: list[float]) -> dict[str, Any]:
    """ASA / PSA of multi-task scenarios (all, or one kind), from each one's share of sub-tasks right."""
    return {"scenarios": len(shares), "asa": mean([1.0 if s == 1.0 else 0.0 for s in shares]), "psa": mean(shares)}


def toolassess_metrics(rows: list[ToolAssessRow], mode: Mode) -> dict[str, Any]:
    """ToolAssess's scores.json: awareness and selection classification figures (from the counts
    of (gold, predicted) label pairs), multi-task ASA / PSA (all and by kind), the inputs of TAS
    and the error types by count."""
    awareness = [r for r in rows if r.category == "awareness"]
    selection = [r for r in rows if r.category == "selection"]
    multi = [r for r in rows if r.category.startswith("multi:")]
    out: dict[str, Any] = {"metric_mode": mode}
    out["awareness"] = (
        classification_counts(Counter(r.label for r in awareness), AWARENESS_CLASSES) if awareness else None
    )
    if selection:
        decisions: Counter[tuple[str, str]] = Counter()
        for r in selection:
            decisions.update(dict(zip(_DECISIONS, r.decisions)))
        # ToolAssess's definition: one binary true-tool / false-tool decision per record
        out["selection"] = {
            **classification_counts(Counter(r.label for r in selection), SELECTION_CLASSES),
            "record_accuracy": mean([1.0 if r.ok else 0.0 for r in selection]),
            "records": len(selection),
        }
        # extra figure (not ToolAssess's): every candidate tool of every record as a decision
        out["selection_per_candidate"] = classification_counts(+decisions, SELECTION_CLASSES)
    else:
        out["selection"] = out["selection_per_candidate"] = None
    if multi:
        by_kind: dict[str, list[float]] = {}
        for r in multi:
            by_kind.setdefault(r.category.split(":", 1)[1], []).append(r.share)
        out["multi"] = {
            **_scenarios([r.share for r in multi]),
            "by_kind": {k: _scenarios(by_kind[k]) for k in sorted(by_kind)},
        }
    else:
        out["multi"] = None
    tas_inputs: dict[str, float] = {}
    for sit in ("awareness", "selection"):
        if out[sit]:
            for k in ("accuracy", "precision", "recall", "f1"):
                tas_inputs[f"{sit}.{k}"] = out[sit][k]
    if out["multi"]:
        for kind, fig in out["multi"]["by_kind"].items():
            tas_inputs[f"multi_{kind}.asa"] = fig["asa"]
            tas_inputs[f"multi_{kind}.psa"] = fig["psa"]
    out["tas_inputs"] = tas_inputs
    out["error_types"] = dict(Counter(r.error_type for r in rows if r.error_type).most_common())
    return out


def _hashable(v: Any) -> Any:
    """A label as a counter key: itself, or (a value no class equals) its JSON text."""
    try:
        hash(v)
    except TypeError:
        return ("unhashable", json.dumps(v, sort_keys=True, default=str))
    return v


@benchmark("toolassess")
class ToolAssess(Benchmark[ToolAssessRow]):
    """ToolAssess: awareness (3 classes), selection (binary true/false tool), multi-task ASA/PSA,
    and the inputs of TAS (see :func:`benchsmith.eval.toolassess.tas`)."""

    report = ToolAssessReport()

    def load(self, data: Path) -> list[EvalCase]:
        return list(self.iter_cases(data))

    def iter_cases(self, data: Path) -> Iterator[EvalCase]:
        """The cases one line at a time; only the ids seen so far are kept (to refuse a repeated
        one). The first unreadable line of a file is reported before any other error in it."""
        data = Path(data)
        files = sorted(data.glob("*.jsonl")) if data.is_dir() else [data]
        if not files or not all(f.is_file() for f in files):
            raise UserError(f"{data} has no ToolAssess JSONL", fix="pass a .jsonl file or a folder of them")
        seen: set[str] = set()  # the ids so far
        for f in files:
            try:
                yield from self._file_cases(f, seen)
            except UserError:
                _first_unreadable(f)
                raise

    def _file_cases(self, f: Path, seen: set[str]) -> Iterator[EvalCase]:
        for n, line in _lines(f):
            if not line.strip():
                continue
            where = f"{f}:{n}"
            try:
                rec = loads_json(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"{where} is not JSON ({exc.msg})", fix="write one JSON object a line") from None
            if not isinstance(rec, dict) or rec.get("task") not in TASKS:
                raise UserError(f"{where}: 'task' must be one of {', '.join(TASKS)}", fix="set task")
            rid = str(rec.get("id") or f"{f.stem}-{n}")
            if rid in seen:
                raise UserError(f"{where}: id {rid} appears twice", fix="give every record its own id")
            seen.add(rid)
            task = rec["task"]
            meta: dict[str, Any] = {"file": str(f), "line": n}
            given = rec.get("meta")
            if isinstance(given, dict) and given.get("source_sample") is not None:
                meta["cluster"] = f"source:{given['source_sample']}"  # records derived from one sample move together
            if task == "multi":
                subs = rec.get("subtasks")
                if not isinstance(subs, list) or not subs:
                    raise UserError(f"{where}: a multi record needs a non-empty 'subtasks' list", fix="add them")
                gold_subs = []
                for i, s in enumerate(subs, 1):
                    if not isinstance(s, dict):
                        raise UserError(f"{where} sub-task {i} is not an object", fix="write objects")
                    kind = s.get("task") or rec.get("kind") or ("selection" if "answer_tools" in s else "awareness")
                    gold_subs.append({"task": kind, **_sub_gold(kind, s, f"{where} sub-task {i}")})
                kinds = {g["task"] for g in gold_subs}
                kind = rec.get("kind") or (kinds.pop() if len(kinds) == 1 else "mixed")
                yield EvalCase(
                    id=rid,
                    benchmark="toolassess",
                    category=f"multi:{kind}",
                    input={
                        "scenario": rec.get("scenario") or rec.get("query"),
                        "subtasks": [{k: v for k, v in s.items() if k not in ("label", "answer_tools")} for s in subs],
                    },
                    gold={"subtasks": gold_subs},
                    meta=meta,
                )
            else:
                yield EvalCase(
                    id=rid,
                    benchmark="toolassess",
                    category=task,
                    input={"query": rec.get("query"), "tools": rec.get("tools", [])},
                    gold=_sub_gold(task, rec, where),
                    meta=meta,
                )

    # ---- score ---------------------------------------------------------------------------------
    def score(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        if case.category == "awareness":
            return score_awareness(case, prediction, mode)
        if case.category == "selection":
            return score_selection(case, prediction, mode)
        return self._score_multi(case, prediction, mode)

    def _score_multi(self, case: EvalCase, prediction: str, mode: Mode) -> RecordResult:
        subs = case.gold["subtasks"]
        try:
            value = json.loads(prediction)
        except (ValueError, RecursionError, TypeError):  # not JSON (a number of 4,300+ digits included)
            value = None
        check_value(value, prediction if isinstance(prediction, str) else None)
        if isinstance(value, dict) and isinstance(value.get("subtasks"), list):
            value = value["subtasks"]
        if not isinstance(value, list):
            return failed(
                case, "parse_error", "expected a JSON list with one answer per sub-task", right=[False] * len(subs)
            )
        check_limit("calls", len(value))
        right: list[bool] = []
        for i, gold in enumerate(subs):
            sub_case = EvalCase(id=f"{case.id}/{i + 1}", benchmark="toolassess", category=gold["task"], gold=gold)
            if i >= len(value):
                right.append(False)
                continue
            item = value[i]
            text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
            r = (score_awareness if gold["task"] == "awareness" else score_selection)(sub_case, text, mode)
            right.append(r.ok)
        share = sum(right) / len(right)
        if all(right) and len(value) == len(subs):
            return passed(case, 1.0, right=right)
        err = "wrong_subtask_count" if len(value) != len(subs) else "wrong_subtask"
        return failed(case, err, f"{sum(right)} of {len(subs)} sub-tasks right", score=share, right=right)

    # ---- metrics ---------------------------------------------------------------------------------
    def row(self, case: EvalCase, record: RecordResult, mode: Mode) -> ToolAssessRow:
        d, gold = record.details, case.gold
        if record.category == "awareness":
            return ToolAssessRow.of(case, record, label=(gold["label"], _hashable(d.get("pred"))))
        if record.category == "selection":
            ds = d.get("decisions")
            if ds is None:  # a missing prediction: nothing selected, the record is wrong
                ds = [(n in gold["answer_tools"], False) for n in gold["candidates"]]
            g_label, p_label = (
                selection_labels(set(gold["answer_tools"]), None)
                if "pred_label" not in d
                else (d["gold_label"], d["pred_label"])
            )
            tally = Counter(("true_tool" if g else "false_tool", "true_tool" if p else "false_tool") for g, p in ds)
            return ToolAssessRow.of(
                case,
                record,
                label=(_hashable(g_label), _hashable(p_label)),
                decisions=tuple(tally[k] for k in _DECISIONS),
            )
        if record.category.startswith("multi:"):
            right = d.get("right") or [False] * len(gold["subtasks"])
            return ToolAssessRow.of(case, record, share=sum(right) / len(right) if right else 0.0)
        return ToolAssessRow.of(case, record)

    def metrics(self, rows: list[ToolAssessRow], mode: Mode) -> dict[str, Any]:
        return toolassess_metrics(rows, mode)

    def gold_prediction(self, case: EvalCase) -> str:
        def one(g: dict[str, Any]) -> Any:
            return g["label"] if "label" in g else g["answer_tools"]

        if case.category.startswith("multi:"):
            return json.dumps([one(g) for g in case.gold["subtasks"]], ensure_ascii=False)
        return json.dumps(one(case.gold), ensure_ascii=False)
