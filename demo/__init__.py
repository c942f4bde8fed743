"""The main job on the embedded default data, end to end (``benchsmith demo``).

Chinook + its question/SQL pairs -> SLOT, SEL and REST splits with gold self-tests; T-Eval, GTA,
ToolAssess and ACEBench-special cases derived from the SLOT split (each self-tested); then, with
``model_run``, a small construction pass with the local model (queries and chains on the SLOT
split, dialogues on a few sandbox scenarios), a review in a local Label Studio of the SLOT split
together with what the construction pass built (one workspace, several sources; simulated
reviewers, marked as such in the datasheet), and the local model's evaluation on the finalized
split with its report, including a small agent evaluation (a few sandbox scenarios and the reviewed
dialogues as episodes against a simulated user, two trials each). Every step resumes when run again.

This package sits above every other library layer (it uses construction, annotation and eval);
the CLI only parses the options and calls :func:`run`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ._private.mcp import SQLITE_MCP_SERVER, STORE_PROBES, construct_mcp, sqlite_server_command, store_template

Echo = Callable[[str], None]


def build_report_line(report: dict[str, Any], out: Path) -> str:
    """One line for an ``nl2api build`` report."""
    rejected = ", ".join(f"{k}={v}" for k, v in report["rejected"].items()) or "none"
    return (
        f"{report['style'].upper()} {out}: {report['verified']}/{report['total']} verified "
        f"({report['verified_rate']:.1%}) in {report['seconds']:.2f}s; rejected: {rejected}"
    )


class StageClock:
    """Wall time of each stage of the main job, printed (and written to ``timings.json``) at its end."""

    def __init__(self) -> None:
        import time

        self._now = time.perf_counter
        self.started = self._now()
        self.stages: dict[str, float] = {}

    def __call__(self, name: str) -> Any:
        import contextlib

        @contextlib.contextmanager
        def timed() -> Any:
            t0 = self._now()
            try:
                yield
            finally:
                self.stages[name] = self.stages.get(name, 0.0) + self._now() - t0

        return timed()

    def summary(self) -> dict[str, Any]:
        return {
            "stages_s": {k: round(v, 1) for k, v in self.stages.items()},
            "total_s": round(self._now() - self.started, 1),
        }

    def line(self) -> str:
        s = self.summary()
        parts = ", ".join(f"{k} {_mmss(v)}" for k, v in s["stages_s"].items())
        return f"stage times: {parts}; total {_mmss(s['total_s'])}"


def _mmss(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


#: cases per task in the main job's evaluation, and requests its construction pass writes: small enough
#: for the main job to stay within 12 minutes warm on 2 cores with Qwen2.5-Coder 0.5B (docs/models.md)
DEMO_LIMIT = 2
DEMO_QUERIES = 4
#: requests the main job builds on the MCP server (mcp-server-sqlite on a small store database)
DEMO_MCP_QUERIES = 4


def run(out: Path, *, limit: int = DEMO_LIMIT, model_run: bool = True, echo: Echo = print, note: Echo = print) -> None:
    """The main job into ``out``; ``echo`` prints progress, ``note`` prints side remarks (e.g. Label
    Studio's set-up). Each stage's wall time is printed at the end and kept in ``out/timings.json``."""
    from benchsmith.schemas import Bars

    # one progress display for the whole job: every stage adds its bars to it (on a terminal)
    with Bars():
        _run(Path(out), limit=limit, model_run=model_run, echo=echo, note=note)


def _run(out: Path, *, limit: int, model_run: bool, echo: Echo, note: Echo) -> None:
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db, default_pairs_path
    from benchsmith.eval import derive_all, run_selftest
    from benchsmith.schemas import progress_bar, write_json

    clock = StageClock()
    with clock("build"):
        db = chinook_db()
        for style in ("slot", "sel", "rest"):
            with progress_bar(f"build {style}") as bar:
                options = BuildOptions(style=style, name=f"chinook-{style}", progress=bar.advance)
                report = build_split(db, default_pairs_path(), out / style, options)
            echo(build_report_line(report, out / style))
            scores = run_selftest("nl2api", out / style, out / "selftest" / f"nl2api-{style}")
            echo(
                f"  gold self-test (nl2api, strict): {scores['records'] - scores['gold_failing']}/{scores['records']} pass"
            )
    with clock("dataset"):
        dataset(out, echo=echo)
    with clock("derive"):
        summary = derive_all(out / "slot", out / "derived")
        echo(f"cases derived from the SLOT split into {out / 'derived'}:")
        for name, info in summary["derived"].items():
            scores = run_selftest(info["benchmark"], out / "derived" / info["folder"], out / "selftest" / name)
            headline = f"overall {scores['overall']:.2f}, " if "overall" in scores else ""
            echo(
                f"  {name}: gold self-test ({info['benchmark']}, strict): {headline}"
                f"{scores['records'] - scores['gold_failing']}/{scores['records']} records pass"
            )
    if model_run:
        from benchsmith.models import (
            MAIN_JOB_PROMPT_TOKENS,
            local_server_status,
            resolve_local_model,
            start_local_server,
            stop_local_server,
        )

        # the default local model, or Gemma when its weights cannot be had (one warning line), decided once
        local = resolve_local_model("local")
        was_running = local_server_status(local) is not None
        try:
            if not was_running:  # sized for this job's prompts, not for `eval run`'s longer ReAct budget
                start_local_server(model=local, longest_prompt=MAIN_JOB_PROMPT_TOKENS)
            with clock("construct"):
                construct(out, echo=echo, model=local.name)
            with clock("review"):
                reviewed = review(out, echo=echo, note=note)
            with clock("evaluate"):
                evaluate(out, limit, reviewed, echo=echo, model=local.name)
        finally:  # the local model server is stopped afterwards unless it was already running
            if not was_running:
                stop_local_server(model=local)
    echo(f"serve the REST split with: benchsmith nl2api serve {out / 'rest'}")
    write_json(out / "timings.json", clock.summary())
    echo(clock.line())


def dataset(out: Path, *, echo: Echo = print) -> Path:
    """The hand-made BIRD-layout example (two databases) imported as a split per database plus a
    merged split, on two worker processes, and the merged split's gold self-test."""
    from benchsmith.construction.nl2api import BuildOptions, build_dataset, materialize_example
    from benchsmith.eval import run_selftest

    root = materialize_example("bird", out / "datasets" / "bird")
    report = build_dataset(root, "bird", out / "bird", BuildOptions(style="slot", workers=2, name="bird-example"))
    per_db = ", ".join(f"{k} {v['verified']}/{v['total']}" for k, v in report["databases"].items())
    echo(
        f"BIRD-layout example {root} -> {out / 'bird'}: {report['verified']}/{report['total']} verified ({per_db}; "
        f"{len(report['dataset_rejections'])} entry naming no database)"
    )
    scores = run_selftest("nl2api", out / "bird" / "merged", out / "selftest" / "nl2api-bird-merged")
    echo(
        f"  gold self-test of the merged split (nl2api, strict, each sample on its own database): "
        f"{scores['records'] - scores['gold_failing']}/{scores['records']} pass"
    )
    return out / "bird" / "merged"


def construct(out: Path, n: int = DEMO_QUERIES, *, echo: Echo = print, model: str = "local") -> None:
    """A small construction pass with a local model (default: the default local model): queries drawn
    from the SLOT split's tools -> gold chains on its real database -> quality checks (rules,
    near-duplicates, one model vote)."""
    from benchsmith.construction import EnvContext, RoleModels, inspect_samples, run_graph
    from benchsmith.construction.checks import CheckContext
    from benchsmith.models import ModelClient, concurrency_for, resolve_model
    from benchsmith.schemas import Bars

    cfg = resolve_model(model, None, timeout=300.0, max_tokens=256, temperature=0.7)
    models = RoleModels(default=ModelClient(cfg))
    slots = concurrency_for(cfg)  # as many at once as the local server has slots
    root, split = out / "construct", out / "slot"
    echo(
        f"constructing with the local model {cfg.name}: queries -> chains -> checks in {root} (re-running resumes) ..."
    )
    with Bars() as bars:  # each graph: a bar while it runs, its summary after
        queries = run_graph(
            "queries",
            split,
            root / "queries",
            models=models,
            options={"n": n},
            concurrency=slots,
            progress=bars.add("queries").update,
        )
    for line in queries.describe():
        echo(line)
    with Bars() as bars:
        chains = run_graph(
            "chains",
            root / "queries",
            root / "chains",
            models=models,
            concurrency=slots,
            env_context=EnvContext(split=split),
            options={"step_budget": 4, "max_retries": 1},
            progress=bars.add("chains").update,
        )
    for line in chains.describe():
        echo(line)
    s = inspect_samples(
        root / "chains" / "samples.jsonl",
        root / "checked",
        models=models,
        context=CheckContext(env=EnvContext(split=split)),
        concurrency=slots,
    )
    by = ", ".join(f"{k}={v}" for k, v in s["rejected_by_check"].items()) or "none"
    echo(
        f"check {root / 'checked'}: {s['total']} samples, {s['accepted']} accepted for review, {s['rejected']} to the "
        f"error pool (rejected by: {by})"
    )
    scenarios = write_scenarios(root / "scenarios.jsonl")
    with Bars() as bars:
        dialogues = run_graph(
            "dialogues",
            scenarios,
            root / "dialogues",
            models=models,
            concurrency=slots,
            options={"max_turns": 4, "max_steps": 4},  # 3 tool rounds and the answer
            progress=bars.add("dialogues").update,
        )
    for line in dialogues.describe():
        echo(line)
    construct_mcp(root / "mcp", models, DEMO_MCP_QUERIES, concurrency=slots, echo=echo)


#: model calls per NL2API case (ReAct) and calls per direct reply: the small base model never finishes a
#: chain (its completion rate is 0%), and every extra ReAct turn resends the whole conversation
DEMO_STEP_BUDGET = 6
#: reply tokens per call in a direct reply (the cap is this x DEMO_STEP_BUDGET): the base model
#: otherwise fills the whole cap with made-up calls
DIRECT_REPLY_TOKENS = 128

#: the sandbox scenarios of the demo's dialogues and agent evaluation (short ones: the local model is small)
DEMO_SCENARIOS = ("msg-send-basic", "rem-add-basic", "msg-wifi-off")


def write_scenarios(path: Path) -> Path:
    """The demo's sandbox scenarios as a scenarios JSONL file."""
    from benchsmith.construction.sandbox import load_scenarios

    chosen = [sc for sc in load_scenarios() if sc.id in DEMO_SCENARIOS]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(sc.model_dump_json(exclude_none=True) + "\n" for sc in chosen), encoding="utf-8")
    return path


