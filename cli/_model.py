"""``benchsmith model serve|stop|status``: the local model servers (one per local model)."""
# annotations are real objects, not strings (see cli/__init__.py)

from typing import Optional

import typer

from . import check_number, check_port, user_errors  # cli/__init__ defines them before importing this module

model_app = typer.Typer(
    rich_markup_mode=None,
    help="The local models' servers (xllamacpp on 127.0.0.1; one per model; default model Gemma 3 270M).",
    no_args_is_help=True,
)

LOCAL_MODEL_HELP = (
    "Local model: local (the default local model), local:NAME or NAME with NAME gemma3-270m, "
    "qwen2.5-coder-0.5b or qwen2.5-coder-1.5b, or the stem of the BENCHSMITH_LOCAL_MODEL_PATH file "
    "(docs/models.md)"
)


def running_server_pids() -> set[int]:
    """The pids of the local model servers running now (to tell later which ones a command started)."""
    from benchsmith.models import local_servers

    return {info.pid for info in local_servers()}


def note_started_servers(before: set[int]) -> None:
    """After a command that used a local model: the local model servers it started (not running in
    ``before``), which it leaves running for the next command, and how to stop them, on stderr."""
    from benchsmith.models import local_servers

    for info in local_servers():
        if info.pid not in before:
            typer.echo(
                f"the local model server ({info.model}) is still running at {info.url} (pid {info.pid}); "
                f"later commands reuse it. Stop it with `benchsmith model stop`",
                err=True,
            )


@model_app.command("serve")
@user_errors
def model_serve(
    port: Optional[int] = typer.Option(
        None, "--port", envvar="BENCHSMITH_MODEL_PORT", help="Port (default: a free one)"
    ),
    host: str = typer.Option(
        "127.0.0.1", "--host", envvar="BENCHSMITH_MODEL_HOST", help="Bind address (loopback by default)"
    ),
    parallel: Optional[int] = typer.Option(
        None,
        "--parallel",
        envvar="BENCHSMITH_MODEL_PARALLEL",
        help="Requests served at once (llama.cpp slots; default: one per core, at most 4)",
    ),
    ctx_per_slot: Optional[int] = typer.Option(
        None,
        "--ctx-per-slot",
        envvar="BENCHSMITH_MODEL_CTX_PER_SLOT",
        help="Context tokens per slot (n_ctx = parallel x this; default: the "
        "longest measured prompt of the default tasks plus a reply)",
    ),
    threads: Optional[int] = typer.Option(
        None, "--threads", envvar="BENCHSMITH_MODEL_THREADS", help="CPU threads (default: every CPU)"
    ),
    wait: float = typer.Option(
        60.0, "--wait", envvar="BENCHSMITH_MODEL_WAIT", help="Seconds to wait for the server to become healthy (> 0)"
    ),
    foreground: bool = typer.Option(
        False,
        "--foreground",
        envvar="BENCHSMITH_MODEL_FOREGROUND",
        help="Run in this process until Ctrl-C instead of in the background",
    ),
    model: str = typer.Option("local", "--model", envvar="BENCHSMITH_LOCAL_MODEL", help=LOCAL_MODEL_HELP),
) -> None:
    """Start a local model's server (OpenAI-compatible, /v1) and print its base URL; reuses a running one. A model
    whose weights cannot be fetched falls back to Gemma 3 270M (one warning line)."""
    if port is not None:
        check_port(port)
    # --parallel, --ctx-per-slot and --threads: the server's own settings check refuses them before it starts
    check_number("--wait", wait, gt=0, example=60)
    from benchsmith.models import local_server_status, run_local_server, start_local_server

    if foreground:

        def ready(info) -> None:  # noqa: ANN001 - a ServerInfo
            typer.echo(f"{info.base_url}  (pid {info.pid}; Ctrl-C stops it)")

        run_local_server(
            port=port,
            parallel=parallel,
            ctx_per_slot=ctx_per_slot,
            threads=threads,
            host=host,
            on_ready=ready,
            model=model,
        )
        return
    before = local_server_status(model)  # looks only: nothing is fetched before the settings are checked
    info = start_local_server(
        port=port, parallel=parallel, ctx_per_slot=ctx_per_slot, threads=threads, wait=wait, host=host, model=model
    )
    typer.echo(info.base_url)
    if before is not None and before.pid == info.pid:
        wanted = {"parallel": parallel, "ctx_per_slot": ctx_per_slot, "threads": threads, "host": host}
        differ = {k: getattr(info, k) for k, v in wanted.items() if v is not None and getattr(info, k) != v}
        note = (
            f"; running with {', '.join(f'{k}={v}' for k, v in differ.items())} -- `benchsmith model stop` first "
            f"to change that"
            if differ
            else ""
        )
        typer.echo(f"already running (pid {info.pid}){note}", err=True)


@model_app.command("stop")
@user_errors
def model_stop(
    model: Optional[str] = typer.Option(
        None, "--model", envvar="BENCHSMITH_MODEL_STOP", help=LOCAL_MODEL_HELP + "; default: every local model's server"
    ),
) -> None:
    """Stop the local model servers, or one model's (no error when none runs)."""
    from benchsmith.models import stop_local_server, stop_local_servers

    stopped = stop_local_servers() if model is None else [i for i in [stop_local_server(model=model)] if i is not None]
    for info in stopped:
        typer.echo(f"stopped the local model server of {info.model} (pid {info.pid}, {info.url})")
    if not stopped:
        typer.echo("no local model server running")


@model_app.command("status")
@user_errors
def model_status(
    model: str = typer.Option("local", "--model", envvar="BENCHSMITH_LOCAL_MODEL", help=LOCAL_MODEL_HELP),
) -> None:
    """Print a local model's server state as JSON ({"running": false, ...} and "not running" on stderr
    when none runs, naming the other local models' servers that run). Exit code 0 either way: a server
    that is not running is an answer, not a failure."""
    import json

    from benchsmith.models import local_model, local_server_status, local_servers, server_dir

    folder = server_dir(model)  # a name that is no local model: one red line
    info = local_server_status(model)
    if info is None:
        typer.echo(json.dumps({"running": False, "model": local_model(model).name, "state_dir": str(folder)}))
        others = ", ".join(f"{i.model} ({i.base_url})" for i in local_servers())
        typer.echo("not running" + (f"; running: {others}" if others else ""), err=True)
        return
    typer.echo(json.dumps({"running": True, **info.to_dict()}, ensure_ascii=False))
