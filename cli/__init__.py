"""The ``benchsmith`` command line: a thin layer over the library.

Every option can also be set by an environment variable (shown in ``--help``). Heavy
imports happen inside the commands so ``benchsmith --help`` stays instant.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer

app = typer.Typer(help="benchsmith: build, review and evaluate tool-use benchmarks.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
nl2api_app = typer.Typer(help="NL2SQL -> NL2API: executable tools and verified gold chains from SQLite.",
                         no_args_is_help=True)
schemas_app = typer.Typer(help="The data contract (JSON Schemas).", no_args_is_help=True)
eval_app = typer.Typer(help="Score predictions on tool-use benchmarks (official and strict modes).",
                       no_args_is_help=True)
app.add_typer(nl2api_app, name="nl2api")
app.add_typer(eval_app, name="eval")
app.add_typer(schemas_app, name="schemas")


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Print a user's mistake as one red line and exit 2, a machinery fault (``RuntimeFault``) as one red
    line and exit 3; anything else is a bug and raises."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from benchsmith.schemas import RuntimeFault, UserError

        try:
            return fn(*args, **kwargs)
        except (UserError, RuntimeFault) as exc:
            from rich.console import Console
            from rich.markup import escape

            # one line: a fault may quote a log tail, which goes on the same line
            text = " | ".join(part.strip() for part in str(exc).splitlines() if part.strip())
            Console(stderr=True).print(f"[bold red]error:[/] {escape(text)}", highlight=False, soft_wrap=True)
            raise typer.Exit(2 if isinstance(exc, UserError) else 3) from None

    return wrapper


def check_out_dir(out: Optional[Path], flag: str = "--out") -> None:
    """Refuse an output folder that is an existing file before any work is done."""
    from benchsmith.schemas import UserError

    if out is not None and out.exists() and not out.is_dir():
        raise UserError(f"{flag} {out} is an existing file, not a folder",
                        fix=f"give {flag} a folder path (new or existing), or move the file away")


def check_port(port: int, flag: str = "--port") -> None:
    from benchsmith.schemas import UserError

    if not 1 <= port <= 65535:
        raise UserError(f"{flag} {port} is out of range", fix=f"use a port from 1 to 65535, e.g. {flag} 8765")


MAX_RETRIES_HELP = ("Retries of a failed model request (connection, timeout, HTTP 429, 5xx) before it counts as "
                    "failed (default 4)")


def retry_overrides(max_retries: Optional[int]) -> dict[str, Any]:
    """The model-configuration override for ``--max-retries`` (none when not given)."""
    return {} if max_retries is None else {"max_retries": max_retries}


def _print_report(report: dict[str, Any], out: Path) -> None:
    from benchsmith.demo import build_report_line

    typer.echo(build_report_line(report, out))


WORKERS_HELP = "Processes converting and verifying pairs (results identical to 1, in input order)"
RAY_HELP = "Run the pairs as Ray tasks: local (a local Ray instance), auto (the running cluster) or an address"
UNIVERSE_HELP = "Candidate tools per sample: a count (12) or a fraction of the full set (0.25); gold tools always kept"
SWEEP_HELP = "Comma-separated universe sizes (e.g. 0.25,0.5,1.0): one split per size in OUT/universe-<size>"


def _build_options(style: str, obfuscate: bool, tool_universe: Optional[str], seed: int, timeout: float,
                   name: Optional[str], workers: int, ray: Optional[str]) -> Any:
    from benchsmith.construction.nl2api import STYLES, BuildOptions, parse_universe
    from benchsmith.schemas import UserError

    if style not in STYLES:
        raise UserError(f"--style {style!r} is not one of {', '.join(STYLES)}")
    if workers < 1:
        raise UserError(f"--workers must be at least 1, got {workers}", fix="e.g. --workers 2")
    return BuildOptions(style=style, obfuscate=obfuscate, seed=seed, timeout_s=timeout, name=name, workers=workers,
                        ray=ray or None, tool_universe=parse_universe(tool_universe) if tool_universe else None)


def _sweep(text: Optional[str]) -> Optional[list]:
    if not text:
        return None
    from benchsmith.construction.nl2api import parse_universe

    return [parse_universe(t.strip()) for t in text.split(",") if t.strip()]


@nl2api_app.command("build")
@user_errors
def nl2api_build(
    db: Path = typer.Option(..., "--db", envvar="BENCHSMITH_DB", help="SQLite database"),
    pairs: Path = typer.Option(..., "--pairs", envvar="BENCHSMITH_PAIRS", help="JSONL of {id?, question, sql, evidence?}"),
    style: str = typer.Option("slot", "--style", envvar="BENCHSMITH_STYLE", help="slot | sel | rest"),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="Output directory of the split"),
    obfuscate: bool = typer.Option(False, "--obfuscate", envvar="BENCHSMITH_OBFUSCATE", help="FUNC_n / ARG_n names"),
    tool_universe: Optional[str] = typer.Option(None, "--tool-universe", envvar="BENCHSMITH_TOOL_UNIVERSE",
                                                help=UNIVERSE_HELP),
    sweep: Optional[str] = typer.Option(None, "--tool-universe-sweep", envvar="BENCHSMITH_TOOL_UNIVERSE_SWEEP",
                                        help=SWEEP_HELP),
    seed: int = typer.Option(0, "--seed", envvar="BENCHSMITH_SEED"),
    timeout: float = typer.Option(10.0, "--timeout", envvar="BENCHSMITH_SQL_TIMEOUT", help="Seconds per SQL query"),
    name: Optional[str] = typer.Option(None, "--name", envvar="BENCHSMITH_SPLIT_NAME"),
    descriptions: Optional[Path] = typer.Option(None, "--descriptions", envvar="BENCHSMITH_DESCRIPTIONS",
                                                help="JSON {table: {column: description}} (default: DB.descriptions.json)"),
    workers: int = typer.Option(1, "--workers", envvar="BENCHSMITH_WORKERS", help=WORKERS_HELP),
    ray: Optional[str] = typer.Option(None, "--ray", envvar="BENCHSMITH_RAY", help=RAY_HELP),
) -> None:
    """Convert and verify NL2SQL pairs into an NL2API split (samples.jsonl, tools.json, report.json).
    A killed build resumes: run the same command again."""
    from dataclasses import replace

    from benchsmith.construction.nl2api import build_universes, universe_label

    check_out_dir(out)
    opts = replace(_build_options(style, obfuscate, tool_universe, seed, timeout, name, workers, ray),
                   descriptions=descriptions)
    sizes = _sweep(sweep)
    reports = build_universes(db, pairs, out, opts, sizes)
    for size, report in zip(sizes or [None], reports):
        _print_report(report, out if size is None else out / universe_label(size))


@nl2api_app.command("import")
@user_errors
def nl2api_import(
    kind: str = typer.Argument(..., help="bird | spider | sqlite-dir"),
    root: Path = typer.Argument(..., help="The dataset folder (BIRD: dev.json + dev_databases/; Spider: dev.json + "
                                          "database/ + tables.json; sqlite-dir: *.sqlite + pairs.jsonl)"),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT",
                             help="Output folder: one split per database and merged/"),
    style: str = typer.Option("slot", "--style", envvar="BENCHSMITH_STYLE", help="slot | sel | rest"),
    split_file: Optional[str] = typer.Option(None, "--split-file", envvar="BENCHSMITH_SPLIT_FILE",
                                             help="Question file name in the dataset folder (default dev.json, ...)"),
    merged: bool = typer.Option(True, "--merged/--no-merged", envvar="BENCHSMITH_MERGED",
                                help="Also write merged/: every database in one split"),
    obfuscate: bool = typer.Option(False, "--obfuscate", envvar="BENCHSMITH_OBFUSCATE", help="FUNC_n / ARG_n names"),
    tool_universe: Optional[str] = typer.Option(None, "--tool-universe", envvar="BENCHSMITH_TOOL_UNIVERSE",
                                                help=UNIVERSE_HELP),
    seed: int = typer.Option(0, "--seed", envvar="BENCHSMITH_SEED"),
    timeout: float = typer.Option(10.0, "--timeout", envvar="BENCHSMITH_SQL_TIMEOUT", help="Seconds per SQL query"),
    name: Optional[str] = typer.Option(None, "--name", envvar="BENCHSMITH_SPLIT_NAME"),
    workers: int = typer.Option(1, "--workers", envvar="BENCHSMITH_WORKERS", help=WORKERS_HELP),
    ray: Optional[str] = typer.Option(None, "--ray", envvar="BENCHSMITH_RAY", help=RAY_HELP),
) -> None:
    """Build a BIRD / Spider / SQLite-folder dataset: a split per database, plus merged/ with all of them.
    A killed import resumes: run the same command again."""
    from benchsmith.construction.nl2api import KINDS, build_dataset
    from benchsmith.schemas import UserError

    if kind not in KINDS:
        raise UserError(f"unknown dataset kind {kind!r}", fix=f"use one of {', '.join(KINDS)}")
    check_out_dir(out)
    opts = _build_options(style, obfuscate, tool_universe, seed, timeout, name, workers, ray)
    report = build_dataset(root, kind, out, opts, split_file=split_file, merged=merged)
    for db_id, info in report["databases"].items():
        if "error" in info:
            typer.echo(f"  {db_id}: 0/{info['total']} verified ({info['error'][:160]})")
        else:
            typer.echo(f"  {db_id}: {info['verified']}/{info['total']} verified -> {out / db_id}")
    skipped = len(report["dataset_rejections"])
    typer.echo(f"{kind} {root}: {report['verified']}/{report['total']} verified"
               + (f", {skipped} entries not built (see report.json)" if skipped else "")
               + (f", {len(report['warnings'])} warnings" if report["warnings"] else ""))
    m = report.get("merged") or {}
    if m.get("path"):
        typer.echo(f"merged: {m['samples']} samples over {len(m['databases'])} databases -> {m['path']}")
    elif m.get("error"):
        typer.echo(f"merged split not written: {m['error']}")
    typer.echo(f"report: {out / 'report.json'}")


@nl2api_app.command("example")
@user_errors
def nl2api_example(
    kind: str = typer.Argument(..., help="bird | spider"),
    dest: Path = typer.Argument(..., help="Where to write the example dataset"),
) -> None:
    """Write a small hand-made example dataset in the BIRD or Spider layout (to try `nl2api import` on)."""
    from benchsmith.construction.nl2api import materialize_example

    typer.echo(str(materialize_example(kind, dest)))


@nl2api_app.command("serve")
@user_errors
def nl2api_serve(
    split_dir: Path = typer.Argument(..., help="A REST split built with --style rest"),
    host: str = typer.Option("127.0.0.1", "--host", envvar="BENCHSMITH_HOST", help="Bind address (loopback by default)"),
    port: int = typer.Option(8765, "--port", envvar="BENCHSMITH_PORT"),
) -> None:
    """Serve a REST split's endpoints with FastAPI (GET, typed query parameters)."""
    check_port(port)
    import uvicorn

    from benchsmith.construction.nl2api import create_app

    uvicorn.run(create_app(str(split_dir)), host=host, port=port, log_level="info")