def agent_data(out: Path, reviewed: Path) -> Path:
    """``out/agent/samples.jsonl``: the demo's sandbox scenarios and the reviewed dialogues (their
    NL2API environments pointed at the reviewed split), for the agent task."""
    from benchsmith.construction.sandbox import load_scenarios, scenario_to_sample
    from benchsmith.schemas import Sample, read_jsonl, write_jsonl

    samples = [scenario_to_sample(sc) for sc in load_scenarios(write_scenarios(out / "agent" / "scenarios.jsonl"))]
    if (reviewed / "samples.jsonl").is_file():
        for sample in read_jsonl(reviewed / "samples.jsonl", Sample):
            env = dict(sample.metadata.get("environment") or {})
            if sample.dialogue:
                if env.get("kind") == "nl2api":
                    env["split"] = str(reviewed.resolve())
            else:
                continue
            samples.append(sample.model_copy(update={"metadata": {**sample.metadata, "environment": env}}))
    write_jsonl(out / "agent" / "samples.jsonl", samples)
    return out / "agent"


def mcp_agent_data(out: Path, reviewed: Path) -> Path | None:
    """``out/agent-mcp/samples.jsonl``: the reviewed chains built on the MCP server (each with the end
    state its gold leaves), their environment pointed at the reviewed split's copy; None if there are none."""
    from benchsmith.schemas import Sample, read_jsonl, write_jsonl

    samples = []
    if (reviewed / "samples.jsonl").is_file():
        for sample in read_jsonl(reviewed / "samples.jsonl", Sample):
            env = dict(sample.metadata.get("environment") or {})
            if env.get("kind") == "mcp" and sample.metadata.get("expected_state") is not None:
                env["file"] = str((reviewed / env["file"]).resolve())
                samples.append(sample.model_copy(update={"metadata": {**sample.metadata, "environment": env}}))
    if not samples:
        return None
    write_jsonl(out / "agent-mcp" / "samples.jsonl", samples)
    return out / "agent-mcp"


