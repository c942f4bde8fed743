"""``benchsmith construct ...``: run a construction graph (or the quality checks) over a file."""
# annotations are real objects, not strings (see cli/__init__.py)

from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperCommand

from . import MAX_RETRIES_HELP, check_model_settings, check_number, check_out_dir, retry_overrides, user_errors

construct_app = typer.Typer(
    rich_markup_mode=None,
    help="Build data with LangGraph agent graphs (resumable; re-run the same --out to resume). "
    "Exit code 3 when items are left unfinished because a model endpoint or a tool environment failed.",
    no_args_is_help=True,
)

OUT = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="Run folder (re-use it to resume)")
MODEL = typer.Option(
    "local",
    "--model",
    envvar="BENCHSMITH_MODEL",
    help="Default model for every role; 'local' = the default local model, 'local:NAME' a local model by name",
)
BASE_URL = typer.Option(None, "--base-url", envvar="BENCHSMITH_BASE_URL", help="Default OpenAI-compatible endpoint")
ROLE = typer.Option(
    [],
    "--role",
    envvar="BENCHSMITH_ROLES",
    help="ROLE=MODEL or ROLE=MODEL@BASE_URL for one role (generator, refiner, planner, executor, reviewer, "
    "tool_simulator, user, assistant, voter); repeatable",
)
CONCURRENCY = typer.Option(4, "--concurrency", envvar="BENCHSMITH_CONCURRENCY", help="Items worked on at once (>= 1)")
SEED = typer.Option(0, "--seed", envvar="BENCHSMITH_SEED", help="Seed (tool draws, transforms)")
LIMIT = typer.Option(None, "--limit", envvar="BENCHSMITH_LIMIT", help="At most N input items (>= 1)")
TIMEOUT = typer.Option(120.0, "--timeout", envvar="BENCHSMITH_TIMEOUT", help="Seconds per model request (> 0)")
TEMPERATURE = typer.Option(
    0.0, "--temperature", envvar="BENCHSMITH_TEMPERATURE", help="Sampling temperature (all roles; >= 0)"
)
MAX_TOKENS = typer.Option(384, "--max-tokens", envvar="BENCHSMITH_MAX_TOKENS", help="Reply length cap (>= 1)")
SPLIT = typer.Option(
    None, "--split", envvar="BENCHSMITH_SPLIT", help="The split folder whose tools really execute (NL2API samples)"
)
SET = typer.Option(
    [], "--set", envvar="BENCHSMITH_CONSTRUCT_OPTIONS", help="Graph option KEY=VALUE (JSON value); repeatable"
)
MAX_RETRIES = typer.Option(None, "--max-retries", envvar="BENCHSMITH_MAX_RETRIES", help=MAX_RETRIES_HELP)
PRICES = typer.Option(
    None,
    "--prices",
    envvar="BENCHSMITH_PRICES",
    help="A price table (JSON: currency, per_million_tokens per model name): summary.json gives the cost",
)


def parse_sets(sets: list[str]) -> dict[str, Any]:
    import json

    from benchsmith.schemas import UserError, loads_json

    out: dict[str, Any] = {}
    for s in sets:
        key, eq, value = s.partition("=")
        if not eq or not key.strip():
            raise UserError(f"bad --set {s!r}", fix="write KEY=VALUE, e.g. --set step_budget=8")
        try:
            parsed = loads_json(value)
        except json.JSONDecodeError:
            parsed = value
        out[key.strip()] = parsed
    return out


class GraphCommand(TyperCommand):
    """A ``construct <graph>`` command whose help ends with the graph's options, read from the graph's
    ``Options`` model when help is shown (importing a graph is too slow for every start-up)."""

    @property
    def epilog(self) -> str:
        from benchsmith.construction import get_graph, options_help

        lines = options_help(get_graph(self.name).Options).splitlines()
        return "Graph options (--set KEY=VALUE):\n\n" + "\n\n".join(lines)

    @epilog.setter
    def epilog(self, value: str | None) -> None:
        pass


def cli_role_models(
    model: str,
    base_url: Optional[str],
    roles: list[str],
    timeout: float,
    max_tokens: int,
    voters: list[str] | None = None,
    temperature: float = 0.0,
    max_retries: Optional[int] = None,
) -> Any:
    from benchsmith.construction import role_models

    return role_models(
        None if model == "local" else model,
        base_url,
        roles=roles,
        voters=voters or [],
        timeout=timeout,
        max_tokens=max_tokens,
        temperature=temperature,
        **retry_overrides(max_retries),
    )


