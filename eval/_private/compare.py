"""``benchsmith compare``: runs against a baseline on the cases both scored, per task and category.

Each figure is the mean record score over those cases; the difference gets a paired bootstrap
interval (the per-case differences resampled, clusters of records whole: :func:`mean_interval`)
and an exact McNemar test on the cases one run got right and the other wrong (:func:`mcnemar_exact`).
Runs that differ in what they measured (the split's content, the case set, the prompt version, the
scoring mode) are refused, one line naming the difference, unless ``allow`` says it is intended."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ConfigDict, Field

from benchsmith.schemas import (
    ComparedFigure,
    NoiseFigure,
    RunComparison,
    RunManifest,
    StrictModel,
    UserError,
    iter_cases,
    iter_records,
    read_json,
    read_run_manifest,
)

from .core import cluster_of
from .stats import RESAMPLES, mcnemar_exact, mean_interval

DIFFERENCES = ("split", "cases", "prompt", "mode")


class CompareOptions(StrictModel):
    """How ``benchsmith compare`` decides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: frozenset[str] = Field(
        default=frozenset(), description="differences between the runs that are intended: split, cases, prompt, mode"
    )
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0, description="the intervals' confidence level")
    resamples: int = Field(default=RESAMPLES, ge=100, description="bootstrap resamples of each difference")
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0, description="the test's level: p >= alpha is within noise")
    seed: int = Field(default=0, description="the bootstrap's random seed")


@dataclass(frozen=True, slots=True)
class _Scored:
    """One scored case of one run: what a comparison needs of it."""

    category: str
    ok: bool
    score: float
    cluster: str
    fingerprint: str  # the case's content: the same id with another gold is another split


@dataclass
class _Task:
    name: str
    benchmark: str
    prompt_version: str | None
    mode: str | None
    cases: dict[str, _Scored]


def _read_task(run: Path, name: str, manifest: RunManifest) -> _Task:
    folder = run / name
    if not (folder / "scores.json").is_file() or not (folder / "records.jsonl").is_file():
        raise UserError(
            f"{folder}: not scored (no scores.json beside records.jsonl)",
            fix=f"run `benchsmith eval score --run {run}`",
        )
    scores = read_json(folder / "scores.json", fix=f"run `benchsmith eval score --run {run}` again")
    cases = {}
    for case in iter_cases(folder / "cases.jsonl"):
        body = json.dumps([case.category, case.input, case.gold], sort_keys=True, ensure_ascii=False, default=str)
        cases[case.id] = (cluster_of(case), hashlib.sha256(body.encode()).hexdigest()[:16])
    scored: dict[str, _Scored] = {}
    for n, record in enumerate(iter_records(folder / "records.jsonl"), 1):
        if record is None:
            raise UserError(f"{folder / 'records.jsonl'}:{n}: not a record", fix=f"score the run again: {run}")
        cluster, fingerprint = cases.get(record.id, ("", ""))
        scored[record.id] = _Scored(record.category, record.ok, record.score, cluster or record.id, fingerprint)
    info = manifest.tasks[name]
    return _Task(name, info.benchmark, info.prompt_version, scores.get("mode"), scored)


def _differences(a: _Task, b: _Task) -> list[tuple[str, str]]:
    """``(kind, what)`` for each way task ``b`` measured something else than ``a``."""
    out: list[tuple[str, str]] = []
    common = a.cases.keys() & b.cases.keys()
    changed = [i for i in common if a.cases[i].fingerprint != b.cases[i].fingerprint]
    if a.benchmark != b.benchmark or changed:
        what = (
            f"benchmark {a.benchmark} vs {b.benchmark}"
            if a.benchmark != b.benchmark
            else (f"{len(changed)} cases of the same id differ (e.g. {sorted(changed)[0]})")
        )
        out.append(("split", what))
    if a.cases.keys() != b.cases.keys():
        out.append(
            (
                "cases",
                f"{len(a.cases.keys() - b.cases.keys())} cases only in A, {len(b.cases.keys() - a.cases.keys())} only "
                f"in B ({len(common)} in both)",
            )
        )
    if a.prompt_version != b.prompt_version:
        out.append(("prompt", f"prompt version {a.prompt_version} vs {b.prompt_version}"))
    if a.mode != b.mode:
        out.append(("mode", f"scored {a.mode} vs {b.mode}"))
    return out