def review(out: Path, *, echo: Echo = print, note: Echo = print) -> Path:
    """Review the default SLOT split in a local Label Studio (its data dir under ``out``): two simulated
    reviewers per item whose verdicts come from the automated checks (the datasheet says so), an
    adjudicator for disagreements, then the accepted items frozen into ``out/reviewed``."""
    from benchsmith.annotation import (
        LabelStudio,
        Workspace,
        agreement_text,
        checks_policy,
        counts_text,
        finalize,
        label_studio_status,
        resolve_label_studio,
        review_automatically,
        start_label_studio,
        stop_label_studio,
    )

    data_dir = out / "label-studio"
    was_running = label_studio_status(data_dir) is not None
    built = [
        p
        for p in (
            out / "construct" / "checked" / "accepted.jsonl",
            out / "construct" / "dialogues" / "samples.jsonl",
            out / "construct" / "mcp" / "checked" / "accepted.jsonl",
        )
        if p.is_file() and p.stat().st_size
    ]
    echo(
        f"reviewing {out / 'slot'} and what the construction pass built ({', '.join(map(str, built)) or 'nothing accepted'}) "
        f"in a local Label Studio (data dir {data_dir}); the reviewers' verdicts are supplied automatically from the "
        "checks (non-interactive run) ..."
    )
    info = start_label_studio(data_dir=data_dir, echo=note)
    try:
        access = resolve_label_studio(data_dir)
        ws = Workspace(out / "review")
        ws.store.set_meta("name", "chinook-slot")
        ws.load(out / "slot")
        for source in built:
            echo(f"  {source}: {ws.load(source)} new items")
        review_automatically(ws, LabelStudio(access.url, access.token), checks_policy(ws.check_context()), echo=echo)
        result = finalize(ws, out / "reviewed", name="chinook-slot-reviewed")
    finally:
        if not was_running:
            stop_label_studio(data_dir)
    sheet = result["datasheet"]
    echo(
        f"  Label Studio {info.version} at {info.url}; items {counts_text(sheet['final'])}; "
        f"{agreement_text(sheet['agreement'])}; "
        f"finalized split {out / 'reviewed'} version {result['version']} (datasheet.md)"
    )
    return out / "reviewed"


