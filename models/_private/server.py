"""Lifecycle of the local model servers: start (detached), reuse, status, stop, foreground run.

One server per local model, each with its own state folder (``<state dir>/<model name>``: state
file, lock, log), so a server running one model is never reused for another and two models can run
side by side (an evaluated model and a simulated user, say). ``model`` arguments take what
:func:`benchsmith.models.resolve_local_model` takes (default: the default local model).
"""

from __future__ import annotations

import logging
import secrets
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchsmith.models import procs
from benchsmith.models._private.local import LocalModel, ensure_local_model, named_local_model, resolve_local_model
from benchsmith.models._private.paths import state_dir
from benchsmith.models._private.serve_main import DEFAULT_CTX_PER_SLOT, STATE_FILE
from benchsmith.models._private.sizing import plan_local_server
from benchsmith.schemas import RuntimeFault, UserError

log = logging.getLogger("benchsmith.models")

LOCK_FILE = "lock"
LOG_FILE = "server.log"


@dataclass(frozen=True)
class ServerInfo:
    """A running local model server, as recorded in its state file."""

    pid: int
    port: int
    url: str
    """``http://127.0.0.1:PORT`` (no ``/v1``)."""
    model: str
    model_path: str
    started_at: str
    log_path: str | None = None
    host: str = "127.0.0.1"
    parallel: int = 4
    ctx_per_slot: int = DEFAULT_CTX_PER_SLOT
    threads: int = 1

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "base_url": self.base_url}


def _server(folder: Path) -> procs.ManagedServer[ServerInfo]:
    """The model server whose state file and lock are in ``folder`` (its state file is written by
    the server process itself, ``serve_main``)."""
    return procs.ManagedServer(
        "local model server",
        folder / STATE_FILE,
        folder / LOCK_FILE,
        ServerInfo,
        procs.looks_like_our_server,
        procs.healthy,
        logger="benchsmith.models",
    )


def server_dir(model: str | LocalModel | None = None) -> Path:
    """The state folder of ``model``'s server: ``<state dir>/<model name>``."""
    return state_dir() / named_local_model(model).name


def local_server_status(model: str | LocalModel | None = None) -> ServerInfo | None:
    """The running, healthy server of ``model`` (default: the default local model), or None."""
    return _server(server_dir(model)).status()


def _state_folders() -> list[Path]:
    """The folders holding a server state file: one per model, and the state dir itself (where
    benchsmith kept the one server's state before there was a server per model)."""
    root = state_dir()
    if not root.is_dir():
        return []
    return [p.parent for p in (root / STATE_FILE, *sorted(root.glob(f"*/{STATE_FILE}"))) if p.is_file()]


def local_servers() -> list[ServerInfo]:
    """Every running, healthy local model server (one per model), by model name."""
    return [info for info in (_server(folder).status() for folder in _state_folders()) if info is not None]


def stop_local_server(grace: float = 10.0, model: str | LocalModel | None = None) -> ServerInfo | None:
    """Stop ``model``'s server (default: the default local model's; SIGTERM, SIGKILL after ``grace``
    seconds) and remove its state file.

    Returns what was stopped, or None when no server was running (not an error)."""
    return _server(server_dir(model)).stop(grace)


def stop_local_servers(grace: float = 10.0) -> list[ServerInfo]:
    """Stop every local model server (also one recorded by an older benchsmith directly in the
    state dir); what was stopped."""
    stopped = [_server(folder).stop(grace) for folder in _state_folders()]
    return [info for info in stopped if info is not None]


def _sized(
    parallel: int | None, ctx_per_slot: int | None, threads: int | None, longest_prompt: int | None = None
) -> tuple[int, int, int]:
    """Slots, context per slot and threads: what is given, the rest planned for this machine (and
    for ``longest_prompt`` tokens, default the longest measured)."""
    threads = threads or procs.default_threads()
    plan = plan_local_server(threads, longest_prompt)
    return (
        plan.parallel if parallel is None else parallel,
        plan.ctx_per_slot if ctx_per_slot is None else ctx_per_slot,
        threads,
    )


