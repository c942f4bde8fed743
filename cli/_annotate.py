"""``benchsmith annotate server start|stop|status``: a local Label Studio server (127.0.0.1, its own venv)."""
# annotations are real objects, not strings (see cli/__init__.py)

from pathlib import Path
from typing import Optional

import typer

from . import check_number, check_port, user_errors  # cli/__init__ defines them before importing this module

annotate_app = typer.Typer(rich_markup_mode=None, help="Expert review in Label Studio.", no_args_is_help=True)
server_app = typer.Typer(
    rich_markup_mode=None,
    help="A local Label Studio server on 127.0.0.1 (installed into its own venv on first use). "
    "An existing server works too: set LABEL_STUDIO_URL and LABEL_STUDIO_API_KEY.",
    no_args_is_help=True,
)
annotate_app.add_typer(server_app, name="server")

DATA_DIR_HELP = "Label Studio's data dir (default ./.benchsmith/label-studio; its state file sits next to it)"


def _describe(info) -> dict:  # noqa: ANN001 - a LabelStudioInfo
    """What may be shown of a running server: where the token is, never the token."""
    from benchsmith.annotation import ENV_API_KEY, ENV_URL, state_path

    return {
        "running": True,
        **info.to_dict(),
        "state_file": str(state_path(Path(info.data_dir))),
        "token_in": f'{info.credentials_file} (key "token")',
        "env_for_clients": [ENV_URL, ENV_API_KEY],
    }


@server_app.command("start")
@user_errors
def server_start(
    port: Optional[int] = typer.Option(
        None, "--port", envvar="BENCHSMITH_LS_PORT", help="Port, 1..65535 (default: a free one)"
    ),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", envvar="BENCHSMITH_LS_DATA_DIR", help=DATA_DIR_HELP),
    wait: float = typer.Option(
        180.0, "--wait", envvar="BENCHSMITH_LS_WAIT", help="Seconds (> 0) to wait for the server to become healthy"
    ),
) -> None:
    """Start Label Studio in the background and print its URL; reuses the one running on the data dir."""
    if port is not None:
        check_port(port)
    check_number("--wait", wait, gt=0, example=180)
    from benchsmith.annotation import label_studio_status, start_label_studio

    def echo(msg: str) -> None:
        typer.echo(msg, err=True)

    before = label_studio_status(data_dir)
    info = start_label_studio(port=port, data_dir=data_dir, wait=wait, echo=echo)
    typer.echo(info.url)
    if before is not None and before.pid == info.pid:
        typer.echo(f"already running (pid {info.pid}, data dir {info.data_dir})", err=True)
    else:
        typer.echo(
            f"started (pid {info.pid}) in {info.start_seconds:.1f} s; data dir {info.data_dir}; log {info.log_path}",
            err=True,
        )
    typer.echo(
        f"admin user and API token: {info.credentials_file} (clients: LABEL_STUDIO_URL + LABEL_STUDIO_API_KEY)",
        err=True,
    )


@server_app.command("stop")
@user_errors
def server_stop(
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", envvar="BENCHSMITH_LS_DATA_DIR", help=DATA_DIR_HELP),
) -> None:
    """Stop the local Label Studio server (no error when none runs; the data dir is kept)."""
    from benchsmith.annotation import stop_label_studio

    info = stop_label_studio(data_dir)
    typer.echo(f"stopped Label Studio (pid {info.pid}, {info.url})" if info else "no Label Studio server running")


@server_app.command("status")
@user_errors
def server_status(
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", envvar="BENCHSMITH_LS_DATA_DIR", help=DATA_DIR_HELP),
) -> None:
    """Print the local server's state as JSON (URL, pid, data dir, where the token is; "status": "running" or
    "not running"). Exit 0 either way: a server that is not running is an answer, not a failure."""
    import json

    from benchsmith.annotation import data_dir_path, label_studio_status, state_path

    info = label_studio_status(data_dir)
    if info is None:
        folder = data_dir_path(data_dir)
        typer.echo(
            json.dumps(
                {
                    "running": False,
                    "status": "not running",
                    "data_dir": str(folder),
                    "state_file": str(state_path(folder)),
                }
            )
        )
        return
    typer.echo(json.dumps({"status": "running", **_describe(info)}, ensure_ascii=False))


