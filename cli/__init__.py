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
    """Print a user's mistake as one red line and exit 2; let real faults raise."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from benchsmith.schemas import UserError

        try:
            return fn(*args, **kwargs)
        except UserError as exc:
            from rich.console import Console

            Console(stderr=True).print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper


def _print_report(report: dict[str, Any], out: Path) -> None:
    from rich.console import Console

    console = Console()
    rejected = ", ".join(f"{k}={v}" for k, v in report["rejected"].items()) or "none"
    console.print(f"[bold]{report['style'].upper()}[/] {out}: {report['verified']}/{report['total']} verified "
                  f"({report['verified_rate']:.1%}) in {report['seconds']:.2f}s; rejected: {rejected}")


@nl2api_app.command("build")
@user_errors
def nl2api_build(
    db: Path = typer.Option(..., "--db", envvar="BENCHSMITH_DB", help="SQLite database"),
    pairs: Path = typer.Option(..., "--pairs", envvar="BENCHSMITH_PAIRS", help="JSONL of {id?, question, sql, evidence?}"),
    style: str = typer.Option("slot", "--style", envvar="BENCHSMITH_STYLE", help="slot | sel | rest"),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="Output directory of the split"),
    obfuscate: bool = typer.Option(False, "--obfuscate", envvar="BENCHSMITH_OBFUSCATE", help="FUNC_n / ARG_n names"),
    tool_universe: Optional[int] = typer.Option(None, "--tool-universe", envvar="BENCHSMITH_TOOL_UNIVERSE",
                                                help="At most N candidate tools per sample (gold tools always kept)"),
    seed: int = typer.Option(0, "--seed", envvar="BENCHSMITH_SEED"),
    timeout: float = typer.Option(10.0, "--timeout", envvar="BENCHSMITH_SQL_TIMEOUT", help="Seconds per SQL query"),
    name: Optional[str] = typer.Option(None, "--name", envvar="BENCHSMITH_SPLIT_NAME"),
    descriptions: Optional[Path] = typer.Option(None, "--descriptions", envvar="BENCHSMITH_DESCRIPTIONS",
                                                help="JSON {table: {column: description}} (default: DB.descriptions.json)"),
) -> None:
    """Convert and verify NL2SQL pairs into an NL2API split (samples.jsonl, tools.json, report.json)."""
    from benchsmith.construction.nl2api import STYLES, BuildOptions, build_split
    from benchsmith.schemas import UserError

    if style not in STYLES:
        raise UserError(f"--style {style!r} is not one of {', '.join(STYLES)}")
    report = build_split(db, pairs, out, BuildOptions(style=style, obfuscate=obfuscate, tool_universe=tool_universe,
                                                      seed=seed, timeout_s=timeout, name=name,
                                                      descriptions=descriptions))
    _print_report(report, out)


@nl2api_app.command("serve")
@user_errors
def nl2api_serve(
    split_dir: Path = typer.Argument(..., help="A REST split built with --style rest"),
    host: str = typer.Option("127.0.0.1", "--host", envvar="BENCHSMITH_HOST", help="Bind address (loopback by default)"),
    port: int = typer.Option(8765, "--port", envvar="BENCHSMITH_PORT"),
) -> None:
    """Serve a REST split's endpoints with FastAPI (GET, typed query parameters)."""
    import uvicorn

    from benchsmith.construction.nl2api import create_app

    uvicorn.run(create_app(str(split_dir)), host=host, port=port, log_level="info")