def _check_settings(
    port: int | None, host: str, parallel: int | None, ctx_per_slot: int | None, threads: int | None
) -> None:
    if port is not None and not 0 < port < 65536:
        raise UserError(f"port {port} is out of range", fix="use 1-65535 or leave the port out (a free one is picked)")
    if parallel is not None and parallel < 1:
        raise UserError(f"parallel={parallel}: the server needs at least one slot", fix="use --parallel 1 or more")
    if ctx_per_slot is not None and ctx_per_slot < 256:
        raise UserError(
            f"ctx_per_slot={ctx_per_slot} is too small",
            fix="use at least 256 tokens per slot (or leave it out: sized from the measured prompts)",
        )
    if threads is not None and threads < 1:
        raise UserError(f"threads={threads} must be at least 1", fix="leave it out to use every CPU")
    if not host:
        raise UserError("empty host", fix="use 127.0.0.1 (the default)")


def _reuse(info: ServerInfo, port: int | None, model_path: str | None) -> ServerInfo:
    if model_path is not None and info.model_path != model_path:
        raise UserError(
            f"the local model server for {info.model} at {info.url} (pid {info.pid}) runs {info.model_path}, "
            f"not {model_path}",
            fix=f"stop it first with `benchsmith model stop --model local:{info.model}`",
        )
    if port is not None and port != info.port:
        raise UserError(
            f"a local model server is already running at {info.url} (pid {info.pid}), not on port {port}",
            fix="stop it first with `benchsmith model stop`, or leave the port out to reuse it",
        )
    return info


def start_local_server(
    port: int | None = None,
    parallel: int | None = None,
    ctx_per_slot: int | None = None,
    threads: int | None = None,
    wait: float = 60.0,
    host: str = "127.0.0.1",
    model: str | LocalModel | None = None,
    longest_prompt: int | None = None,
) -> ServerInfo:
    """Start the server of ``model`` (default: the default local model; one whose weights cannot
    be had falls back to Gemma, see :func:`resolve_local_model`) in the background, or reuse the
    healthy one already running for it.

    The server (``python -m benchsmith.models._private.serve_main``) runs detached in its own
    session with ``parallel`` slots of ``ctx_per_slot`` tokens and ``threads`` CPU threads (default:
    every CPU; slots and context default to :func:`plan_local_server`'s plan for those threads and
    ``longest_prompt`` tokens, by default the longest prompt measured),
    bound to ``host`` (loopback by default) on ``port`` (default: a free one). Its state file and
    log live in the model's folder under ``$BENCHSMITH_MODEL_STATE_DIR`` (default
    ``~/.cache/benchsmith/local-model/<model name>``). Waits up to ``wait`` seconds for ``GET /health``.
    """
    _check_settings(port, host, parallel, ctx_per_slot, threads)
    parallel, ctx_per_slot, threads = _sized(parallel, ctx_per_slot, threads, longest_prompt)
    chosen = resolve_local_model(model)
    folder = server_dir(chosen)
    folder.mkdir(parents=True, exist_ok=True)
    server = _server(folder)
    with server.claimed(restart_grace=5.0) as running:
        if running is not None:
            return _reuse(running, port, chosen.path)
        return _launch(server, chosen, folder, port, parallel, ctx_per_slot, threads, wait, host)


