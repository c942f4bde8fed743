"""The local model server process: llama.cpp's HTTP server (xllamacpp) kept alive until a signal.

Run as ``python -m benchsmith.models._private.serve_main --model-path PATH --model-name NAME --port N ...``.
With ``--detach`` it forks once, prints the server's pid and returns at once, the server
living on in a new session with its output in ``--log``; ``start_local_server`` uses that.
Once llama.cpp listens, the process writes the state file (``server.json`` in ``--state-dir``)
and removes it again on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable

# context per slot when none is recorded (state files of older servers); new servers are sized by
# sizing.plan_local_server from the measured prompts
DEFAULT_CTX_PER_SLOT = 16384
#: host-memory prompt cache (llama.cpp's --cache-ram, 8 GiB by default, which grew the server past
#: 3 GB): a few prompt states beside the slots' own, so requests that alternate on the slots (an
#: agent episode's assistant and simulated user, two trials at once) resume their own conversation
#: instead of evicting each other's (measured in docs/models.md)
PROMPT_CACHE_RAM_MIB = 128
#: checkpoints of the sliding-window cache per slot (llama.cpp's default is 32, each a few MB), taken
#: at least CHECKPOINT_MIN_STEP tokens apart (llama.cpp's default is 8,192, so a prompt of a few
#: thousand tokens kept one, near its end, and the next case could not resume from the end of the
#: tool list the two share; measured in docs/models.md)
CHECKPOINTS_PER_SLOT = 16
CHECKPOINT_MIN_STEP = 256
STATE_FILE = "server.json"


def build_params(
    model_path: str | Path,
    *,
    host: str,
    port: int,
    parallel: int,
    ctx_per_slot: int,
    threads: int,
    model_name: str = "gemma3-270m",
    chat_template: str = "gemma",
) -> Any:
    """xllamacpp ``CommonParams`` for a local model answering to ``model_name``: ``parallel`` slots of
    ``ctx_per_slot`` tokens each (llama.cpp splits ``n_ctx`` evenly between slots), the chat template
    (``gemma``: benchsmith's Gemma template, for a file that carries none; ``gguf``: the file's
    own), prompt-prefix reuse across requests, a small host-memory prompt cache, no web UI."""
    import xllamacpp

    from benchsmith.models._private.template import GEMMA_CHAT_TEMPLATE

    if chat_template not in ("gemma", "gguf"):
        raise ValueError(f"chat_template must be gemma or gguf, not {chat_template!r}")
    p = xllamacpp.CommonParams()
    p.model.path = str(model_path)
    p.model_alias = {model_name}
    p.hostnames = [host]
    p.port = port
    p.n_parallel = parallel
    p.n_ctx = parallel * ctx_per_slot
    # prompt-prefix reuse: a slot keeps its last prompt's KV cache (cache_prompt) and a request goes
    # to the slot whose cached prompt it shares most with. Gemma 3 mixes sliding-window layers in,
    # whose cache holds only the last window: to resume from the middle of its last prompt (a reply
    # re-read as a message may tokenize differently) a slot restores a checkpoint of that window.
    # Checkpoints every few hundred tokens let a case resume from the end of the tool text it shares
    # with the last one; a full-size window cache (swa_full) reuses about as much but took 300 MB
    # more (over 1 GB in all at 14k tokens per slot; measured, docs/models.md)
    p.cache_prompt = True
    p.swa_full = False
    p.n_ctx_checkpoints = CHECKPOINTS_PER_SLOT
    p.checkpoint_min_step = CHECKPOINT_MIN_STEP
    p.cache_ram_mib = PROMPT_CACHE_RAM_MIB
    p.cpuparams.n_threads = threads
    p.cpuparams_batch.n_threads = threads
    p.use_jinja = True
    if chat_template == "gemma":
        p.chat_template = GEMMA_CHAT_TEMPLATE  # else "": llama.cpp takes the template the file carries
    p.ui = False
    return p


def run(
    *,
    model_path: str,
    host: str,
    port: int,
    parallel: int,
    ctx_per_slot: int,
    threads: int,
    state_dir: str | Path,
    instance: str,
    log_path: str | None = None,
    on_ready: Callable[[], None] | None = None,
    model_name: str = "gemma3-270m",
    chat_template: str = "gemma",
) -> int:
    """Serve until SIGTERM/SIGINT; write the state file once listening (then call ``on_ready``),
    remove it on the way out. Returns 0, or 3 when llama.cpp could not start."""
    import signal
    import threading

    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:  # noqa: ARG001
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        return _serve(
            model_path,
            model_name,
            chat_template,
            host,
            port,
            parallel,
            ctx_per_slot,
            threads,
            state_dir,
            instance,
            log_path,
            on_ready,
            stop,
        )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(
    model_path: str,
    model_name: str,
    chat_template: str,
    host: str,
    port: int,
    parallel: int,
    ctx_per_slot: int,
    threads: int,
    state_dir: str | Path,
    instance: str,
    log_path: str | None,
    on_ready: Callable[[], None] | None,
    stop: Any,
) -> int:
    from datetime import datetime, timezone

    import xllamacpp

    from benchsmith.schemas import write_json

    params = build_params(
        model_path,
        host=host,
        port=port,
        parallel=parallel,
        ctx_per_slot=ctx_per_slot,
        threads=threads,
        model_name=model_name,
        chat_template=chat_template,
    )
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as exc:
        print(f"benchsmith: the local model server did not start on {host}:{port}: {exc}", file=sys.stderr, flush=True)
        return 3
    state_path = Path(state_dir) / STATE_FILE
    url_host = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
    write_json(
        state_path,
        {
            "pid": os.getpid(),
            "instance": instance,
            "host": host,
            "port": port,
            "url": f"http://{url_host}:{port}",
            "model": model_name,
            "model_path": str(model_path),
            "parallel": parallel,
            "ctx_per_slot": ctx_per_slot,
            "threads": threads,
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "log_path": log_path,
        },
    )
    print(
        f"benchsmith: local model server ({model_name}) listening on http://{url_host}:{port} (pid {os.getpid()})",
        file=sys.stderr,
        flush=True,
    )
    try:
        if on_ready is not None:
            on_ready()
        while not stop.wait(1.0):
            pass
    finally:
        _remove_own_state(state_path, instance)
        del server
    return 0


def _remove_own_state(state_path: Path, instance: str) -> None:
    import json

    try:
        if json.loads(state_path.read_text(encoding="utf-8")).get("instance") == instance:
            state_path.unlink(missing_ok=True)
    except (OSError, ValueError):
        pass


def _detach(log_path: str) -> None:
    """Fork; the parent prints the child's pid and exits, the child starts a new session with its
    output going to ``log_path``."""
    pid = os.fork()
    if pid:
        print(pid, flush=True)
        os._exit(0)
    os.setsid()
    os.chdir("/")  # do not keep the caller's working directory busy (paths given are absolute)
    fd_in = os.open(os.devnull, os.O_RDONLY)
    fd_log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd_in, 0)
    os.dup2(fd_log, 1)
    os.dup2(fd_log, 2)
    os.close(fd_in)
    os.close(fd_log)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchsmith.models._private.serve_main")
    ap.add_argument("--model-path", required=True)
    ap.add_argument("--model-name", default="gemma3-270m")
    ap.add_argument("--chat-template", choices=("gemma", "gguf"), default="gemma")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--ctx-per-slot", type=int, default=DEFAULT_CTX_PER_SLOT)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--instance", required=True)
    ap.add_argument("--log", default=None)
    ap.add_argument("--detach", action="store_true")
    args = ap.parse_args(argv)
    if args.detach:
        if not args.log:
            ap.error("--detach needs --log")
        _detach(args.log)
    return run(
        model_path=args.model_path,
        model_name=args.model_name,
        chat_template=args.chat_template,
        host=args.host,
        port=args.port,
        parallel=args.parallel,
        ctx_per_slot=args.ctx_per_slot,
        threads=args.threads,
        state_dir=args.state_dir,
        instance=args.instance,
        log_path=args.log,
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