def evaluate(out: Path, limit: int, split: Path | None = None, *, echo: Echo = print, model: str = "local") -> None:
    """A local model (default: the default local model) on the finalized split (up to ``limit`` cases
    per task), scored and reported."""
    from benchsmith.eval import TASKS, TaskOptions, run_eval, score_run
    from benchsmith.eval.report import headline_intervals, primary, write_report
    from benchsmith.models import ModelClient, concurrency_for, resolve_model

    cfg = resolve_model(model, None, timeout=300.0, max_tokens=256)
    slots = concurrency_for(cfg)  # as many requests in flight as the local server has slots
    split = split or out / "slot"
    agent = agent_data(out, split)
    echo(
        f"evaluating the local model {cfg.name} on {split} (up to {limit} cases per task) and, as the agent task, on "
        f"{agent} (sandbox scenarios and reviewed dialogues, 2 trials each, the local model also playing the user; "
        "re-running resumes) ..."
    )
    # a task may need more cases for its headline to mean something (T-Eval: one per category)
    limits = {name: max(limit, TASKS[name].min_cases) for name in TASKS}
    result = run_eval(
        split,
        ModelClient(cfg),
        cfg.describe(),
        out / "run",
        limit=limits,
        calling="prompt",
        concurrency=slots,
        task_data={"agent": agent},
        options=TaskOptions(
            calling="prompt", max_tokens=256, trials=2, max_turns=3, max_steps=3, step_budget=DEMO_STEP_BUDGET
        ),
    )
    scores = score_run(out / "run")
    for name, info in result.tasks.items():
        c = info.status_counts
        echo(
            f"  {name}: {info.cases} cases, {c['ok']} answered, {c['format_error']} unreadable, "
            f"{c['request_error']} refused, {c['transport_error']} failed; {info.model_calls} model calls"
        )
    # the paper's one-shot mode on the same NL2API cases: the whole call sequence in one reply
    direct = run_eval(
        split,
        ModelClient(cfg),
        cfg.describe(),
        out / "run-direct",
        tasks=["nl2api"],
        limit={"nl2api": limits["nl2api"]},
        calling="prompt",
        concurrency=slots,
        options=TaskOptions(
            calling="prompt", max_tokens=DIRECT_REPLY_TOKENS, strategy="direct", step_budget=DEMO_STEP_BUDGET
        ),
    )
    direct_scores = score_run(out / "run-direct")
    info = direct.tasks["nl2api"]
    echo(
        f"  nl2api, direct (the whole sequence in one reply): {info.cases} cases, "
        f"{info.status_counts['ok']} answered; {info.model_calls} model calls"
    )
    runs = [out / "run", out / "run-direct"]
    mcp = mcp_agent_data(out, split)
    if mcp is None:
        echo("  agent on the MCP server: no reviewed chain was built on it, nothing to play")
    else:
        res = run_eval(
            mcp,
            ModelClient(cfg),
            cfg.describe(),
            out / "run-mcp",
            tasks=["agent"],
            limit={"agent": limit},
            calling="prompt",
            concurrency=slots,
            options=TaskOptions(calling="prompt", max_tokens=256, trials=2, max_turns=3, max_steps=3),
        )
        info = res.tasks["agent"]
        s = score_run(out / "run-mcp")["agent"]
        rel = s.get("reliability") or {}
        # a case whose trials were not all counted (a user simulator failure) counts only for smaller k
        pass_k = "; ".join(
            f"pass^{k} {v:.2f} over {rel.get('tasks_per_k', {}).get(k, '?')} cases"
            for k, v in (rel.get("pass^k") or {}).items()
        )
        echo(
            f"  agent on the MCP server (mcp-server-sqlite, a fresh copy of the store per episode): {info.cases} "
            f"episodes of the reviewed chains, {info.status_counts['ok']} answered; end state "
            f"{100 * (s['end_state_accuracy'] or 0):.1f}% of {s['counted_episodes']} counted; {pass_k or 'no pass^k'}"
        )
        runs.append(out / "run-mcp")
    report = write_report(
        runs,
        out / "report",
        title="benchsmith demo: the local model on the default split (ReAct and direct)",
    )
    figures = []
    for name, s in scores.items():
        metric, value = primary(s.get("benchmark", name), s)
        ci = headline_intervals(s.get("benchmark", name), s).get(metric) if value is not None else None
        spread = f" [{100 * ci[0]:.1f}–{100 * ci[1]:.1f}]" if ci is not None else ""
        figures.append(f"{name} {metric} {'n/a' if value is None else f'{100 * value:.1f}%'}{spread}")
    echo("  scores (strict, 95% intervals in brackets): " + "; ".join(figures))
    metric, value = primary("nl2api", direct_scores["nl2api"])
    echo(f"  nl2api direct: {metric} {'n/a' if value is None else f'{100 * value:.1f}%'}")
    echo(f"report: {report['files']['html']}")


__all__ = [
    "DEMO_LIMIT",
    "DEMO_QUERIES",
    "DEMO_MCP_QUERIES",
    "DEMO_SCENARIOS",
    "SQLITE_MCP_SERVER",
    "STORE_PROBES",
    "StageClock",
    "agent_data",
    "build_report_line",
    "construct",
    "construct_mcp",
    "mcp_agent_data",
    "dataset",
    "evaluate",
    "review",
    "run",
    "sqlite_server_command",
    "store_template",
    "write_scenarios",
]
