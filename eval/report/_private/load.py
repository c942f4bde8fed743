"""Reading a run folder (``docs/eval/runs.md``): run.json, and per task scores.json, records.jsonl
and replies.jsonl; what the report says about the run's model (the local-model registry) and split
(its manifest.json and datasheet.json).

Only ``run.json`` is required; everything else is read tolerantly: a task without scores.json is
"not scored", unreadable lines of the JSONL files are skipped and counted in ``TaskResults.warnings``, a
split whose manifest or datasheet is missing or unreadable just says less.
Replies are summarised in one pass (status, latency, tokens, the line's byte offset); the full
reply of a case, with its turns, is read again from its offset only when a report shows it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from benchsmith.schemas import (
    RecordResult,
    ReplyLine,
    RunManifest,
    RunTask,
    UserError,
    iter_records,
    iter_reply_lines,
    loads_json,
    read_json,
    read_run_manifest,
    reply_line,
    score_head,
    validate_shape,
)

SCORE_HINT = "run `benchsmith eval score --run {run}` to score it"
#: a task scored on fewer cases than this has its figures marked as resting on few cases
FEW_CASES = 10
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ReplyInfo:
    """What a report needs of one replies.jsonl line, without its (large) messages."""

    id: str
    status: str
    error_type: str | None
    error_message: str
    calls: int
    latency_s: float | None  # summed over the case's turns; None when no turn says
    prompt_tokens: int
    completion_tokens: int
    offset: int  # byte offset of the line in replies.jsonl


@dataclass
class TaskResults:
    """One task of a run: its run.json entry and whatever of its files exist."""

    name: str
    benchmark: str
    folder: Path
    info: RunTask  # the run.json ``tasks`` entry
    scores: dict[str, Any] | None = None  # scores.json, None when not scored
    records: list[RecordResult] = field(default_factory=list)
    replies: dict[str, ReplyInfo] = field(default_factory=dict)  # by case id, the last line wins
    cases: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def scored(self) -> bool:
        return self.scores is not None

    @property
    def done(self) -> int | None:
        """Cases with a final reply: run.json's ``done``, else counted from replies.jsonl; None when
        neither says."""
        from benchsmith.eval.tasks import DONE

        if self.info.done is not None:
            return self.info.done
        return sum(1 for r in self.replies.values() if r.status in DONE) if self.replies else None

    @property
    def scored_cases(self) -> int | None:
        """The cases its figures rest on: the distinct case ids of records.jsonl, else scores.json's
        ``records``; None when not scored or neither says."""
        if self.scores is None:
            return None
        if self.records:
            return len({r.id for r in self.records})
        n = _number(self.scores.get("records"))
        return int(n) if n is not None else None

    @property
    def few_cases(self) -> bool:
        """Scored, on at least one but fewer than :data:`FEW_CASES` cases."""
        n = self.scored_cases
        return n is not None and 0 < n < FEW_CASES

    def reply(self, case_id: str) -> dict[str, Any] | None:
        """The full replies.jsonl line of ``case_id`` (turns included) as JSON for the report's views
        (lone surrogates cleaned), or None."""
        info = self.replies.get(case_id)
        if info is None:
            return None
        with open(self.folder / "replies.jsonl", "rb") as fh:
            fh.seek(info.offset)
            line = reply_line(fh.readline())
        return _clean(line.model_dump(mode="json")) if line is not None else None


@dataclass(frozen=True)
class ModelInfo:
    """The run's model: run.json ``model`` and, for a registered local model, the registry's entry
    (``benchsmith.models.LOCAL_MODELS``); a name the registry does not know has only its name."""

    name: str
    local: bool
    file_sha256: str | None = None  # run.json ``model.file_sha256``: the weights file the run used
    title: str | None = None  # the registry's, as are the three below
    size: int | None = None  # bytes of the weights file
    instruct: bool | None = None  # instruction-tuned (True) or a base model (False)
    pinned_sha256: str | None = None

    @property
    def registered(self) -> bool:
        return self.title is not None


@dataclass(frozen=True)
class Producer:
    """A model that constructed accepted items of the split (datasheet.json ``models``)."""

    model: str
    file_sha256: str | None  # None: a remote model
    samples: int | None  # accepted items it took part in


@dataclass(frozen=True)
class SplitInfo:
    """The split a run evaluated (run.json ``split``) and what its folder says about itself; a
    field is None when its file is missing or unreadable."""

    path: str
    name: str | None = None  # manifest.json
    version: str | None = None
    simulated_reviewers: bool | None = None  # datasheet.json ``verdicts_supplied_automatically``
    producers: tuple[Producer, ...] | None = None  # datasheet.json ``models``


class _Open(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _ProducerShape(_Open):
    model: str
    file_sha256: str | None = None
    samples: int | None = None


class _DatasheetShape(_Open):
    """What the report reads of a split's datasheet.json (written by ``benchsmith annotate finalize``)."""

    verdicts_supplied_automatically: bool | None = None
    models: list[_ProducerShape] | None = None