def _figure(
    task: str, category: str | None, ids: list[str], a: _Task, b: _Task, options: CompareOptions
) -> ComparedFigure:
    diffs = [b.cases[i].score - a.cases[i].score for i in ids]
    clusters = [a.cases[i].cluster for i in ids]
    interval = mean_interval(
        diffs,
        clusters if len(set(clusters)) < len(ids) else None,
        confidence=options.confidence,
        resamples=options.resamples,
        seed=options.seed,
    )
    only_a = sum(a.cases[i].ok and not b.cases[i].ok for i in ids)
    only_b = sum(b.cases[i].ok and not a.cases[i].ok for i in ids)
    p = mcnemar_exact(only_a, only_b)
    mean_a = sum(a.cases[i].score for i in ids) / len(ids)
    mean_b = sum(b.cases[i].score for i in ids) / len(ids)
    holds_zero = interval is None or interval.low <= 0.0 <= interval.high
    return ComparedFigure(
        task=task,
        category=category,
        cases=len(ids),
        a=round(mean_a, 6),
        b=round(mean_b, 6),
        difference=round(mean_b - mean_a, 6),
        interval=None if interval is None else [round(interval.low, 6), round(interval.high, 6)],
        method=None if interval is None else interval.method,
        units=0 if interval is None else interval.units,
        only_a=only_a,
        only_b=only_b,
        p_value=p,
        within_noise=holds_zero or p >= options.alpha,
    )


def compare_runs(runs: list[Path], options: CompareOptions | None = None) -> list[RunComparison]:
    """Each run after the first against the first, task by task on the tasks both ran (each
    scored: ``eval score --run``). A difference in what was measured and not in ``options.allow``
    is a :class:`UserError` naming it."""
    options = options or CompareOptions()
    unknown = sorted(options.allow - set(DIFFERENCES))
    if unknown:
        raise UserError(
            f"--allow {','.join(unknown)}: not a difference compare knows", fix=f"use {', '.join(DIFFERENCES)}"
        )
    if len(runs) < 2:
        raise UserError("compare needs two runs or more", fix="give the baseline run folder, then the others")
    manifests = [read_run_manifest(run / "run.json") for run in runs]
    base, base_manifest = runs[0], manifests[0]
    out: list[RunComparison] = []
    for run, manifest in zip(runs[1:], manifests[1:]):
        names = [n for n in base_manifest.tasks if n in manifest.tasks]
        if not names:
            raise UserError(f"{run} and {base} have no task in common", fix="compare runs of the same tasks")
        allowed: list[str] = []
        figures: list[ComparedFigure] = []
        for name in names:
            a, b = _read_task(base, name, base_manifest), _read_task(run, name, manifest)
            for kind, what in _differences(a, b):
                if kind not in options.allow:
                    raise UserError(
                        f"{run} is not comparable with {base}: task {name}: {what}",
                        fix=f"compare runs of the same split, cases, prompt version and mode, or pass --allow {kind} "
                        "if this difference is intended",
                    )
                allowed.append(f"{name}: {what}")
            common = [i for i in a.cases if i in b.cases]
            if not common:
                raise UserError(
                    f"task {name}: {run} and {base} scored no case in common", fix="compare runs of one split"
                )
            figures.append(_figure(name, None, common, a, b, options))
            by_category: dict[str, list[str]] = {}
            for i in common:
                by_category.setdefault(a.cases[i].category, []).append(i)
            if len(by_category) > 1:
                figures.extend(_figure(name, cat, ids, a, b, options) for cat, ids in sorted(by_category.items()))
        out.append(
            RunComparison(
                baseline=str(base),
                run=str(run),
                allowed=allowed,
                confidence=options.confidence,
                resamples=options.resamples,
                alpha=options.alpha,
                figures=figures,
            )
        )
    return out


def noise_floor(runs: list[Path]) -> list[NoiseFigure]:
    """Per task, how much repeats of the same settings (``eval run --repeats``, each scored) move:
    the share of cases that flip between two repeats (averaged over every pair) and, from it, the
    smallest difference a comparison of two such runs can detect."""
    from scipy.stats import norm

    if len(runs) < 2:
        raise UserError("a noise floor needs two repeats or more", fix="run `eval run --repeats 2` or more")
    manifests = [read_run_manifest(run / "run.json") for run in runs]
    out: list[NoiseFigure] = []
    for name in manifests[0].tasks:
        if not all(name in m.tasks for m in manifests):
            continue
        tasks = [_read_task(run, name, m) for run, m in zip(runs, manifests)]
        common = [i for i in tasks[0].cases if all(i in t.cases for t in tasks[1:])]
        if not common:
            continue
        flips = [
            sum(a.cases[i].ok != b.cases[i].ok for i in common) / len(common)
            for k, a in enumerate(tasks)
            for b in tasks[k + 1 :]
        ]
        rate = sum(flips) / len(flips)
        z = float(norm.ppf(0.975) + norm.ppf(0.8))
        out.append(
            NoiseFigure(
                task=name,
                repeats=len(runs),
                cases=len(common),
                flip_rate=round(rate, 6),
                mean_scores=[round(sum(t.cases[i].score for i in common) / len(common), 6) for t in tasks],
                min_detectable_difference=round(min(1.0, z * (rate / len(common)) ** 0.5), 6) if rate else None,
            )
        )
    return out