@app.command("demo")
@user_errors
def demo(
    out: Path = typer.Option(Path("out/demo"), "--out", envvar="BENCHSMITH_DEMO_OUT", help="Where to write the splits"),
    limit: int = typer.Option(4, "--limit", envvar="BENCHSMITH_DEMO_LIMIT",
                              help="Cases per task for the local model's evaluation run"),
    model_run: bool = typer.Option(True, "--model-run/--no-model-run", envvar="BENCHSMITH_DEMO_MODEL_RUN",
                                   help="Run the construction pass, the Label Studio review and the local model's evaluation with its report"),
) -> None:
    """The main job on the embedded default data: Chinook + its question/SQL pairs -> SLOT, SEL and REST splits,
    gold self-tests, and T-Eval, GTA, ToolAssess and ACEBench-special cases derived from the SLOT split
    (each self-tested too); with --model-run, construction, review and evaluation with the local model."""
    from benchsmith.demo import run

    run(out, limit=limit, model_run=model_run, echo=typer.echo, note=lambda m: typer.echo(m, err=True))


BENCHMARK_HELP = "A registered benchmark (`benchsmith eval list` names them)"
BFCL_FORMAT_HELP = ("BFCL only: prompt | fc, the output format of the results (prompt-mode models: Python call text; "
                    "FC models: [{name: arguments JSON}]); official mode decodes with BFCL's decoder of that format "
                    "(default prompt)")