def _launch(
    server: procs.ManagedServer[ServerInfo],
    model: LocalModel,
    folder: Path,
    port: int | None,
    parallel: int,
    ctx_per_slot: int,
    threads: int,
    wait: float,
    host: str,
) -> ServerInfo:
    if port is not None and not procs.port_is_free(host, port):
        raise UserError(f"port {port} on {host} is already in use", fix="choose another port or leave it out")
    model_path = Path(ensure_local_model(model)).absolute()
    port = port or procs.free_port(host)
    instance = secrets.token_hex(8)
    log_path = folder / LOG_FILE
    log_path.write_text("")
    cmd = [
        sys.executable,
        "-m",
        "benchsmith.models._private.serve_main",
        "--detach",
        "--log",
        str(log_path),
        "--model-path",
        str(model_path),
        "--model-name",
        model.name,
        "--chat-template",
        model.chat_template,
        "--host",
        host,
        "--port",
        str(port),
        "--parallel",
        str(parallel),
        "--ctx-per-slot",
        str(ctx_per_slot),
        "--threads",
        str(threads),
        "--state-dir",
        str(folder),
        "--instance",
        instance,
    ]
    t0 = time.monotonic()
    try:
        launcher = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        pid = int(launcher.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        detail = locals().get("launcher")
        err = detail.stderr.strip()[-2000:] if detail is not None else ""
        raise RuntimeFault(f"could not launch the local model server ({exc}); {err}") from exc
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"
    up: list[ServerInfo] = []

    def ready() -> bool:
        info = server.read()
        if info is not None and info.pid == pid and procs.healthy(url):
            up.append(info)
            return True
        return False

    procs.wait_until_up(
        pid,
        ready,
        what="the local model server",
        wait=wait,
        log_path=log_path,
        t0=t0,
        cleanup=server.forget,
    )
    log.info("local model server up at %s (pid %s) in %.1f s", url, pid, time.monotonic() - t0)
    return up[-1]


def ensure_local_server(model: str | LocalModel | None = None) -> str:
    """The base URL (``http://127.0.0.1:PORT/v1``) of ``model``'s server (default: the default local
    model's), starting it if needed."""
    chosen = resolve_local_model(model)
    info = local_server_status(chosen)
    if info is not None and (chosen.path is None or info.model_path == chosen.path):
        return info.base_url
    return start_local_server(model=chosen).base_url


def run_local_server(
    port: int | None = None,
    parallel: int | None = None,
    ctx_per_slot: int | None = None,
    threads: int | None = None,
    host: str = "127.0.0.1",
    on_ready: Any = None,
    model: str | LocalModel | None = None,
) -> int:
    """Run ``model``'s server (default: the default local model's) in this process until SIGINT/SIGTERM
    (``benchsmith model serve --foreground``).

    It records itself in the state file like a background server, so ``status``/``stop`` and
    ``ensure_local_server`` in other processes see it. ``on_ready(info)`` is called once it listens.
    """
    from benchsmith.models._private import serve_main

    _check_settings(port, host, parallel, ctx_per_slot, threads)
    parallel, ctx_per_slot, threads = _sized(parallel, ctx_per_slot, threads)
    chosen = resolve_local_model(model)
    folder = server_dir(chosen)
    folder.mkdir(parents=True, exist_ok=True)
    server = _server(folder)
    lock = procs.file_lock(server.lock_file)
    lock.__enter__()
    released = False

    def ready() -> None:
        nonlocal released
        if not released:
            lock.__exit__(None, None, None)
            released = True
        info = server.read()
        if on_ready is not None and info is not None:
            on_ready(info)

    try:
        running = server.status()
        if running is not None:
            raise UserError(
                f"a local model server is already running at {running.url} (pid {running.pid})",
                fix="use it, or stop it first with `benchsmith model stop`",
            )
        if port is not None and not procs.port_is_free(host, port):
            raise UserError(f"port {port} on {host} is already in use", fix="choose another port or leave it out")
        model_path = ensure_local_model(chosen)
        rc = serve_main.run(
            model_path=str(model_path),
            model_name=chosen.name,
            chat_template=chosen.chat_template,
            host=host,
            port=port or procs.free_port(host),
            parallel=parallel,
            ctx_per_slot=ctx_per_slot,
            threads=threads,
            state_dir=folder,
            instance=secrets.token_hex(8),
            on_ready=ready,
        )
    finally:
        if not released:
            lock.__exit__(None, None, None)
    if rc:
        raise RuntimeFault("the local model server did not start (see the messages above)")
    return rc
