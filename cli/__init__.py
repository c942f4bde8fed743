"""The ``benchsmith`` command line: a thin layer over the library.

Every option can also be set by an environment variable (shown in ``--help``). Heavy
imports happen inside the commands so ``benchsmith --help`` stays instant.
"""

# No `from __future__ import annotations` in the CLI: typer reads every command's annotations
# each time it builds the command tree (every call); string annotations are compiled and
# evaluated there, about 20 ms of each `eval score`, real ones cost nothing.

import contextlib
import functools
import gc
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import typer

from benchsmith.demo import DEMO_LIMIT  # the main job's default, declared where it is used (a light import)

app = typer.Typer(
    rich_markup_mode=None,
    help="benchsmith: build, review and evaluate tool-use benchmarks.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
nl2api_app = typer.Typer(
    rich_markup_mode=None,
    help="NL2SQL -> NL2API: executable tools and verified gold chains from SQLite.",
    no_args_is_help=True,
)
schemas_app = typer.Typer(rich_markup_mode=None, help="The data contract (JSON Schemas).", no_args_is_help=True)
eval_app = typer.Typer(
    rich_markup_mode=None,
    help="Score predictions on tool-use benchmarks (official and strict modes).",
    no_args_is_help=True,
)
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
    """Refuse, before any work, an output folder that cannot be written: an existing file, a path
    under a file, under a folder that cannot be written (``benchsmith.schemas.check_out_dir``)."""
    if out is not None:
        from benchsmith.schemas import check_out_dir as check

        check(out, flag)


def check_number(
    flag: str,
    value: Optional[float],
    *,
    ge: Optional[float] = None,
    gt: Optional[float] = None,
    le: Optional[float] = None,
    example: Optional[float] = None,
) -> None:
    """Refuse a number option that is not finite or out of range (None: not given) as one red line.
    Typer's own ``min``/``max`` print a usage panel instead, and let ``nan`` through."""
    import math

    from benchsmith.schemas import UserError

    if value is None:
        return
    if (
        (isinstance(value, int) or math.isfinite(value))
        and (ge is None or value >= ge)
        and (gt is None or value > gt)
        and (le is None or value <= le)
    ):
        return
    want = ", ".join(
        f"{w} {_shown(bound)}"
        for w, bound in (("greater than", gt), ("at least", ge), ("at most", le))
        if bound is not None
    )
    if example is None:
        example = ge if ge is not None else le if le is not None else gt + 1 if gt is not None else 0
    must = want if isinstance(value, int) else ", ".join(w for w in ("a finite number", want) if w)
    raise UserError(
        f"{flag} {_shown(value)} is out of range: it must be {must}", fix=f"pass e.g. {flag} {_shown(example)}"
    )


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def check_port(port: int, flag: str = "--port") -> None:
    check_number(flag, port, ge=1, le=65535, example=8765)


def _spent(usage: Any, cost: Any) -> str:
    """``, 1,234 tokens (model 1,200, user 34), 0.0123 USD``: what a task's calls cost, for its summary line."""
    if not usage:
        return ""
    tokens = {role: u.prompt_tokens + u.completion_tokens for role, u in usage.items()}
    parts = ", ".join(f"{role} {n:,}" for role, n in tokens.items())
    money = f", {cost.total:.4g} {cost.currency}" if cost is not None else ""
    per = f" ({cost.per_success:.4g} per correct case)" if cost is not None and cost.per_success is not None else ""
    return f", {sum(tokens.values()):,} tokens ({parts}){money}{per}"


def typed_options(cls: Any, flags: dict[str, str], **fields: Any) -> Any:
    """``cls(**fields)``: an options model that declares its own ranges (pydantic ``Field``
    constraints). A value it refuses is one red line naming the command-line flag ``flags[field]``."""
    from pydantic import ValidationError

    from benchsmith.schemas import UserError

    try:
        return cls(**fields)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in err["loc"])  # a nested option: "options.max_turns"
        flag = flags.get(field, field)
        value = fields[field] if field in fields else err.get("input")
        raise UserError(
            f"{flag} {_shown(value)} is not accepted: {err['msg'][:1].lower()}{err['msg'][1:]}",
            fix=f"change {flag} (its range is in `--help`)",
        ) from None


#: ``ModelConfig`` field -> the flag that sets it, for :func:`check_model_settings`
MODEL_FLAGS = {
    "timeout": "--timeout",
    "max_tokens": "--max-tokens",
    "requests_per_second": "--rps",
    "max_retries": "--max-retries",
    "temperature": "--temperature",
}


def check_model_settings(**settings: Any) -> None:
    """Check the model options against ``ModelConfig``'s own constraints (and that each number is
    finite) before anything starts: resolving a model may start the local server first."""
    from benchsmith.models import ModelConfig

    given = {k: v for k, v in settings.items() if v is not None}
    for key, value in given.items():
        if isinstance(value, float):
            check_number(MODEL_FLAGS[key], value)
    typed_options(ModelConfig, MODEL_FLAGS, name="check", **given)


MAX_RETRIES_HELP = (
    "Retries of a failed model request (connection, timeout, HTTP 429, 5xx) before it counts as "
    "failed (default 4; >= 0)"
)