@dataclass
class Run:
    """A run folder: run.json and its tasks (in :func:`task_sort_key` order), its model and split."""

    path: Path
    manifest: RunManifest
    tasks: dict[str, TaskResults]
    model_info: ModelInfo | None = None
    split_info: SplitInfo | None = None

    @property
    def run_id(self) -> str:
        return self.manifest.run_id or self.path.name

    @property
    def model(self) -> str:
        return self.manifest.model.name if self.manifest.model is not None else "?"

    @property
    def user_model(self) -> str | None:
        """The name of the model that played the user in episodic tasks (run.json ``user_model``), or None."""
        return self.manifest.user_model.name if self.manifest.user_model is not None else None

    @property
    def mode(self) -> str:
        return self.manifest.mode or ""

    @property
    def split(self) -> str:
        return self.manifest.split or ""

    @property
    def status(self) -> str:
        return self.manifest.status or ""

    @property
    def warnings(self) -> list[str]:
        out = []
        for task in self.tasks.values():
            if not task.scored:
                out.append(f"{self.path}: task {task.name} is not scored; " + SCORE_HINT.format(run=self.path))
            out.extend(f"{self.path}: {w}" for w in task.warnings)
        return out


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(value: Any) -> Any:
    """``value`` with every lone surrogate (model text may hold ``"\\ud800"``) replaced by U+FFFD,
    so the report's writers and charts never meet text that cannot be encoded."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    return value


def loads_run_json(raw: bytes) -> Any:
    """One JSON document of a run folder (undecodable bytes replaced, lone surrogates cleaned); a
    ``JSONDecodeError`` for anything unreadable (huge numbers and deep nesting included)."""
    value = loads_json(raw.decode("utf-8", errors="replace"))
    return _clean(value) if _SURROGATE_ESCAPE.search(raw) else value


def task_sort_key(name: str) -> tuple[int, str]:
    """Tasks in the order of their benchmarks' report views (``ReportView.order``), then by name;
    a task no registered benchmark runs comes last."""
    from benchsmith.eval import BENCHMARKS, TASKS

    task = TASKS.get(name)
    bench = BENCHMARKS.get(getattr(task, "benchmark", "")) if task is not None else None
    return (bench.report.order if bench is not None else 1000, name)


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _reply_info(offset: int, line: ReplyLine) -> ReplyInfo:
    # a "shared" turn reused the reply of an identical request of another case: no call, no latency
    turns = [t for t in line.turns if not t.shared]
    latencies = [t.latency_s for t in turns]
    prompt = completion = 0
    for t in turns:
        prompt += int(_number(t.usage.get("prompt_tokens")) or 0)
        completion += int(_number(t.usage.get("completion_tokens")) or 0)
    return ReplyInfo(
        id=_clean(line.id),
        status=line.status,
        error_type=line.error.type if line.error is not None else None,
        error_message=_clean(line.error.message) if line.error is not None else "",
        calls=len(turns),
        latency_s=sum(latencies) if latencies else None,
        prompt_tokens=prompt,
        completion_tokens=completion,
        offset=offset,
    )


def _count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def _load_task(run_dir: Path, meta: RunManifest, name: str, info: RunTask) -> TaskResults:
    folder = run_dir / name
    task = TaskResults(name=name, benchmark=info.benchmark or name, folder=folder, info=info)
    scores_path = folder / "scores.json"
    if scores_path.is_file():
        try:
            raw = scores_path.read_bytes()
            raw.decode("utf-8")
            scores = loads_run_json(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            task.warnings.append(f"{name}/scores.json is not valid JSON; " + SCORE_HINT.format(run=run_dir))
        else:
            if isinstance(scores, dict):
                task.scores = scores
                head = score_head(scores)
                if not info.benchmark and head is not None:
                    task.benchmark = head.benchmark
            else:
                task.warnings.append(f"{name}/scores.json is not an object; " + SCORE_HINT.format(run=run_dir))
    if task.scored and (folder / "records.jsonl").is_file():
        read = list(iter_records(folder / "records.jsonl", clean=_clean))
        task.records = [r for r in read if r is not None]
        if len(task.records) < len(read):
            task.warnings.append(f"{name}/records.jsonl: {len(read) - len(task.records)} unreadable line(s) skipped")
    if (folder / "replies.jsonl").is_file():
        version, model = info.prompt_version, meta.model.name if meta.model is not None else None
        bad = 0
        for offset, line in iter_reply_lines(folder / "replies.jsonl"):
            if line is None:
                bad += 1
                continue
            # lines of an earlier prompt version or model (a re-run after a change) are not this run's
            if version and line.prompt_version not in (None, version):
                continue
            if model and line.model != model:
                continue
            task.replies[line.id] = _reply_info(offset, line)  # the last line for a case wins
        if bad:
            task.warnings.append(f"{name}/replies.jsonl: {bad} unreadable line(s) skipped")
    if info.cases is not None:
        task.cases = info.cases
    elif (folder / "cases.jsonl").is_file():
        task.cases = _count_lines(folder / "cases.jsonl")
    else:
        task.cases = len(task.replies)
    return task


def _sha256(value: Any) -> str | None:
    text = str(value).strip().lower().removeprefix("sha256:") if isinstance(value, str) else ""
    return text if _SHA256.fullmatch(text) else None


def _model_info(meta: RunManifest) -> ModelInfo:
    from benchsmith.models import LOCAL_MODELS

    model = meta.model
    name = model.name if model is not None else "?"
    entry = LOCAL_MODELS.get(name.removeprefix("local:"))
    sha = _sha256(model.file_sha256 if model is not None else None)
    if entry is None:
        return ModelInfo(name=name, local=model is not None and model.local is True, file_sha256=sha)
    return ModelInfo(
        name=name,
        local=True,
        file_sha256=sha,
        title=entry.title,
        size=entry.size,
        instruct=entry.instruct,
        pinned_sha256=entry.sha256,
    )


def _split_info(meta: RunManifest) -> SplitInfo | None:
    """What the split folder's manifest.json and datasheet.json say (each read with the project's
    readers; a missing or unreadable one leaves its fields None)."""
    from benchsmith.construction.nl2api import read_manifest
    from benchsmith.schemas import Split

    split = meta.split
    if not isinstance(split, str) or not split:
        return None
    folder = Split(split)
    name = version = simulated = producers = None
    if folder.has(Split.MANIFEST):
        try:
            manifest = read_manifest(folder.manifest_path)
        except (UserError, OSError):
            pass
        else:
            name, version = manifest.name, manifest.version
    if folder.has("datasheet.json"):
        try:
            sheet = validate_shape(
                read_json(folder.path("datasheet.json")),
                _DatasheetShape,
                where=str(folder.path("datasheet.json")),
                strict=False,
            )
        except (UserError, OSError):
            pass
        else:
            simulated = sheet.verdicts_supplied_automatically
            if sheet.models is not None:
                producers = tuple(
                    Producer(model=m.model, file_sha256=_sha256(m.file_sha256), samples=m.samples) for m in sheet.models
                )
    return SplitInfo(path=split, name=name, version=version, simulated_reviewers=simulated, producers=producers)


def load_run(run_dir: str | Path) -> Run:
    """Read a run folder. A missing or garbled run.json is a :class:`~benchsmith.schemas.UserError`;
    a task without scores.json loads as not scored (``TaskResults.scored`` is False).

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     try:
    ...         load_run(d)
    ...     except UserError as e:
    ...         print(str(e).replace(d, "RUN").split(" (fix:")[0])
    RUN/run.json: missing
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise UserError(
            f"{path}: no such run folder", fix="pass a run folder written by `benchsmith eval run` (it holds run.json)"
        )
    meta = read_run_manifest(path / "run.json")
    names = sorted(meta.tasks, key=task_sort_key)
    return Run(
        path=path,
        manifest=meta,
        tasks={n: _load_task(path, meta, n, meta.tasks[n]) for n in names},
        model_info=_model_info(meta),
        split_info=_split_info(meta),
    )