@app.command("demo")
@user_errors
def demo(
    out: Path = typer.Option(Path("out/demo"), "--out", envvar="BENCHSMITH_DEMO_OUT", help="Where to write the splits"),
) -> None:
    """The main job on the embedded default data: Chinook + its question/SQL pairs -> SLOT, SEL and REST splits,
    gold self-tests, and T-Eval cases derived from the SLOT split (self-tested too)."""
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db
    from benchsmith.construction.nl2api._private.build import default_pairs_path

    from benchsmith.eval import run_selftest
    from benchsmith.eval.teval import derive_teval

    db = chinook_db()
    for style in ("slot", "sel", "rest"):
        report = build_split(db, default_pairs_path(), out / style, BuildOptions(style=style, name=f"chinook-{style}"))
        _print_report(report, out / style)
        scores = run_selftest("nl2api", out / style, out / "selftest" / f"nl2api-{style}")
        typer.echo(f"  gold self-test (nl2api, strict): {scores['records'] - scores['gold_failing']}/{scores['records']} pass")
    derived = derive_teval(out / "slot", out / "teval")
    counts = {a: sum(v.values()) for a, v in derived["records"].items()}
    typer.echo(f"T-Eval cases derived from the SLOT split into {out / 'teval'}: {counts}")
    scores = run_selftest("teval", out / "teval", out / "selftest" / "teval")
    typer.echo(f"  gold self-test (teval, strict): overall {scores['overall']:.2f}, "
               f"{scores['records'] - scores['gold_failing']}/{scores['records']} records pass")
    typer.echo(f"serve the REST split with: benchsmith nl2api serve {out / 'rest'}")


BENCHMARK_HELP = "acebench | bfcl | teval | gta | toolassess | nl2api"


@eval_app.command("score")
@user_errors
def eval_score(
    benchmark: str = typer.Option(..., "--benchmark", envvar="BENCHSMITH_BENCHMARK", help=BENCHMARK_HELP),
    data: Path = typer.Option(..., "--data", envvar="BENCHSMITH_DATA", help="The benchmark's own data folder or a benchsmith split"),
    predictions: Path = typer.Option(..., "--predictions", envvar="BENCHSMITH_PREDICTIONS", help="JSONL of {id, result}"),
    mode: str = typer.Option("strict", "--mode", envvar="BENCHSMITH_MODE", help="strict | official"),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="Where scores.json and records.jsonl go"),
) -> None:
    """Score a predictions file; writes OUT/scores.json and OUT/records.jsonl."""
    import json

    from benchsmith.eval import run_score

    scores = run_score(benchmark, data, predictions, out, mode)
    typer.echo(json.dumps({k: v for k, v in scores.items() if not isinstance(v, (list, dict))}, ensure_ascii=False))


@eval_app.command("selftest")
@user_errors
def eval_selftest(
    benchmark: str = typer.Option(..., "--benchmark", envvar="BENCHSMITH_BENCHMARK", help=BENCHMARK_HELP),
    data: Path = typer.Option(..., "--data", envvar="BENCHSMITH_DATA", help="The benchmark's own data folder or a benchsmith split"),
    mode: str = typer.Option("strict", "--mode", envvar="BENCHSMITH_MODE", help="strict | official"),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="Where selftest.json, scores.json, records.jsonl go"),
) -> None:
    """Score the gold answers as predictions and list every record whose gold cannot pass."""
    import json

    from benchsmith.eval import run_selftest

    scores = run_selftest(benchmark, data, out, mode)
    typer.echo(json.dumps({k: v for k, v in scores.items() if not isinstance(v, (list, dict))}, ensure_ascii=False))


@eval_app.command("derive")
@user_errors
def eval_derive(
    split: Path = typer.Option(..., "--split", envvar="BENCHSMITH_SPLIT",
                               help="An NL2API split folder (samples.jsonl with verified gold chains)"),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT",
                             help="Where the T-Eval files (instruct_v2.json, plan_json_v2.json, ...) go"),
) -> None:
    """Derive T-Eval records (six abilities, json and str) from an NL2API split."""
    import json

    from benchsmith.eval.teval import derive_teval

    report = derive_teval(split, out)
    counts = {a: sum(v.values()) for a, v in report["records"].items()}
    typer.echo(json.dumps({"out": str(out), "samples": report["source"]["samples"], "records": counts}))


@schemas_app.command("export")
@user_errors
def schemas_export(directory: Path = typer.Argument(..., help="Where to write <Name>.schema.json")) -> None:
    """Write the JSON Schemas of the data contract."""
    from benchsmith.schemas import export_json_schemas

    for path in export_json_schemas(directory):
        typer.echo(str(path))


def main() -> None:  # pragma: no cover
    app(prog_name="benchsmith")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