def retry_overrides(max_retries: Optional[int]) -> dict[str, Any]:
    """The model-configuration override for ``--max-retries`` (none when not given)."""
    return {} if max_retries is None else {"max_retries": max_retries}


def _print_report(report: dict[str, Any], out: Path) -> None:
    from benchsmith.demo import build_report_line

    typer.echo(build_report_line(report, out))


WORKERS_HELP = "Processes converting and verifying pairs (>= 1; results identical to 1, in input order)"
RAY_HELP = "Run the pairs as Ray tasks: local (a local Ray instance), auto (the running cluster) or an address"
UNIVERSE_HELP = "Candidate tools per sample: a count (12) or a fraction of the full set (0.25); gold tools always kept"
SWEEP_HELP = "Comma-separated universe sizes (e.g. 0.25,0.5,1.0): one split per size in OUT/universe-<size>"


def _build_options(
    style: str,
    obfuscate: bool,
    tool_universe: Optional[str],
    seed: int,
    timeout: float,
    name: Optional[str],
    workers: int,
    ray: Optional[str],
) -> Any:
    from benchsmith.construction.nl2api import STYLES, BuildOptions, parse_universe
    from benchsmith.schemas import UserError

    if style not in STYLES:
        raise UserError(f"--style {style!r} is not one of {', '.join(STYLES)}")
    return typed_options(
        BuildOptions,
        BUILD_FLAGS,
        style=style,
        obfuscate=obfuscate,
        seed=seed,
        timeout_s=timeout,
        name=name,
        workers=workers,
        ray=ray or None,
        tool_universe=parse_universe(tool_universe) if tool_universe else None,
    )


#: ``BuildOptions`` field -> its flag
BUILD_FLAGS = {
    "style": "--style",
    "seed": "--seed",
    "timeout_s": "--timeout",
    "workers": "--workers",
    "tool_universe": "--tool-universe",
    "name": "--name",
    "ray": "--ray",
}


def _sweep(text: Optional[str]) -> Optional[list]:
    if not text:
        return None
    from benchsmith.construction.nl2api import parse_universe

    return [parse_universe(t.strip()) for t in text.split(",") if t.strip()]


@nl2api_app.command("build")
@user_errors
def nl2api_build(
    db: Path = typer.Option(..., "--db", envvar="BENCHSMITH_DB", help="SQLite database"),
    pairs: Path = typer.Option(
        ..., "--pairs", envvar="BENCHSMITH_PAIRS", help="JSONL of {id?, question, sql, evidence?}"
    ),
    style: str = typer.Option("slot", "--style", envvar="BENCHSMITH_STYLE", help="slot | sel | rest"),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="Output directory of the split"),
    obfuscate: bool = typer.Option(False, "--obfuscate", envvar="BENCHSMITH_OBFUSCATE", help="FUNC_n / ARG_n names"),
    tool_universe: Optional[str] = typer.Option(
        None, "--tool-universe", envvar="BENCHSMITH_TOOL_UNIVERSE", help=UNIVERSE_HELP
    ),
    sweep: Optional[str] = typer.Option(
        None, "--tool-universe-sweep", envvar="BENCHSMITH_TOOL_UNIVERSE_SWEEP", help=SWEEP_HELP
    ),
    seed: int = typer.Option(0, "--seed", envvar="BENCHSMITH_SEED"),
    timeout: float = typer.Option(
        10.0, "--timeout", envvar="BENCHSMITH_SQL_TIMEOUT", help="Seconds per SQL query (> 0)"
    ),
    name: Optional[str] = typer.Option(None, "--name", envvar="BENCHSMITH_SPLIT_NAME"),
    descriptions: Optional[Path] = typer.Option(
        None,
        "--descriptions",
        envvar="BENCHSMITH_DESCRIPTIONS",
        help="JSON {table: {column: description}} (default: DB.descriptions.json)",
    ),
    workers: int = typer.Option(1, "--workers", envvar="BENCHSMITH_WORKERS", help=WORKERS_HELP),
    ray: Optional[str] = typer.Option(None, "--ray", envvar="BENCHSMITH_RAY", help=RAY_HELP),
) -> None:
    """Convert and verify NL2SQL pairs into an NL2API split (samples.jsonl, tools.json, report.json).
    A killed build resumes: run the same command again."""
    from dataclasses import replace

    from benchsmith.construction.nl2api import build_universes, universe_label

    check_out_dir(out)
    opts = replace(
        _build_options(style, obfuscate, tool_universe, seed, timeout, name, workers, ray), descriptions=descriptions
    )
    sizes = _sweep(sweep)
    from benchsmith.schemas import Bars

    with Bars() as bars:  # one bar of pairs done (a resumed build counts from what is left)
        reports = build_universes(db, pairs, out, replace(opts, progress=bars.add("pairs").advance), sizes)
    for size, report in zip(sizes or [None], reports):
        _print_report(report, out if size is None else out / universe_label(size))