@eval_app.command("score")
@user_errors
def eval_score(
    benchmark: Optional[str] = typer.Option(None, "--benchmark", envvar="BENCHSMITH_BENCHMARK", help=BENCHMARK_HELP),
    data: Optional[Path] = typer.Option(None, "--data", envvar="BENCHSMITH_DATA",
                                        help="The benchmark's own data folder or a benchsmith split"),
    predictions: Optional[Path] = typer.Option(None, "--predictions", envvar="BENCHSMITH_PREDICTIONS",
                                               help="JSONL of {id, result}"),
    mode: str = typer.Option("strict", "--mode", envvar="BENCHSMITH_MODE", help="strict | official"),
    out: Optional[Path] = typer.Option(None, "--out", envvar="BENCHSMITH_OUT", help="Where scores.json and records.jsonl go"),
    run: Optional[Path] = typer.Option(None, "--run", envvar="BENCHSMITH_RUN",
                                       help="A run folder of `benchsmith eval run`: score each of its tasks in place"),
    output_format: Optional[str] = typer.Option(None, "--format", envvar="BENCHSMITH_BFCL_FORMAT",
                                                help=BFCL_FORMAT_HELP),
) -> None:
    """Score a predictions file (OUT/scores.json, OUT/records.jsonl), or every task of a run (--run RUN_DIR)."""
    import json

    from benchsmith.schemas import UserError

    check_out_dir(out)
    if run is not None:
        if output_format is not None:
            raise UserError("--format does not apply to --run", fix="a run records its own format (BFCL tools mode: fc, "
                            "prompt mode: prompt); drop --format / BENCHSMITH_BFCL_FORMAT")
        from benchsmith.eval import score_run

        for name, scores in score_run(run, mode).items():
            typer.echo(f"{name}: " + json.dumps({k: v for k, v in scores.items() if not isinstance(v, (list, dict))},
                                                ensure_ascii=False))
        return
    missing = [flag for flag, value in (("--benchmark", benchmark), ("--data", data), ("--predictions", predictions),
                                        ("--out", out)) if value is None]
    if missing:
        raise UserError(f"missing {', '.join(missing)}", fix="give --benchmark, --data, --predictions and --out, or --run RUN_DIR")
    from benchsmith.eval import run_score

    scores = run_score(benchmark, data, predictions, out, mode,  # type: ignore[arg-type]
                       options={"format": output_format})
    typer.echo(json.dumps({k: v for k, v in scores.items() if not isinstance(v, (list, dict))}, ensure_ascii=False))


