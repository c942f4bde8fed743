"""``benchsmith construct ...``: run a construction graph (or the quality checks) over a file."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from . import user_errors

construct_app = typer.Typer(help="Build data with LangGraph agent graphs (resumable; re-run the same --out to resume).",
                            no_args_is_help=True)

OUT = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="Run folder (re-use it to resume)")
MODEL = typer.Option("local", "--model", envvar="BENCHSMITH_MODEL",
                     help="Default model for every role; 'local' = the local default model")
BASE_URL = typer.Option(None, "--base-url", envvar="BENCHSMITH_BASE_URL", help="Default OpenAI-compatible endpoint")
ROLE = typer.Option([], "--role", envvar="BENCHSMITH_ROLES",
                    help="ROLE=MODEL or ROLE=MODEL@BASE_URL for one role (generator, refiner, planner, executor, reviewer, "
                         "tool_simulator, user, assistant, voter); repeatable")
CONCURRENCY = typer.Option(4, "--concurrency", envvar="BENCHSMITH_CONCURRENCY", help="Items worked on at once")
SEED = typer.Option(0, "--seed", envvar="BENCHSMITH_SEED", help="Seed (tool draws, transforms)")
LIMIT = typer.Option(None, "--limit", envvar="BENCHSMITH_LIMIT", help="At most N input items")
TIMEOUT = typer.Option(120.0, "--timeout", envvar="BENCHSMITH_TIMEOUT", help="Seconds per model request")
TEMPERATURE = typer.Option(0.0, "--temperature", envvar="BENCHSMITH_TEMPERATURE", help="Sampling temperature (all roles)")
MAX_TOKENS = typer.Option(384, "--max-tokens", envvar="BENCHSMITH_MAX_TOKENS", help="Reply length cap")
SPLIT = typer.Option(None, "--split", envvar="BENCHSMITH_SPLIT",
                     help="The split folder whose tools really execute (NL2API samples)")
SET = typer.Option([], "--set", envvar="BENCHSMITH_CONSTRUCT_OPTIONS", help="Graph option KEY=VALUE (JSON value); repeatable")


def parse_sets(sets: list[str]) -> dict[str, Any]:
    import json

    from benchsmith.schemas import UserError

    out: dict[str, Any] = {}
    for s in sets:
        key, eq, value = s.partition("=")
        if not eq or not key.strip():
            raise UserError(f"bad --set {s!r}", fix="write KEY=VALUE, e.g. --set step_budget=8")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def _models(model: str, base_url: Optional[str], roles: list[str], timeout: float, max_tokens: int,
            voters: list[str] | None = None, temperature: float = 0.0) -> Any:
    from benchsmith.construction import role_models

    return role_models(None if model == "local" else model, base_url, roles=roles, voters=voters or [],
                       timeout=timeout, max_tokens=max_tokens, temperature=temperature)


def print_summary(s: Any) -> None:
    from rich.console import Console

    console = Console()
    rejected = ", ".join(f"{k}={v}" for k, v in s.rejected_by.items()) or "none"
    per = f"{s.calls_per_accepted:.2f}" if s.calls_per_accepted is not None else "n/a (nothing accepted)"
    console.print(f"[bold]{s.graph}[/] {s.out}: {s.items} items, {s.samples} samples accepted, {s.rejected} rejected, "
                  f"{s.review} to review, {s.unfinished} unfinished; rejected by: {rejected}", highlight=False)
    console.print(f"  model calls {s.model_calls} ({per} per accepted sample); "
                  f"resumed {s.resumed}, already done {s.skipped_done}; {s.seconds:.1f}s", highlight=False)
    for e in s.errors[-5:]:
        console.print(f"  [yellow]{e}[/]", highlight=False)


def run(graph: str, source: Path, out: Path, *, model: str, base_url: Optional[str], roles: list[str], concurrency: int,
        seed: int, limit: Optional[int], timeout: float, max_tokens: int, split: Optional[Path], options: dict[str, Any],
        voters: list[str] | None = None, temperature: float = 0.0) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from benchsmith.construction import EnvContext, run_graph

    models = _models(model, base_url, roles, timeout, max_tokens, voters, temperature)
    with Progress(TextColumn(f"[bold]{graph}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True) as bar:
        task = bar.add_task(graph, total=None)
        summary = run_graph(graph, source, out, models=models, options=options, seed=seed, concurrency=concurrency,
                            limit=limit, env_context=EnvContext(split=split),
                            progress=lambda done, total: bar.update(task, completed=done, total=total))
    print_summary(summary)
    return summary


def _graph_command(graph: str, help_text: str, source_help: str, extra: dict[str, Any]) -> None:
    def command(
        source: Path = typer.Argument(..., help=source_help),
        out: Path = OUT, model: str = MODEL, base_url: Optional[str] = BASE_URL, role: list[str] = ROLE,
        concurrency: int = CONCURRENCY, seed: int = SEED, limit: Optional[int] = LIMIT, timeout: float = TIMEOUT,
        max_tokens: int = MAX_TOKENS, temperature: float = TEMPERATURE, split: Optional[Path] = SPLIT,
        sets: list[str] = SET,
    ) -> None:
        options = {**extra, **parse_sets(sets)}
        run(graph, source, out, model=model, base_url=base_url, roles=role, concurrency=concurrency, seed=seed,
            limit=limit, timeout=timeout, max_tokens=max_tokens, split=split, options=options, temperature=temperature)

    command.__doc__ = help_text
    command.__name__ = f"construct_{graph}"
    construct_app.command(graph)(user_errors(command))


_graph_command("queries", "Draw tools from a catalog; the generator writes a query, the refiner rewrites it; pure checks. "
               "Options (--set): n (items, 10), k (tools per draw, 2), strategy (random|related).",
               "A split folder, a tools JSON/JSONL file or a samples JSONL", {})
_graph_command("chains", "Gold chains: planner -> executor -> reviewer with real tools (or a tool simulator), within a "
               "step budget. Options: step_budget (6), max_retries (2).", "Samples JSONL with queries", {})