def check_run_options(
    out: Path,
    concurrency: int,
    limit: Optional[int],
    timeout: float,
    max_tokens: int,
    temperature: float,
    max_retries: Optional[int],
) -> None:
    """The options every construct command shares, refused as one red line before anything runs."""
    check_number("--concurrency", concurrency, ge=1)
    check_number("--limit", limit, ge=1)
    check_model_settings(timeout=timeout, max_tokens=max_tokens, temperature=temperature, max_retries=max_retries)
    check_out_dir(out)


def check_finished(what: str, unfinished: int, total: int, out: Path, errors: list[str]) -> None:
    """Exit code 3 (one red line) when items were left unfinished by model endpoint or tool
    environment failures."""
    if not unfinished:
        return
    from benchsmith.schemas import RuntimeFault

    last = errors[-1] if errors else ""
    cause = f" (last error: {last[:300]})" if last else ""
    raise RuntimeFault(
        f"{what}: {unfinished} of {total} items unfinished because the model endpoint or a tool environment failed{cause}; "
        f"everything finished is kept in {out} — re-run the same command (same --out) to resume"
    )


def print_summary(s: Any) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console(soft_wrap=True)
    first, second, *errors = s.describe()
    console.print(f"[bold]{escape(s.graph)}[/]{escape(first[len(s.graph) :])}", highlight=False)
    console.print(escape(second), highlight=False)
    for e in errors:
        console.print(f"[yellow]{escape(e)}[/]", highlight=False)


def run(
    graph: str,
    source: Path,
    out: Path,
    *,
    model: str,
    base_url: Optional[str],
    roles: list[str],
    concurrency: int,
    seed: int,
    limit: Optional[int],
    timeout: float,
    max_tokens: int,
    split: Optional[Path],
    options: dict[str, Any],
    voters: list[str] | None = None,
    temperature: float = 0.0,
    max_retries: Optional[int] = None,
    prices: Optional[Path] = None,
) -> Any:
    """Run ``graph`` and print its summary; exit code 3 when items are left unfinished (re-run resumes)."""
    check_run_options(out, concurrency, limit, timeout, max_tokens, temperature, max_retries)
    from benchsmith.schemas import read_prices

    table = read_prices(prices) if prices is not None else None
    from benchsmith.construction import get_graph

    checked = get_graph(graph).check_options(options)  # a wrong key or value: one red line, nothing started
    from ._model import note_started_servers, running_server_pids

    servers_before = running_server_pids()  # to say afterwards which local model server this command started
    models = cli_role_models(model, base_url, roles, timeout, max_tokens, voters, temperature, max_retries)
    local = bool(models.describe().get("files"))  # a local model answers a role (its weights file is named)
    summary = _run_with_progress(graph, source, out, models, checked, seed, concurrency, limit, split, table)
    if local:
        note_started_servers(servers_before)
    print_summary(summary)
    check_finished(f"construct {graph}", summary.unfinished, summary.items, out, summary.errors)
    return summary


def _run_with_progress(
    graph: str,
    source: Path,
    out: Path,
    models: Any,
    options: Any,
    seed: int,
    concurrency: int,
    limit: Optional[int],
    split: Optional[Path],
    prices: Any = None,
) -> Any:
    from benchsmith.construction import EnvContext, run_graph
    from benchsmith.schemas import Bars

    with Bars() as bars:
        summary = run_graph(
            graph,
            source,
            out,
            models=models,
            options=options,
            seed=seed,
            concurrency=concurrency,
            limit=limit,
            env_context=EnvContext(split=split),
            progress=bars.add(graph).update,
            prices=prices,
        )
    return summary


def _graph_command(graph: str, help_text: str, source_help: str, extra: dict[str, Any]) -> None:
    def command(
        source: Path = typer.Argument(..., help=source_help),
        out: Path = OUT,
        model: str = MODEL,
        base_url: Optional[str] = BASE_URL,
        role: list[str] = ROLE,
        concurrency: int = CONCURRENCY,
        seed: int = SEED,
        limit: Optional[int] = LIMIT,
        timeout: float = TIMEOUT,
        max_tokens: int = MAX_TOKENS,
        temperature: float = TEMPERATURE,
        split: Optional[Path] = SPLIT,
        sets: list[str] = SET,
        max_retries: Optional[int] = MAX_RETRIES,
        prices: Optional[Path] = PRICES,
    ) -> None:
        options = {**extra, **parse_sets(sets)}
        run(
            graph,
            source,
            out,
            model=model,
            base_url=base_url,
            roles=role,
            concurrency=concurrency,
            seed=seed,
            limit=limit,
            timeout=timeout,
            max_tokens=max_tokens,
            split=split,
            options=options,
            temperature=temperature,
            max_retries=max_retries,
            prices=prices,
        )

    command.__doc__ = help_text
    command.__name__ = f"construct_{graph}"
    construct_app.command(graph, cls=GraphCommand)(user_errors(command))


