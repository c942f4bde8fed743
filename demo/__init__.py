"""The main job on the embedded default data, end to end (``benchsmith demo``).

Chinook + its question/SQL pairs -> SLOT, SEL and REST splits with gold self-tests; T-Eval, GTA,
ToolAssess and ACEBench-special cases derived from the SLOT split (each self-tested); then, with
``model_run``, a small construction pass with the local model, a review of the SLOT split in a
local Label Studio (simulated reviewers, marked as such in the datasheet), and the local model's
evaluation on the finalized split with its report. Every step resumes when run again.

This package sits above every other library layer (it uses construction, annotation and eval);
the CLI only parses the options and calls :func:`run`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

Echo = Callable[[str], None]


def build_report_line(report: dict[str, Any], out: Path) -> str:
    """One line for an ``nl2api build`` report."""
    rejected = ", ".join(f"{k}={v}" for k, v in report["rejected"].items()) or "none"
    return (f"{report['style'].upper()} {out}: {report['verified']}/{report['total']} verified "
            f"({report['verified_rate']:.1%}) in {report['seconds']:.2f}s; rejected: {rejected}")


def run(out: Path, *, limit: int = 8, model_run: bool = True, echo: Echo = print, note: Echo = print) -> None:
    """The main job into ``out``; ``echo`` prints progress, ``note`` prints side remarks (e.g. Label
    Studio's set-up)."""
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db, default_pairs_path
    from benchsmith.eval import derive_all, run_selftest

    out = Path(out)
    db = chinook_db()
    for style in ("slot", "sel", "rest"):
        report = build_split(db, default_pairs_path(), out / style, BuildOptions(style=style, name=f"chinook-{style}"))
        echo(build_report_line(report, out / style))
        scores = run_selftest("nl2api", out / style, out / "selftest" / f"nl2api-{style}")
        echo(f"  gold self-test (nl2api, strict): {scores['records'] - scores['gold_failing']}/{scores['records']} pass")
    summary = derive_all(out / "slot", out / "derived")
    echo(f"cases derived from the SLOT split into {out / 'derived'}:")
    for name, info in summary["derived"].items():
        scores = run_selftest(info["benchmark"], out / "derived" / info["folder"], out / "selftest" / name)
        headline = f"overall {scores['overall']:.2f}, " if "overall" in scores else ""
        echo(f"  {name}: gold self-test ({info['benchmark']}, strict): {headline}"
             f"{scores['records'] - scores['gold_failing']}/{scores['records']} records pass")
    if model_run:
        from benchsmith.models import local_server_status, stop_local_server

        was_running = local_server_status() is not None
        try:
            construct(out, echo=echo)
            reviewed = review(out, echo=echo, note=note)
            evaluate(out, limit, reviewed, echo=echo)
        finally:  # the local model server is stopped afterwards unless it was already running
            if not was_running:
                stop_local_server()
    echo(f"serve the REST split with: benchsmith nl2api serve {out / 'rest'}")


def construct(out: Path, n: int = 8, *, echo: Echo = print) -> None:
    """A small construction pass with the local model: queries drawn from the SLOT split's tools ->
    gold chains on its real database -> quality checks (rules, near-duplicates, one model vote)."""
    from benchsmith.construction import EnvContext, RoleModels, inspect_samples, run_graph
    from benchsmith.construction.checks import CheckContext
    from benchsmith.models import DEFAULT_LOCAL_MODEL, ModelClient, resolve_model

    cfg = resolve_model(DEFAULT_LOCAL_MODEL, None, timeout=300.0, max_tokens=256, temperature=0.7)
    models = RoleModels(default=ModelClient(cfg))
    root, split = out / "construct", out / "slot"
    echo(f"constructing with the local model {cfg.name}: queries -> chains -> checks in {root} (re-running resumes) ...")
    for line in run_graph("queries", split, root / "queries", models=models, options={"n": n}, concurrency=4).describe():
        echo(line)
    chains = run_graph("chains", root / "queries", root / "chains", models=models, concurrency=4,
                       env_context=EnvContext(split=split), options={"step_budget": 4, "max_retries": 1})
    for line in chains.describe():
        echo(line)
    s = inspect_samples(root / "chains" / "samples.jsonl", root / "checked", models=models,
                        context=CheckContext(env=EnvContext(split=split)), concurrency=4)
    by = ", ".join(f"{k}={v}" for k, v in s["rejected_by_check"].items()) or "none"
    echo(f"check {root / 'checked'}: {s['total']} samples, {s['accepted']} accepted for review, {s['rejected']} to the "
         f"error pool (rejected by: {by})")


def review(out: Path, *, echo: Echo = print, note: Echo = print) -> Path:
    """Review the default SLOT split in a local Label Studio (its data dir under ``out``): two simulated
    reviewers per item whose verdicts come from the automated checks (the datasheet says so), an
    adjudicator for disagreements, then the accepted items frozen into ``out/reviewed``."""
    from benchsmith.annotation import (
        LabelStudio,
        Workspace,
        checks_policy,
        finalize,
        label_studio_status,
        resolve_label_studio,
        review_automatically,
        start_label_studio,
        stop_label_studio,
    )

    data_dir = out / "label-studio"
    was_running = label_studio_status(data_dir) is not None
    echo(f"reviewing {out / 'slot'} in a local Label Studio (data dir {data_dir}); the reviewers' verdicts are "
         "supplied automatically from the checks (non-interactive run) ...")
    info = start_label_studio(data_dir=data_dir, echo=note)
    try:
        access = resolve_label_studio(data_dir)
        ws = Workspace(out / "review")
        ws.store.set_meta("name", "chinook-slot")
        ws.load(out / "slot")
        review_automatically(ws, LabelStudio(access.url, access.token), checks_policy(ws.check_context()), echo=echo)
        result = finalize(ws, out / "reviewed", name="chinook-slot-reviewed")
    finally:
        if not was_running:
            stop_label_studio(data_dir)
    sheet = result["datasheet"]
    kappa = {k: v["cohen_kappa"] for k, v in sheet["agreement"].items()}
    echo(f"  Label Studio {info.version} at {info.url}; final {sheet['final']}; Cohen's kappa by round {kappa}; "
         f"finalized split {out / 'reviewed'} version {result['version']} (datasheet.md)")
    return out / "reviewed"


def evaluate(out: Path, limit: int, split: Path | None = None, *, echo: Echo = print) -> None:
    """The local default model on the finalized split (up to ``limit`` cases per task), scored and reported."""
    from benchsmith.eval import TASKS, TaskOptions, run_eval, score_run
    from benchsmith.eval.report import primary, write_report
    from benchsmith.models import DEFAULT_LOCAL_MODEL, ModelClient, resolve_model

    cfg = resolve_model(DEFAULT_LOCAL_MODEL, None, timeout=300.0, max_tokens=256)
    split = split or out / "slot"
    echo(f"evaluating the local model {cfg.name} on {split} (up to {limit} cases per task; re-running resumes) ...")
    # a task may need more cases for its headline to mean something (T-Eval: one per category)
    limits = {name: max(limit, TASKS[name].min_cases) for name in TASKS}
    result = run_eval(split, ModelClient(cfg), cfg.describe(), out / "run", limit=limits, mode="prompt",
                      concurrency=4, options=TaskOptions(mode="prompt", max_tokens=256))
    scores = score_run(out / "run")
    for name, info in result.tasks.items():
        c = info["status_counts"]
        echo(f"  {name}: {info['cases']} cases, {c['ok']} answered, {c['format_error']} unreadable, "
             f"{c['request_error']} refused, {c['transport_error']} failed; {info['model_calls']} model calls")
    report = write_report([out / "run"], out / "report", title="benchsmith demo: the local model on the default split")
    figures = []
    for name, s in scores.items():
        metric, value = primary(s.get("benchmark", name), s)
        figures.append(f"{name} {metric} {'n/a' if value is None else f'{100 * value:.1f}%'}")
    echo("  scores (strict): " + "; ".join(figures))
    echo(f"report: {report['files']['html']}")


__all__ = ["build_report_line", "construct", "evaluate", "review", "run"]