def _check_endpoint(base_url: str, timeout: float) -> None:
    """Fail fast, with one clear line, when nothing answers at the endpoint (any HTTP answer will do)."""
    import httpx

    from benchsmith.schemas import UserError

    try:
        httpx.get(base_url.rstrip("/") + "/models", timeout=timeout)
    except httpx.HTTPError as exc:
        from benchsmith.models import mask_url

        raise UserError(f"cannot reach the model endpoint {mask_url(base_url)} ({type(exc).__name__})",
                        fix="start the server or check --base-url / BENCHSMITH_BASE_URL") from None


def _task_data(text: str) -> dict[str, Path] | None:
    from benchsmith.schemas import UserError

    out: dict[str, Path] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, path = part.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise UserError(f"--task-data {part!r} is not TASK=PATH", fix="e.g. --task-data agent=sandbox")
        out[name.strip()] = Path(path.strip())
    return out or None


@eval_app.command("run")
@user_errors
def eval_run(
    split: Path = typer.Option(..., "--split", envvar="BENCHSMITH_SPLIT",
                               help="A benchsmith split (runs nl2api end to end + derived benchmarks), a folder of "
                                    "`eval derive`, or a benchmark's own folder (with --tasks)"),
    model: str = typer.Option("local", "--model", envvar="BENCHSMITH_MODEL",
                              help="Model name at the endpoint; 'local' = the local default model"),
    base_url: Optional[str] = typer.Option(None, "--base-url", envvar="BENCHSMITH_BASE_URL",
                                           help="OpenAI-compatible endpoint; none and no OPENAI_API_KEY = local model"),
    mode: str = typer.Option("auto", "--mode", envvar="BENCHSMITH_RUN_MODE",
                             help="auto | tools (native tool calling) | prompt (JSON-constrained text) | "
                                  "direct (= --strategy direct, auto decoding)"),
    strategy: Optional[str] = typer.Option(None, "--strategy", envvar="BENCHSMITH_STRATEGY",
                                           help="nl2api end to end: react (one call per step, outputs fed back; "
                                                "default) | direct (the whole call sequence in one reply)"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", envvar="BENCHSMITH_CONCURRENCY",
                                              help="Requests in flight (default: the local server's slots for the "
                                                   "local model, else 4)"),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="The run folder (re-use it to resume)"),
    tasks: str = typer.Option("", "--tasks", envvar="BENCHSMITH_TASKS",
                              help="Comma-separated tasks (`benchsmith eval list` names them)"),
    limit: Optional[int] = typer.Option(None, "--limit", envvar="BENCHSMITH_LIMIT",
                                        help="At most N cases per task, spread over categories"),
    seed: int = typer.Option(0, "--seed", envvar="BENCHSMITH_SEED", help="Seed for case selection and derivation"),
    timeout: float = typer.Option(120.0, "--timeout", envvar="BENCHSMITH_TIMEOUT", help="Seconds per request"),
    max_tokens: int = typer.Option(384, "--max-tokens", envvar="BENCHSMITH_MAX_TOKENS", help="Reply length cap"),
    step_budget: int = typer.Option(12, "--step-budget", envvar="BENCHSMITH_STEP_BUDGET",
                                    help="Model calls per end-to-end case"),
    variant: str = typer.Option("standard", "--prompt-variant", envvar="BENCHSMITH_PROMPT_VARIANT",
                                help="ACEBench prompt: standard | condensed | minimal"),
    rps: Optional[float] = typer.Option(None, "--rps", envvar="BENCHSMITH_RPS", help="Rate limit, requests per second"),
    max_retries: Optional[int] = typer.Option(None, "--max-retries", envvar="BENCHSMITH_MAX_RETRIES",
                                              help=MAX_RETRIES_HELP),
    categories: str = typer.Option("", "--categories", envvar="BENCHSMITH_CATEGORIES",
                                   help="Comma-separated category prefixes: only cases of these categories"),
    task_data: str = typer.Option("", "--task-data", envvar="BENCHSMITH_TASK_DATA",
                                  help="Comma-separated TASK=PATH: run TASK on other data (e.g. agent=sandbox)"),
    user_model: str = typer.Option("local", "--user-model", envvar="BENCHSMITH_USER_MODEL",
                                   help="Episodes: the model that plays the user, NAME or NAME@URL; 'local' = the local model"),
    trials: int = typer.Option(1, "--trials", envvar="BENCHSMITH_TRIALS",
                               help="Episodes: independent trials per case (pass^k and pass@k for k up to this)"),
    trial_temperature: float = typer.Option(0.7, "--trial-temperature", envvar="BENCHSMITH_TRIAL_TEMPERATURE",
                                            help="Episodes: sampling temperature of trials when --trials > 1"),
    max_turns: int = typer.Option(12, "--max-turns", envvar="BENCHSMITH_MAX_TURNS", help="Episodes: user messages"),
    max_steps: int = typer.Option(8, "--max-steps", envvar="BENCHSMITH_MAX_STEPS",
                                  help="Episodes: assistant replies after one user message"),
    max_tool_calls: int = typer.Option(40, "--max-tool-calls", envvar="BENCHSMITH_MAX_TOOL_CALLS",
                                       help="Episodes: tool calls"),
    episode_tokens: int = typer.Option(250_000, "--episode-tokens", envvar="BENCHSMITH_EPISODE_TOKENS",
                                       help="Episodes: prompt + completion tokens of the model under test"),
    episode_wall: float = typer.Option(1800.0, "--episode-wall", envvar="BENCHSMITH_EPISODE_WALL",
                                       help="Episodes: seconds of model and tool time"),
) -> None:
    """Ask a model to solve a split's cases; every reply is stored the moment it arrives (re-run to resume).
    Episodic tasks (ACEBench agent categories, agent) play each case against a simulated user (--user-model).
    Exit code 3 when cases are left unfinished because the endpoint failed (re-run the same command to resume)."""
    from benchsmith.eval import TaskOptions, run_eval
    from benchsmith.models import ModelClient, mask_url, resolve_model
    from benchsmith.schemas import RuntimeFault, UserError

    if mode not in ("auto", "tools", "prompt", "direct"):
        raise UserError(f"unknown mode {mode!r}", fix="use auto, tools, prompt or direct")
    if strategy is not None and strategy not in ("react", "direct"):
        raise UserError(f"unknown strategy {strategy!r}", fix="use --strategy react or --strategy direct")
    if mode == "direct":   # a shorthand: the direct strategy with auto decoding
        if strategy == "react":
            raise UserError("--mode direct contradicts --strategy react",
                            fix="drop one of them (--mode direct is --strategy direct --mode auto)")
        mode, strategy = "auto", "direct"
    strategy = strategy or "react"
    if variant not in ("standard", "condensed", "minimal"):
        raise UserError(f"unknown prompt variant {variant!r}", fix="use standard, condensed or minimal")
    check_out_dir(out)
    cfg = resolve_model(None if model == "local" else model, base_url, timeout=timeout, max_tokens=max_tokens,
                        requests_per_second=rps, **retry_overrides(max_retries))
    if cfg.base_url and not cfg.local:
        _check_endpoint(cfg.base_url, min(timeout, 10.0))
    run_mode = ("prompt" if cfg.local else "tools") if mode == "auto" else mode
    if concurrency is None:
        from benchsmith.models import concurrency_for

        concurrency = concurrency_for(cfg)
    desc = cfg.describe()
    for name, value, least in (("--trials", trials, 1), ("--max-turns", max_turns, 1), ("--max-steps", max_steps, 1),
                               ("--max-tool-calls", max_tool_calls, 1), ("--episode-tokens", episode_tokens, 1)):
        if value < least:
            raise UserError(f"{name} must be at least {least}, got {value}", fix=f"pass {name} {least} or more")
    if episode_wall <= 0 or trial_temperature < 0:
        raise UserError("--episode-wall must be positive and --trial-temperature not negative",
                        fix="e.g. --episode-wall 1800 --trial-temperature 0.7")
    user_name, _, user_url = user_model.partition("@")
    from benchsmith.models import DEFAULT_LOCAL_MODEL

    ucfg = resolve_model(DEFAULT_LOCAL_MODEL if user_name in ("", "local") and not user_url else user_name or None,
                         user_url or None, start_local=False, timeout=timeout,
                         requests_per_second=rps, **retry_overrides(max_retries))
    if ucfg.base_url and not ucfg.local and ucfg.base_url != cfg.base_url:
        _check_endpoint(ucfg.base_url, min(timeout, 10.0))
    udesc = ucfg.describe()
    typer.echo(f"model {cfg.name} at {mask_url(cfg.base_url) or 'the OpenAI API'} ({run_mode} mode, "
               f"{strategy} strategy, concurrency {concurrency})")
    result = run_eval(split, ModelClient(cfg), desc, out, tasks=[t.strip() for t in tasks.split(",") if t.strip()] or None,
                      mode=run_mode, concurrency=concurrency, limit=limit, seed=seed,
                      options=TaskOptions(mode=run_mode, max_tokens=max_tokens, step_budget=step_budget, variant=variant,
                                          trials=trials, trial_temperature=trial_temperature, max_turns=max_turns,
                                          max_steps=max_steps, max_tool_calls=max_tool_calls,
                                          max_episode_tokens=episode_tokens, episode_wall_s=episode_wall,
                                          strategy=strategy),
                      user_client=ModelClient(ucfg), user_model=udesc,
                      categories=[c.strip() for c in categories.split(",") if c.strip()] or None,
                      task_data=_task_data(task_data))
    for name, info in result.tasks.items():
        c = info["status_counts"]
        typer.echo(f"  {name}: {info['done']}/{info['cases']} done (ok {c['ok']}, format errors {c['format_error']}, "
                   f"refused {c['request_error']}, transport errors {c['transport_error']}), {info['model_calls']} model calls")
    unfinished = sum(info["cases"] - info["done"] for info in result.tasks.values())
    if unfinished:
        total = sum(info["cases"] for info in result.tasks.values())
        raise RuntimeFault(f"{unfinished} of {total} cases unfinished: the model endpoint did not answer them (transport "
                           f"errors); everything finished is kept in {out} — re-run the same command to resume")
    typer.echo(f"run {result.status}: {out} — score it with `benchsmith eval score --run {out}`")