_graph_command(
    "queries",
    "Draw tools from a catalog; the generator writes a query, the refiner rewrites it; pure checks.",
    "A split folder, a tools JSON/JSONL file or a samples JSONL",
    {},
)
_graph_command(
    "chains",
    "Gold chains: planner -> executor -> reviewer with real tools (or a tool simulator), within a step budget.",
    "Samples JSONL with queries",
    {},
)
_graph_command(
    "dialogues",
    "Dialogues: a user agent (goal, persona), the assistant agent and a tool agent (real sandbox / "
    "NL2API tools, or a simulator); the user ends when its goal is met.",
    "'sandbox' (the packaged scenarios), a scenarios JSONL, or a samples JSONL / split folder",
    {},
)


@construct_app.command("apis", cls=GraphCommand)
@user_errors
def construct_apis(
    source: Path = typer.Argument(
        ..., help="Seed documents: a T-Eval tool catalog (file or folder) or a tools JSON/JSONL"
    ),
    out: Path = OUT,
    model: str = MODEL,
    base_url: Optional[str] = BASE_URL,
    role: list[str] = ROLE,
    concurrency: int = CONCURRENCY,
    seed: int = SEED,
    limit: Optional[int] = LIMIT,
    timeout: float = TIMEOUT,
    max_tokens: int = MAX_TOKENS,
    temperature: float = TEMPERATURE,
    sets: list[str] = SET,
    max_retries: Optional[int] = MAX_RETRIES,
    dedupe_threshold: float = typer.Option(
        0.9,
        "--dedupe-threshold",
        envvar="BENCHSMITH_DEDUPE_THRESHOLD",
        help="Cosine above which a new API's description duplicates another's (in (0, 1])",
    ),
) -> None:
    """API synthesis: a domain -> sub-domain -> function context tree from seed documents; the generator proposes a new
    function per leaf, the refiner writes its spec; validated, then de-duplicated (names and sentence embeddings)
    into OUT/tools.json."""
    from benchsmith.construction.graphs.apis import export_tools

    check_number("--dedupe-threshold", dedupe_threshold, gt=0, le=1)
    run(
        "apis",
        source,
        out,
        model=model,
        base_url=base_url,
        roles=role,
        concurrency=concurrency,
        seed=seed,
        limit=limit,
        timeout=timeout,
        max_tokens=max_tokens,
        split=None,
        options=parse_sets(sets),
        temperature=temperature,
        max_retries=max_retries,
    )
    res = export_tools(out / "samples.jsonl", out / "tools.json", seeds=source, threshold=dedupe_threshold)
    typer.echo(
        f"  tools.json: {res['tools']} new APIs kept, {len(res['dropped'])} dropped as duplicates "
        f"(see {out / 'tools.dropped.jsonl'})"
    )


_graph_command(
    "special",
    "Special and awareness cases from accepted samples: incomplete (a required value removed), "
    "error_param (a wrong value), irrelevant, no_tool and cannot_complete requests; the generator rewrites "
    "the request, pure checks verify the rewrite.",
    "Samples JSONL (or a run/split folder) with queries and gold calls",
    {},
)
_graph_command(
    "expand",
    "Exemplar expansion: keep an exemplar's tool chain, change the scenario and values "
    "(generator), polish it (refiner); annotate the results with `construct chains`.",
    "Exemplar samples JSONL (or a split folder)",
    {},
)