WORKSPACE = typer.Option(
    Path(".benchsmith/annotation"),
    "--workspace",
    envvar="BENCHSMITH_ANNOTATION_WORKSPACE",
    help="The review workspace (its state: annotation.sqlite)",
)
LS_DATA_DIR = typer.Option(None, "--data-dir", envvar="BENCHSMITH_LS_DATA_DIR", help=DATA_DIR_HELP)


def _server_errors(fn):  # noqa: ANN001, ANN202
    """Label Studio going down mid-sync is one red line too (exit 3); what was synced is kept."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        from benchsmith.annotation import LabelStudioDown

        try:
            return fn(*args, **kwargs)
        except LabelStudioDown as exc:
            from rich.console import Console

            Console(stderr=True).print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(3) from None

    return wrapper


def _client(data_dir: Optional[Path]):  # noqa: ANN202
    from benchsmith.annotation import LabelStudio, resolve_label_studio

    access = resolve_label_studio(data_dir)
    return LabelStudio(access.url, access.token)


def _open(workspace: Path, data_dir: Optional[Path]):  # noqa: ANN202
    from benchsmith.annotation import Workspace

    return Workspace(workspace), _client(data_dir)


@annotate_app.command("push")
@user_errors
@_server_errors
def annotate_push(
    stage: str = typer.Option("review", "--stage", envvar="BENCHSMITH_ANNOTATION_STAGE", help="review | adjudicate"),
    split: Optional[Path] = typer.Option(
        None,
        "--split",
        envvar="BENCHSMITH_SPLIT",
        help="Split folder or samples JSONL to add to the review (a workspace may review several; later pushes without it reuse them)",
    ),
    limit: Optional[int] = typer.Option(
        None, "--limit", envvar="BENCHSMITH_LIMIT", help="At most N (>= 1) samples of the split"
    ),
    max_rounds: int = typer.Option(
        3, "--max-rounds", envvar="BENCHSMITH_MAX_ROUNDS", help="Review rounds at most (>= 1)"
    ),
    prescreen: bool = typer.Option(
        False,
        "--prescreen/--no-prescreen",
        envvar="BENCHSMITH_PRESCREEN",
        help="Let voter models pre-screen the items first (their votes pre-annotate the tasks)",
    ),
    model: str = typer.Option(
        "local", "--model", envvar="BENCHSMITH_MODEL", help="Pre-screen model; 'local' = the local model"
    ),
    base_url: Optional[str] = typer.Option(
        None, "--base-url", envvar="BENCHSMITH_BASE_URL", help="Pre-screen endpoint"
    ),
    voter: list[str] = typer.Option(
        [], "--voter", envvar="BENCHSMITH_VOTERS", help="MODEL or MODEL@BASE_URL; repeat for k voters"
    ),
    repair: bool = typer.Option(
        False,
        "--repair",
        envvar="BENCHSMITH_REPAIR",
        help="First remove duplicate tasks from the workspace's projects (their annotations "
        "are kept on the remaining task), then push",
    ),
    workspace: Path = WORKSPACE,
    data_dir: Optional[Path] = LS_DATA_DIR,
) -> None:
    """Create the stage's Label Studio projects and import the items waiting in it (idempotent: re-running, or an
    import whose reply was lost, never duplicates a task)."""
    check_number("--limit", limit, ge=1, example=100)
    check_number("--max-rounds", max_rounds, ge=1, example=3)
    ws, ls = _open(workspace, data_dir)
    if repair:
        fixed = ws.repair(ls)
        where = ", ".join(f"{k}: {v}" for k, v in fixed.projects.items()) or "none found"
        typer.echo(
            f"repair: {fixed.removed} duplicate tasks removed ({where}); {fixed.carried} annotations carried "
            f"over to the kept tasks; {fixed.rerecorded} items now recorded with another task"
        )
    if split is not None:
        n = ws.load(split, limit)
        typer.echo(f"{n} new items registered from {split}")
    if prescreen and stage == "review":
        from ._construct import cli_role_models

        r = ws.prescreen(cli_role_models(model, base_url, [], 120.0, 96, voter))
        typer.echo(f"pre-screen: {r['voted']} items voted on ({r['model_calls']} model calls)")
    ws.store.set_meta("max_rounds", max_rounds)
    r = ws.push(ls, stage, max_rounds=max_rounds)
    typer.echo(
        f"{stage}: {r.pushed} tasks pushed, {r.already_there} found already there; projects "
        + ", ".join(f"{k}={v}" for k, v in r.projects.items())
    )


@annotate_app.command("pull")
@user_errors
@_server_errors
def annotate_pull(workspace: Path = WORKSPACE, data_dir: Optional[Path] = LS_DATA_DIR) -> None:
    """Fetch the annotations of the open tasks (only those), store them and advance the items by the protocol."""
    from benchsmith.annotation import counts_text

    ws, ls = _open(workspace, data_dir)
    r = ws.pull(ls)
    typer.echo(
        f"{r['new_annotations']} new and {r['changed_annotations']} changed annotations; "
        f"items moved on: {counts_text(r['moved'])}"
    )


@annotate_app.command("simulate")
@user_errors
@_server_errors
def annotate_simulate(workspace: Path = WORKSPACE, data_dir: Optional[Path] = LS_DATA_DIR) -> None:
    """Post the missing annotations of every open task as simulated reviewers (distinct users) whose verdicts
    come from the automated checks; the datasheet marks them as supplied automatically."""
    from benchsmith.annotation import checks_policy, counts_text, simulate

    ws, ls = _open(workspace, data_dir)
    posted = simulate(ws, ls, checks_policy(ws.check_context()))
    typer.echo(f"simulated annotations posted: {counts_text(posted)}")


@annotate_app.command("status")
@user_errors
def annotate_status(workspace: Path = WORKSPACE, data_dir: Optional[Path] = LS_DATA_DIR) -> None:
    """Items per status and round, the Label Studio projects and the duplicate tasks found in them (JSON); a line
    on stderr names the projects holding duplicates (`annotate push --repair` removes them)."""
    import json

    from benchsmith.annotation import Workspace
    from benchsmith.schemas import RuntimeFault, UserError

    if not (workspace / "annotation.sqlite").is_file():
        raise UserError(
            f"{workspace} is not a review workspace", fix="push a split first: benchsmith annotate push --split DIR"
        )
    ws = Workspace(workspace)
    status, note = {**ws.status(), "duplicates": []}, None
    if status["projects"]:
        try:
            status = ws.status(_client(data_dir))
        except (UserError, RuntimeFault) as exc:  # the workspace's own counts still answer
            status["duplicates"] = None
            note = f"duplicate tasks not checked: {exc}"
        if status["duplicates"]:
            where = "; ".join(
                f"{d['project']} (project {d['project_id']}): {d['extra_tasks']} extra for {d['items']} items"
                for d in status["duplicates"]
            )
            note = (
                f"duplicate tasks in Label Studio: {where}; "
                "`benchsmith annotate push --repair` removes them and keeps their annotations"
            )
    typer.echo(json.dumps(status, indent=2))
    if note:
        typer.echo(" | ".join(note.splitlines()), err=True)


@annotate_app.command("finalize")
@user_errors
def annotate_finalize(
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_OUT", help="The finalized split folder"),
    name: Optional[str] = typer.Option(
        None, "--name", envvar="BENCHSMITH_SPLIT_NAME", help="Split name in the manifest"
    ),
    workspace: Path = WORKSPACE,
) -> None:
    """Freeze the accepted items into a versioned split (samples, manifest with content hashes, the source split's
    tools and database) with a datasheet (counts per stage, Cohen's kappa per round, reasons, reviewers)."""
    from benchsmith.annotation import Workspace, agreement_text, counts_text, finalize

    r = finalize(Workspace(workspace), out, name=name)
    sheet = r["datasheet"]
    typer.echo(
        f"{out}: version {r['version']}, {r['accepted']} samples accepted; items {counts_text(sheet['final'])}; "
        f"{agreement_text(sheet['agreement'])}"
    )