@eval_app.command("selftest")
@user_errors
def eval_selftest(
    benchmark: str = typer.Option(..., "--benchmark", envvar="BENCHSMITH_BENCHMARK", help=BENCHMARK_HELP),
    data: Path = typer.Option(..., "--data", envvar="BENCHSMITH_DATA", help="The benchmark's own data folder or a benchsmith split"),
    mode: str = typer.Option("strict", "--mode", envvar="BENCHSMITH_MODE", help="strict | official"),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="Where selftest.json, scores.json, records.jsonl go"),
    output_format: Optional[str] = typer.Option(None, "--format", envvar="BENCHSMITH_BFCL_FORMAT",
                                                help=BFCL_FORMAT_HELP),
) -> None:
    """Score the gold answers as predictions and list every record whose gold cannot pass."""
    import json

    from benchsmith.eval import run_selftest

    check_out_dir(out)
    scores = run_selftest(benchmark, data, out, mode, options={"format": output_format})
    typer.echo(json.dumps({k: v for k, v in scores.items() if not isinstance(v, (list, dict))}, ensure_ascii=False))


@eval_app.command("derive")
@user_errors
def eval_derive(
    split: Path = typer.Option(..., "--split", envvar="BENCHSMITH_SPLIT",
                               help="An NL2API split folder (samples.jsonl with verified gold chains)"),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT",
                             help="Where OUT/<deriver>/ folders and OUT/derive_report.json go"),
    only: str = typer.Option("", "--only", envvar="BENCHSMITH_DERIVE_ONLY",
                             help="Comma-separated derivers (default: all; `benchsmith eval list` names them)"),
    seed: int = typer.Option(0, "--seed", envvar="BENCHSMITH_SEED", help="Seed for distractors and variants"),
) -> None:
    """Derive benchmark cases from a split's verified gold chains: T-Eval's six abilities (json and str),
    GTA step-by-step prefixes, ToolAssess awareness/selection, ACEBench special variants.
    Each goes to OUT/<deriver>/ in its benchmark's own layout; score it with
    `benchsmith eval score --benchmark <benchmark> --data OUT/<deriver>`."""
    import json

    from benchsmith.eval import derive_all

    check_out_dir(out)
    summary = derive_all(split, out, [n.strip() for n in only.split(",") if n.strip()] or None, seed=seed)
    for name, info in summary["derived"].items():
        typer.echo(f"{name} -> {out / info['folder']} (score with --benchmark {info['benchmark']}): "
                   f"{json.dumps(info['records'], ensure_ascii=False)}")
    typer.echo(json.dumps({"out": str(out), "derived": {k: v["benchmark"] for k, v in summary["derived"].items()}}))