@construct_app.command("backtranslate", cls=GraphCommand)
@user_errors
def construct_backtranslate(
    source: Path = typer.Argument(..., help="JSONL of {id, sql, evidence?} (NL2SQL pairs without a question)"),
    out: Path = OUT,
    model: str = MODEL,
    base_url: Optional[str] = BASE_URL,
    role: list[str] = ROLE,
    concurrency: int = CONCURRENCY,
    seed: int = SEED,
    limit: Optional[int] = LIMIT,
    timeout: float = TIMEOUT,
    max_tokens: int = MAX_TOKENS,
    temperature: float = TEMPERATURE,
    sets: list[str] = SET,
    max_retries: Optional[int] = MAX_RETRIES,
    database: Optional[Path] = typer.Option(
        None, "--db", envvar="BENCHSMITH_DB", help="SQLite database of the SQL (default: the embedded Chinook)"
    ),
) -> None:
    """SQL -> question: the SQL must run (and convert to tools); the generator writes the question, pure checks screen
    it (every literal stated, no SQL leaked), the refiner verifies it asks what the SQL computes. Writes OUT/pairs.jsonl
    for `benchsmith nl2api build`."""
    from benchsmith.construction.graphs.backtranslate import to_pairs

    options = parse_sets(sets)
    if database is not None:
        options["database"] = str(database)
    run(
        "backtranslate",
        source,
        out,
        model=model,
        base_url=base_url,
        roles=role,
        concurrency=concurrency,
        seed=seed,
        limit=limit,
        timeout=timeout,
        max_tokens=max_tokens,
        split=None,
        options=options,
        temperature=temperature,
        max_retries=max_retries,
    )
    n = to_pairs(out / "samples.jsonl", out / "pairs.jsonl")
    typer.echo(f"  pairs.jsonl: {n} question/SQL pairs")


@construct_app.command("check")
@user_errors
def construct_check(
    source: Path = typer.Argument(..., help="Samples JSONL to inspect"),
    out: Path = OUT,
    model: str = MODEL,
    base_url: Optional[str] = BASE_URL,
    role: list[str] = ROLE,
    concurrency: int = CONCURRENCY,
    timeout: float = TIMEOUT,
    split: Optional[Path] = SPLIT,
    max_retries: Optional[int] = MAX_RETRIES,
    checks: str = typer.Option(
        "",
        "--checks",
        envvar="BENCHSMITH_CHECKS",
        help="Comma-separated checks in order (default: all, model_vote last)",
    ),
    voter: list[str] = typer.Option(
        [],
        "--voter",
        envvar="BENCHSMITH_VOTERS",
        help="MODEL or MODEL@BASE_URL of one voter; repeat for k voters (default: one vote by the voter role's model)",
    ),
    vote: bool = typer.Option(True, "--vote/--no-vote", envvar="BENCHSMITH_VOTE", help="Ask voter models (model_vote)"),
    quorum: int = typer.Option(1, "--quorum", envvar="BENCHSMITH_VOTE_QUORUM", help="Readable votes needed (>= 1)"),
    dedupe: bool = typer.Option(
        True, "--dedupe/--no-dedupe", envvar="BENCHSMITH_DEDUPE", help="Drop near-duplicates (sentence embeddings)"
    ),
    threshold: float = typer.Option(
        0.92,
        "--dedupe-threshold",
        envvar="BENCHSMITH_DEDUPE_THRESHOLD",
        help="Cosine at or above which two samples are near-duplicates (in (0, 1])",
    ),
    require_env: bool = typer.Option(
        False,
        "--require-env",
        envvar="BENCHSMITH_REQUIRE_ENV",
        help="Reject samples whose tools cannot be re-executed (instead of skipping)",
    ),
) -> None:
    """Quality inspection: rule checks (docs, query clarity, signatures, references, dialogue consistency,
    executability), near-duplicate removal, then k voter models; rejected samples go to OUT/error_pool.jsonl with
    every reason, the rest to OUT/accepted.jsonl."""
    from rich.console import Console

    from benchsmith.construction import EnvContext, inspect_samples
    from benchsmith.construction.checks import CheckContext

    check_number("--quorum", quorum, ge=1)
    check_number("--dedupe-threshold", threshold, gt=0, le=1)
    check_run_options(out, concurrency, None, timeout, 96, 0.0, max_retries)
    names = [c.strip() for c in checks.split(",") if c.strip()] or None
    models = cli_role_models(model, base_url, role, timeout, 96, voter, max_retries=max_retries) if vote else None
    ctx = CheckContext(
        env=EnvContext(split=split), vote_quorum=quorum, near_dup_threshold=threshold, require_environment=require_env
    )
    s = inspect_samples(source, out, models=models, names=names, context=ctx, dedupe=dedupe, concurrency=concurrency)
    by = ", ".join(f"{k}={v}" for k, v in s["rejected_by_check"].items()) or "none"
    Console(soft_wrap=True).print(
        f"[bold]check[/] {out}: {s['total']} samples, {s['accepted']} accepted, {s['rejected']} to the error "
        f"pool (rejected by: {by}); {s['model_calls']} voter calls",
        highlight=False,
    )
    vote_run = s.get("vote") or {}
    check_finished(
        "construct check (model votes)",
        int(vote_run.get("unfinished") or 0),
        int(vote_run.get("items") or 0),
        out,
        list(vote_run.get("errors") or []),
    )