@nl2api_app.command("import")
@user_errors
def nl2api_import(
    kind: str = typer.Argument(..., help="bird | spider | sqlite-dir"),
    root: Path = typer.Argument(
        ...,
        help="The dataset folder (BIRD: dev.json + dev_databases/; Spider: dev.json + "
        "database/ + tables.json; sqlite-dir: *.sqlite + pairs.jsonl)",
    ),
    out: Path = typer.Option(
        ..., "--out", envvar="BENCHSMITH_OUT", help="Output folder: one split per database and merged/"
    ),
    style: str = typer.Option("slot", "--style", envvar="BENCHSMITH_STYLE", help="slot | sel | rest"),
    split_file: Optional[str] = typer.Option(
        None,
        "--split-file",
        envvar="BENCHSMITH_SPLIT_FILE",
        help="Question file name in the dataset folder (default dev.json, ...)",
    ),
    merged: bool = typer.Option(
        True, "--merged/--no-merged", envvar="BENCHSMITH_MERGED", help="Also write merged/: every database in one split"
    ),
    obfuscate: bool = typer.Option(False, "--obfuscate", envvar="BENCHSMITH_OBFUSCATE", help="FUNC_n / ARG_n names"),
    tool_universe: Optional[str] = typer.Option(
        None, "--tool-universe", envvar="BENCHSMITH_TOOL_UNIVERSE", help=UNIVERSE_HELP
    ),
    seed: int = typer.Option(0, "--seed", envvar="BENCHSMITH_SEED"),
    timeout: float = typer.Option(
        10.0, "--timeout", envvar="BENCHSMITH_SQL_TIMEOUT", help="Seconds per SQL query (> 0)"
    ),
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
    typer.echo(
        f"{kind} {root}: {report['verified']}/{report['total']} verified"
        + (f", {skipped} entries not built (see report.json)" if skipped else "")
        + (f", {len(report['warnings'])} warnings" if report["warnings"] else "")
    )
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

    check_out_dir(dest, "DEST")
    typer.echo(str(materialize_example(kind, dest)))


@nl2api_app.command("serve")
@user_errors
def nl2api_serve(
    split_dir: Path = typer.Argument(..., help="A REST split built with --style rest"),
    host: str = typer.Option(
        "127.0.0.1", "--host", envvar="BENCHSMITH_HOST", help="Bind address (loopback by default)"
    ),
    port: int = typer.Option(8765, "--port", envvar="BENCHSMITH_PORT"),
) -> None:
    """Serve a REST split's endpoints with FastAPI: GET http://HOST:PORT/v1/<endpoint>?<parameters>.

    Every endpoint is under /v1/. GET / lists the endpoint paths.
    /docs (Swagger UI) and /redoc are served locally, without a CDN; /openapi.json is the OpenAPI document.
    At start-up the base URL, the number of endpoints and an example request are printed."""
    check_port(port)
    from benchsmith.construction.nl2api import serve_split

    serve_split(split_dir, host=host, port=port, echo=typer.echo)


@app.command("compare")
@user_errors
def compare(
    runs: list[Path] = typer.Argument(
        ..., help="Run folders of `benchsmith eval run`, each scored; the first is the baseline"
    ),
    allow: Optional[str] = typer.Option(
        None,
        "--allow",
        envvar="BENCHSMITH_ALLOW",
        help="Differences that are intended, comma-separated: split, cases, prompt, mode",
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", envvar="BENCHSMITH_OUT", help="Also write the comparison as JSON to this file"
    ),
    resamples: int = typer.Option(
        2000, "--resamples", envvar="BENCHSMITH_RESAMPLES", help="Bootstrap resamples of each difference (at least 100)"
    ),
    confidence: float = typer.Option(
        0.95, "--confidence", envvar="BENCHSMITH_CONFIDENCE", help="The intervals' confidence level, in (0, 1)"
    ),
    alpha: float = typer.Option(
        0.05,
        "--alpha",
        envvar="BENCHSMITH_ALPHA",
        help="The test's level: a difference with p >= alpha is within noise",
    ),
) -> None:
    """Each run against the first, on the cases both scored: per task and category, the difference
    of mean record scores with a paired bootstrap interval and an exact McNemar p-value."""
    from benchsmith.eval import CompareOptions, compare_runs
    from benchsmith.schemas import UserError, write_comparisons

    options = typed_options(
        CompareOptions,
        {"resamples": "--resamples", "confidence": "--confidence", "alpha": "--alpha", "allow": "--allow"},
        allow=frozenset(a.strip() for a in (allow or "").split(",") if a.strip()),
        resamples=resamples,
        confidence=confidence,
        alpha=alpha,
    )
    if out is not None:
        if out.is_dir():
            raise UserError(f"--out {out} is a folder", fix="give a file name, e.g. comparison.json")
        check_out_dir(out.parent)
    comparisons = compare_runs(runs, options)
    for comparison in comparisons:
        typer.echo(f"{comparison.run} against {comparison.baseline}:")
        for allowed in comparison.allowed:
            typer.echo(f"  allowed: {allowed}")
        for f in comparison.figures:
            where = f.task if f.category is None else f"  {f.task} / {f.category}"
            interval = "n/a" if f.interval is None else f"[{100 * f.interval[0]:+.1f}, {100 * f.interval[1]:+.1f}]"
            verdict = "within noise" if f.within_noise else ("B better" if f.difference > 0 else "A better")
            typer.echo(
                f"  {where}: {100 * f.a:.1f}% -> {100 * f.b:.1f}%, {100 * f.difference:+.1f} points {interval}, "
                f"McNemar p={f.p_value:.3g} ({f.only_a} only A, {f.only_b} only B, {f.cases} cases): {verdict}"
            )
    _echo_noise(runs)
    if out is not None:
        write_comparisons(out, comparisons)
        typer.echo(f"written: {out}")


def _echo_noise(runs: list[Path]) -> None:
    """When the runs are the repeats of one ``eval run --repeats``: how much each task moves between them."""
    from benchsmith.eval import noise_floor
    from benchsmith.schemas import read_run_manifest

    manifests = [read_run_manifest(run / "run.json") for run in runs]
    if not all(m.repeat is not None for m in manifests) or len({run.resolve().parent for run in runs}) != 1:
        return
    typer.echo(f"run-to-run noise over {len(runs)} repeats of the same settings:")
    for f in noise_floor(runs):
        mdd = (
            "n/a (no case flipped)"
            if f.min_detectable_difference is None
            else f"{100 * f.min_detectable_difference:.1f} points"
        )
        typer.echo(
            f"  {f.task}: {100 * f.flip_rate:.1f}% of {f.cases} cases flip between two repeats; mean scores "
            f"{', '.join(f'{100 * v:.1f}%' for v in f.mean_scores)}; smallest detectable difference {mdd}"
        )


@app.command("demo")
@user_errors
def demo(
    out: Path = typer.Option(Path("out/demo"), "--out", envvar="BENCHSMITH_DEMO_OUT", help="Where to write the splits"),
    limit: int = typer.Option(
        DEMO_LIMIT,
        "--limit",
        envvar="BENCHSMITH_DEMO_LIMIT",
        help="Cases per task for the local model's evaluation run (>= 1)",
    ),
    model_run: bool = typer.Option(
        True,
        "--model-run/--no-model-run",
        envvar="BENCHSMITH_DEMO_MODEL_RUN",
        help="Run the construction pass, the Label Studio review and the local model's evaluation with its report",
    ),
) -> None:
    """The main job on the embedded default data: Chinook + its question/SQL pairs -> SLOT, SEL and REST splits,
    gold self-tests, and T-Eval, GTA, ToolAssess and ACEBench-special cases derived from the SLOT split
    (each self-tested too); with --model-run, construction, review and evaluation with the local model."""
    from benchsmith.demo import run

    check_number("--limit", limit, ge=1)
    check_out_dir(out)
    run(out, limit=limit, model_run=model_run, echo=typer.echo, note=lambda m: typer.echo(m, err=True))


BENCHMARK_HELP = "A registered benchmark (`benchsmith eval list` names them)"


def renamed(old: str, new: str, old_value: Any, new_value: Any) -> Any:
    """The value of an option given under its old spelling (kept for one release, with one line on stderr),
    else the new one; both given is a user error."""
    if old_value is None:
        return new_value
    from benchsmith.schemas import UserError

    if new_value is not None:
        raise UserError(f"{old} and {new} both given", fix=f"drop {old} (it is the old spelling of {new})")
    warn_renamed(old, new)
    return old_value


def warn_renamed(old: str, new: str) -> None:
    """The one line an old option spelling prints."""
    typer.secho(f"warning: {old} is renamed {new}; the old spelling goes in the next release", err=True, fg="yellow")


# hidden old spellings (one meaning per name: --mode is strict|official, --format was also BFCL's and the export's)
OLD_FORMAT = typer.Option(None, "--format", hidden=True, help="Old spelling of --bfcl-format")


BFCL_FORMAT_HELP = (
    "BFCL only: prompt | fc, the output format of the results (prompt-mode models: Python call text; "
    "FC models: [{name: arguments JSON}]); official mode decodes with BFCL's decoder of that format "
    "(default prompt)"
)


@eval_app.command("score")
@user_errors
def eval_score(
    benchmark: Optional[str] = typer.Option(None, "--benchmark", envvar="BENCHSMITH_BENCHMARK", help=BENCHMARK_HELP),
    data: Optional[Path] = typer.Option(
        None, "--data", envvar="BENCHSMITH_DATA", help="The benchmark's own data folder or a benchsmith split"
    ),
    predictions: Optional[Path] = typer.Option(
        None, "--predictions", envvar="BENCHSMITH_PREDICTIONS", help="JSONL of {id, result}"
    ),
    mode: str = typer.Option("strict", "--mode", envvar="BENCHSMITH_MODE", help="strict | official"),
    out: Optional[Path] = typer.Option(
        None, "--out", envvar="BENCHSMITH_OUT", help="Where scores.json and records.jsonl go"
    ),
    run: Optional[Path] = typer.Option(
        None,
        "--run",
        envvar="BENCHSMITH_RUN",
        help="A run folder of `benchsmith eval run`: score each of its tasks in place",
    ),
    output_format: Optional[str] = typer.Option(
        None, "--bfcl-format", envvar="BENCHSMITH_BFCL_FORMAT", help=BFCL_FORMAT_HELP
    ),
    old_format: Optional[str] = OLD_FORMAT,
    resamples: int = typer.Option(
        2000,
        "--resamples",
        envvar="BENCHSMITH_RESAMPLES",
        help="Bootstrap resamples of every figure's interval (scores.json 'intervals'); 0: none",
    ),
    confidence: float = typer.Option(
        0.95, "--confidence", envvar="BENCHSMITH_CONFIDENCE", help="The intervals' confidence level, in (0, 1)"
    ),
    prices: Optional[Path] = typer.Option(
        None,
        "--prices",
        envvar="BENCHSMITH_PRICES",
        help="--run: a price table (JSON) for the cost in scores.json; default: the one the run was given",
    ),
) -> None:
    """Score a predictions file (OUT/scores.json, OUT/records.jsonl), or every task of a run (--run RUN_DIR)."""
    import json

    from benchsmith.eval import IntervalOptions
    from benchsmith.schemas import UserError

    output_format = renamed("--format", "--bfcl-format", old_format, output_format)
    intervals = typed_options(
        IntervalOptions,
        {"resamples": "--resamples", "confidence": "--confidence"},
        resamples=resamples,
        confidence=confidence,
    )
    check_out_dir(out)
    if run is not None:
        if output_format is not None:
            raise UserError(
                "--bfcl-format does not apply to --run",
                fix="a run records its own format (BFCL tools mode: fc, "
                "prompt mode: prompt); drop --bfcl-format / BENCHSMITH_BFCL_FORMAT",
            )
        from benchsmith.eval import score_run
        from benchsmith.schemas import Bars, ScoreHead, read_prices, score_head

        table = read_prices(prices) if prices is not None else None
        with Bars():
            run_scores = score_run(run, mode, intervals, table)
        from benchsmith.eval.report import primary

        for name, scores in run_scores.items():
            head = score_head(scores) or ScoreHead(benchmark=name, mode="strict", records=0)
            metric, value = primary(scores.get("benchmark", name), scores)
            shown = "n/a" if not isinstance(value, (int, float)) else f"{100 * value:.1f}%"
            missing = scores.get("missing_predictions") or 0
            typer.echo(
                f"{name} ({scores.get('benchmark', name)}, {mode}): {metric} {shown} over {scores.get('records', 0)} "
                f"records{f', {missing} without a reply' if missing else ''}{_spent(head.usage, head.cost)}; "
                f"all figures in {run / name / 'scores.json'}"
            )
        return
    missing = [
        flag
        for flag, value in (
            ("--benchmark", benchmark),
            ("--data", data),
            ("--predictions", predictions),
            ("--out", out),
        )
        if value is None
    ]
    if missing:
        raise UserError(
            f"missing {', '.join(missing)}", fix="give --benchmark, --data, --predictions and --out, or --run RUN_DIR"
        )
    from benchsmith.eval import get_benchmark, run_score
    from benchsmith.schemas import Bars

    with _settled():
        try:
            get_benchmark(benchmark, format=output_format)  # imports the benchmark's modules before the freeze
        except UserError:
            pass  # run_score says what is wrong
    with Bars():
        scores = run_score(
            benchmark,
            data,
            predictions,
            out,
            mode,  # type: ignore[arg-type]
            options={"format": output_format},
            intervals=intervals,
        )
    typer.echo(json.dumps({k: v for k, v in scores.items() if not isinstance(v, (list, dict))}, ensure_ascii=False))


@app.callback()
def _started() -> None:
    """Runs once the command line is parsed, before the command: under :func:`main` the garbage
    collector was off until here, while only long-lived objects were made (the modules typer and
    pydantic import); they are frozen (never walked again) and collection starts."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


@contextlib.contextmanager
def _settled() -> Iterator[None]:
    """Around the imports a scoring run needs, in the ``benchsmith`` process (something frozen
    already, see :func:`_started`): the modules imported live as long as the process, so the
    collector does not run while they are built and does not walk them afterwards, when scoring
    makes many small objects (ACEBench's English data, eval score: the freeze saved about 50 ms of
    540 ms CPU; with collection off during start-up, collections take 6-7 ms in all instead of
    14-16 ms). In-process callers (tests) are left alone."""
    if not gc.get_freeze_count():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


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
    split: Path = typer.Option(
        ...,
        "--split",
        envvar="BENCHSMITH_SPLIT",
        help="A benchsmith split (runs nl2api end to end + derived benchmarks), a folder of "
        "`eval derive`, or a benchmark's own folder (with --tasks)",
    ),
    model: str = typer.Option(
        "local",
        "--model",
        envvar="BENCHSMITH_MODEL",
        help="Model name at the endpoint; 'local' = the default local model, 'local:NAME' a "
        "local model by name (docs/models.md)",
    ),
    base_url: Optional[str] = typer.Option(
        None,
        "--base-url",
        envvar="BENCHSMITH_BASE_URL",
        help="OpenAI-compatible endpoint; none and no OPENAI_API_KEY = local model",
    ),
    calling: Optional[str] = typer.Option(
        None,
        "--calling",
        envvar="BENCHSMITH_CALLING",
        help="How the model is asked: auto (default: tools for endpoints, prompt for the local model) | "
        "tools (native tool calling) | prompt (JSON-constrained text)",
    ),
    mode: Optional[str] = typer.Option(
        None, "--mode", envvar="BENCHSMITH_RUN_MODE", hidden=True, help="Old spelling of --calling"
    ),
    strategy: Optional[str] = typer.Option(
        None,
        "--strategy",
        envvar="BENCHSMITH_STRATEGY",
        help="nl2api end to end: react (one call per step, outputs fed back; "
        "default) | direct (the whole call sequence in one reply)",
    ),
    concurrency: Optional[int] = typer.Option(
        None,
        "--concurrency",
        envvar="BENCHSMITH_CONCURRENCY",
        help="Requests in flight (>= 1; default: the local server's slots for the local model, else 4)",
    ),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="The run folder (re-use it to resume)"),
    tasks: str = typer.Option(
        "", "--tasks", envvar="BENCHSMITH_TASKS", help="Comma-separated tasks (`benchsmith eval list` names them)"
    ),
    limit: Optional[int] = typer.Option(
        None, "--limit", envvar="BENCHSMITH_LIMIT", help="At most N cases per task, spread over categories (>= 1)"
    ),
    seed: int = typer.Option(0, "--seed", envvar="BENCHSMITH_SEED", help="Seed for case selection and derivation"),
    timeout: float = typer.Option(120.0, "--timeout", envvar="BENCHSMITH_TIMEOUT", help="Seconds per request (> 0)"),
    max_tokens: int = typer.Option(384, "--max-tokens", envvar="BENCHSMITH_MAX_TOKENS", help="Reply length cap (>= 1)"),
    step_budget: int = typer.Option(
        12, "--step-budget", envvar="BENCHSMITH_STEP_BUDGET", help="Model calls per end-to-end case (>= 1)"
    ),
    variant: str = typer.Option(
        "standard",
        "--prompt-variant",
        envvar="BENCHSMITH_PROMPT_VARIANT",
        help="ACEBench prompt: standard | condensed | minimal",
    ),
    rps: Optional[float] = typer.Option(
        None, "--rps", envvar="BENCHSMITH_RPS", help="Rate limit, requests per second (> 0)"
    ),
    max_retries: Optional[int] = typer.Option(
        None, "--max-retries", envvar="BENCHSMITH_MAX_RETRIES", help=MAX_RETRIES_HELP
    ),
    categories: str = typer.Option(
        "",
        "--categories",
        envvar="BENCHSMITH_CATEGORIES",
        help="Comma-separated category prefixes: only cases of these categories",
    ),
    task_data: str = typer.Option(
        "",
        "--task-data",
        envvar="BENCHSMITH_TASK_DATA",
        help="Comma-separated TASK=PATH: run TASK on other data (e.g. agent=sandbox)",
    ),
    user_model: str = typer.Option(
        "local",
        "--user-model",
        envvar="BENCHSMITH_USER_MODEL",
        help="Episodes: the model that plays the user, NAME or NAME@URL; 'local' = the "
        "default local model, 'local:NAME' a local model by name",
    ),
    trials: int = typer.Option(
        1,
        "--trials",
        envvar="BENCHSMITH_TRIALS",
        help="Episodes: independent trials per case (pass^k and pass@k for k up to this; >= 1)",
    ),
    trial_temperature: float = typer.Option(
        0.7,
        "--trial-temperature",
        envvar="BENCHSMITH_TRIAL_TEMPERATURE",
        help="Episodes: sampling temperature of trials when --trials > 1 (>= 0)",
    ),
    max_turns: int = typer.Option(
        12, "--max-turns", envvar="BENCHSMITH_MAX_TURNS", help="Episodes: user messages (>= 1)"
    ),
    max_steps: int = typer.Option(
        8,
        "--max-steps",
        envvar="BENCHSMITH_MAX_STEPS",
        help="Episodes: assistant replies after one user message (>= 1)",
    ),
    max_tool_calls: int = typer.Option(
        40, "--max-tool-calls", envvar="BENCHSMITH_MAX_TOOL_CALLS", help="Episodes: tool calls (>= 1)"
    ),
    episode_tokens: int = typer.Option(
        250_000,
        "--episode-tokens",
        envvar="BENCHSMITH_EPISODE_TOKENS",
        help="Episodes: prompt + completion tokens of the model under test (>= 1)",
    ),
    episode_wall: float = typer.Option(
        1800.0,
        "--episode-wall",
        envvar="BENCHSMITH_EPISODE_WALL",
        help="Episodes: seconds of model and tool time (> 0)",
    ),
    environment_retries: int = typer.Option(
        2,
        "--environment-retries",
        envvar="BENCHSMITH_ENVIRONMENT_RETRIES",
        help="Plays of a case again, in the run, when its tool server failed (>= 0); then environment_error",
    ),
    user_max_tokens: Optional[int] = typer.Option(
        None,
        "--user-max-tokens",
        envvar="BENCHSMITH_USER_MAX_TOKENS",
        help="Episodes: the user simulator's output budget per message (>= 1; default 120 JSON, 160 text)",
    ),
    prices: Optional[Path] = typer.Option(
        None,
        "--prices",
        envvar="BENCHSMITH_PRICES",
        help="A price table (JSON: currency, per_million_tokens per model name); run.json and scores.json give the cost",
    ),
    repeats: int = typer.Option(
        1,
        "--repeats",
        envvar="BENCHSMITH_REPEATS",
        help="Run the same settings R times (>= 1), each with a fresh sampling seed, into OUT/repeat-N: "
        "score each, then `benchsmith report` or `compare` them for the run-to-run noise",
    ),
) -> None:
    """Ask a model to solve a split's cases; every reply is stored the moment it arrives (re-run to resume).
    Episodic tasks (ACEBench agent categories, agent) play each case against a simulated user (--user-model).
    Exit code 3 when cases are left unfinished because the endpoint or a tool environment failed (re-run the
    same command to resume)."""
    from benchsmith.eval import RUN_FLAGS, RunConfig, run_configured
    from benchsmith.schemas import RuntimeFault, UserError

    if mode == "direct":  # the old shorthand: the direct strategy with auto calling
        warn_renamed("--mode direct", "--strategy direct")
        if strategy == "react":
            raise UserError("--mode direct contradicts --strategy react", fix="drop --mode direct")
        mode, strategy = None, "direct"
    calling = renamed("--mode", "--calling", mode, calling)
    given = {"calling": calling, "concurrency": concurrency, "limit": limit, "rps": rps, "max_retries": max_retries}
    task_given = {"strategy": strategy}
    # every value is checked by RunConfig before anything starts (resolving the local model starts its server)
    config = typed_options(
        RunConfig,
        RUN_FLAGS,
        split=split,
        out=out,
        model=model,
        base_url=base_url,
        tasks=tuple(t.strip() for t in tasks.split(",") if t.strip()),
        seed=seed,
        timeout=timeout,
        categories=tuple(c.strip() for c in categories.split(",") if c.strip()),
        task_data=_task_data(task_data) or {},
        user_model=user_model,
        prices=prices,
        repeats=repeats,
        options=dict(
            max_tokens=max_tokens,
            step_budget=step_budget,
            variant=variant,
            trials=trials,
            trial_temperature=trial_temperature,
            max_turns=max_turns,
            max_steps=max_steps,
            max_tool_calls=max_tool_calls,
            max_episode_tokens=episode_tokens,
            episode_wall_s=episode_wall,
            environment_retries=environment_retries,
            user_max_tokens=user_max_tokens,
            **{k: v for k, v in task_given.items() if v is not None},
        ),
        **{k: v for k, v in given.items() if v is not None},
    )
    from ._model import note_started_servers, running_server_pids

    servers_before = running_server_pids()  # to say afterwards which local model server this command started
    result = run_configured(config, say=typer.echo)
    for name, info in result.tasks.items():
        c = info.status_counts
        typer.echo(
            f"  {name}: {info.done}/{info.cases} done (ok {c['ok']}, format errors {c['format_error']}, "
            f"refused {c['request_error']}, transport errors {c['transport_error']}, environment errors "
            f"{c.get('environment_error', 0)}), {info.model_calls} model calls{_spent(info.usage, info.cost)}"
        )
    unfinished = sum((info.cases or 0) - (info.done or 0) for info in result.tasks.values())
    if unfinished:
        total = sum(info.cases or 0 for info in result.tasks.values())
        env_failed = sum((info.status_counts or {}).get("environment_error", 0) for info in result.tasks.values())
        why = (
            f"the model endpoint did not answer {unfinished - env_failed} (transport errors), their tool "
            f"environment failed for {env_failed} (environment errors, never charged to the model)"
            if env_failed
            else "the model endpoint did not answer them (transport errors)"
        )
        raise RuntimeFault(
            f"{unfinished} of {total} cases unfinished: {why}; everything finished is kept in {out} — "
            "re-run the same command to resume"
        )
    typer.echo(f"run {result.status}: {out} — score it with `benchsmith eval score --run {out}`")
    note_started_servers(servers_before)


@eval_app.command("selftest")
@user_errors
def eval_selftest(
    benchmark: str = typer.Option(..., "--benchmark", envvar="BENCHSMITH_BENCHMARK", help=BENCHMARK_HELP),
    data: Path = typer.Option(
        ..., "--data", envvar="BENCHSMITH_DATA", help="The benchmark's own data folder or a benchsmith split"
    ),
    mode: str = typer.Option("strict", "--mode", envvar="BENCHSMITH_MODE", help="strict | official"),
    out: Path = typer.Option(
        ..., "--out", envvar="BENCHSMITH_OUT", help="Where selftest.json, scores.json, records.jsonl go"
    ),
    output_format: Optional[str] = typer.Option(
        None, "--bfcl-format", envvar="BENCHSMITH_BFCL_FORMAT", help=BFCL_FORMAT_HELP
    ),
    old_format: Optional[str] = OLD_FORMAT,
) -> None:
    """Score the gold answers as predictions and list every record whose gold cannot pass."""
    import json

    from benchsmith.eval import run_selftest

    output_format = renamed("--format", "--bfcl-format", old_format, output_format)
    check_out_dir(out)
    from benchsmith.schemas import Bars

    with Bars():
        scores = run_selftest(benchmark, data, out, mode, options={"format": output_format})
    typer.echo(json.dumps({k: v for k, v in scores.items() if not isinstance(v, (list, dict))}, ensure_ascii=False))


@eval_app.command("derive")
@user_errors
def eval_derive(
    split: Path = typer.Option(
        ...,
        "--split",
        envvar="BENCHSMITH_SPLIT",
        help="An NL2API split folder (samples.jsonl with verified gold chains)",
    ),
    out: Path = typer.Option(
        ..., "--out", envvar="BENCHSMITH_OUT", help="Where OUT/<deriver>/ folders and OUT/derive_report.json go"
    ),
    only: str = typer.Option(
        "",
        "--only",
        envvar="BENCHSMITH_DERIVE_ONLY",
        help="Comma-separated derivers (default: all; `benchsmith eval list` names them)",
    ),
    seed: int = typer.Option(0, "--seed", envvar="BENCHSMITH_SEED", help="Seed for distractors and variants"),
) -> None:
    """Derive benchmark cases from a split's verified gold chains: T-Eval's six abilities (json and str),
    GTA step-by-step prefixes, ToolAssess awareness/selection, ACEBench special variants.
    Each goes to OUT/<deriver>/ in its benchmark's own layout; score it with
    `benchsmith eval score --benchmark <benchmark> --data OUT/<deriver>`."""
    import json

    from benchsmith.eval import derive_all

    check_out_dir(out)
    from benchsmith.schemas import Bars

    with Bars():
        summary = derive_all(split, out, [n.strip() for n in only.split(",") if n.strip()] or None, seed=seed)
    for name, info in summary["derived"].items():
        counts = _counts(info["records"]) if isinstance(info["records"], dict) else f"{info['records']} records"
        typer.echo(f"{name} -> {out / info['folder']} (score with --benchmark {info['benchmark']}): {counts}")
    typer.echo(json.dumps({"out": str(out), "derived": {k: v["benchmark"] for k, v in summary["derived"].items()}}))


def _counts(counts: dict[str, Any]) -> str:
    """Counts as words: ``{"plan": {"json": 3, "str": 3}, "multi": 2}`` -> "plan (3 json, 3 str), 2 multi"."""
    return ", ".join(f"{k} ({_counts(v)})" if isinstance(v, dict) else f"{v} {k}" for k, v in counts.items())


@eval_app.command("list")
@user_errors
def eval_list() -> None:
    """The registered benchmarks (built-in and plug-ins from $BENCHSMITH_PLUGINS), each with its run
    tasks, derivers, exporter and scorers."""
    from benchsmith.eval import BENCHMARKS, DERIVERS, EXPORTERS, TASKS
    from benchsmith.eval.scoring import SCORERS

    for name in sorted(BENCHMARKS):
        tasks = sorted(t for t, tc in TASKS.items() if tc.benchmark == name)
        derivers = sorted(d for d in DERIVERS if d in tasks)
        scorers = sorted(s for s in SCORERS if s.split(".", 1)[0] == name)
        typer.echo(
            f"{name}: tasks {', '.join(tasks) or '-'}; derivers {', '.join(derivers) or '-'}; "
            f"export {'yes' if name in EXPORTERS else '-'}; scorers {len(scorers)}"
        )


@eval_app.command("export")
@user_errors
def eval_export(
    split: Path = typer.Option(
        ..., "--split", envvar="BENCHSMITH_SPLIT", help="A benchsmith split folder (samples.jsonl)"
    ),
    to: Optional[str] = typer.Option(
        None,
        "--to",
        envvar="BENCHSMITH_EXPORT_TO",
        help="The benchmark whose own format is written (`benchsmith eval list` names those with an exporter)",
    ),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="Where the benchmark's own files go"),
    old_format: Optional[str] = typer.Option(
        None, "--format", envvar="BENCHSMITH_EXPORT_FORMAT", hidden=True, help="Old spelling of --to"
    ),
) -> None:
    """Write a split in another benchmark's own format, so its official tools can read it."""
    import json

    from benchsmith.eval import EXPORTERS
    from benchsmith.schemas import UserError

    format = renamed("--format", "--to", old_format, to)
    if format is None:
        raise UserError("eval export needs --to", fix=f"add --to with one of {', '.join(EXPORTERS)}")

    if format not in EXPORTERS:
        raise UserError(f"unknown --to {format!r}", fix=f"use one of {', '.join(EXPORTERS)}")
    check_out_dir(out)
    report = EXPORTERS[format](split, out)
    typer.echo(
        json.dumps(
            {k: report[k] for k in ("format", "samples", "total", "skipped_by_reason", "written") if k in report},
            ensure_ascii=False,
        )
    )


@schemas_app.command("export")
@user_errors
def schemas_export(directory: Path = typer.Argument(..., help="Where to write <Name>.schema.json")) -> None:
    """Write the JSON Schemas of the data contract."""
    from benchsmith.schemas import export_json_schemas

    check_out_dir(directory, "DIRECTORY")
    for path in export_json_schemas(directory):
        typer.echo(str(path))


# commands that live in their own modules (light imports only at module level)
from ._model import model_app  # noqa: E402
from ._report import register as _register_report  # noqa: E402

app.add_typer(model_app, name="model")

from ._annotate import annotate_app  # noqa: E402
from ._construct import construct_app  # noqa: E402 - needs user_errors defined above
from ._tools import serve_app, tools_app  # noqa: E402

app.add_typer(construct_app, name="construct")
app.add_typer(annotate_app, name="annotate")
app.add_typer(tools_app, name="tools")
app.add_typer(serve_app, name="serve")
_register_report(app)


def main() -> None:  # pragma: no cover
    gc.disable()  # until the command starts (_started): start-up makes no garbage, only modules
    app(prog_name="benchsmith")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