@eval_app.command("list")
@user_errors
def eval_list() -> None:
    """The registered benchmarks (built-in and plug-ins from $BENCHSMITH_PLUGINS), each with its run
    tasks, derivers, exporter and scorers."""
    from benchsmith.eval import BENCHMARKS, DERIVERS, EXPORTERS, SCORERS, TASKS

    for name, cls in sorted(BENCHMARKS.items()):
        tasks = sorted(t for t, tc in TASKS.items() if tc.benchmark == name)
        derivers = sorted(d for d in DERIVERS if d in cls.derivers)
        scorers = sorted(s for s in SCORERS if s.split(".", 1)[0] == name)
        typer.echo(f"{name}: tasks {', '.join(tasks) or '-'}; derivers {', '.join(derivers) or '-'}; "
                   f"export {'yes' if name in EXPORTERS else '-'}; scorers {len(scorers)}")


@eval_app.command("export")
@user_errors
def eval_export(
    split: Path = typer.Option(..., "--split", envvar="BENCHSMITH_SPLIT", help="A benchsmith split folder (samples.jsonl)"),
    format: str = typer.Option(..., "--format", envvar="BENCHSMITH_EXPORT_FORMAT", help="A benchmark with an exporter (`benchsmith eval list` names them)"),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="Where the benchmark's own files go"),
) -> None:
    """Write a split in another benchmark's own format, so its official tools can read it."""
    import json

    from benchsmith.eval import EXPORTERS
    from benchsmith.schemas import UserError

    if format not in EXPORTERS:
        raise UserError(f"unknown export format {format!r}", fix=f"use one of {', '.join(EXPORTERS)}")
    check_out_dir(out)
    report = EXPORTERS[format](split, out)
    typer.echo(json.dumps({k: report[k] for k in ("format", "samples", "total", "skipped_by_reason", "written") if k in report},
                          ensure_ascii=False))


@schemas_app.command("export")
@user_errors
def schemas_export(directory: Path = typer.Argument(..., help="Where to write <Name>.schema.json")) -> None:
    """Write the JSON Schemas of the data contract."""
    from benchsmith.schemas import export_json_schemas

    for path in export_json_schemas(directory):
        typer.echo(str(path))


# commands that live in their own modules (light imports only at module level)
from ._model import model_app  # noqa: E402
from ._report import register as _register_report  # noqa: E402

app.add_typer(model_app, name="model")

from ._construct import construct_app  # noqa: E402 - needs user_errors defined above
from ._annotate import annotate_app  # noqa: E402

app.add_typer(construct_app, name="construct")
app.add_typer(annotate_app, name="annotate")
_register_report(app)


def main() -> None:  # pragma: no cover
    app(prog_name="benchsmith")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
