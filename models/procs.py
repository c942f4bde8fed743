"""Process and HTTP helpers shared by the local servers (the model server and Label Studio): liveness,
identity, health, free ports, a file lock."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")


def pid_alive(pid: int) -> bool:
    """True if ``pid`` runs (a zombie, or a child of ours that exited, counts as gone)."""
    if pid <= 0:
        return False
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


def command_line(pid: int) -> str | None:
    """``pid``'s command line (arguments joined by spaces); None when it cannot be read."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None


def looks_like_our_server(pid: int) -> bool | None:
    """Whether ``pid``'s command line is a benchsmith model server; None when it cannot be read."""
    cmd = command_line(pid)
    if cmd is None:
        return None
    return "serve_main" in cmd or ("benchsmith" in cmd and "serve" in cmd)


def is_ours(pid: int, looks: Callable[[int], bool | None], is_healthy: Callable[[], bool]) -> bool:
    """The recorded ``pid`` runs and is the server we started: its command line says so
    (``looks``), or, when that cannot be read, the server answers (``is_healthy``)."""
    if not pid_alive(pid):
        return False
    verdict = looks(pid)
    return verdict if verdict is not None else is_healthy()


def terminate(pid: int, grace: float, what: str) -> None:
    """SIGTERM ``pid`` (its whole process group when it leads one), SIGKILL it after ``grace``
    seconds, and wait up to 5 s more for it to go."""
    import logging
    import signal
    import time

    def send(sig: int) -> bool:
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
            return True
        except ProcessLookupError:
            return False

    if not send(signal.SIGTERM):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    logging.getLogger("benchsmith").warning("%s pid %s ignored SIGTERM for %.0f s; killing it", what, pid, grace)
    send(signal.SIGKILL)
    for _ in range(100):
        if not pid_alive(pid):
            return
        time.sleep(0.05)


def healthy(url: str, timeout: float = 2.0) -> bool:
    """GET ``url``/health answers ``{"status": "ok"}`` (proxies bypassed: the server is local)."""
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{url}/health", timeout=timeout) as resp:
            body = json.loads(resp.read() or b"{}")
            return resp.status == 200 and isinstance(body, dict) and body.get("status") == "ok"
    except (OSError, ValueError, RecursionError, urllib.error.URLError):
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS considers free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def default_threads() -> int:
    """CPUs this process may run on (``os.cpu_count()`` where affinity is unknown)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (POSIX ``flock``; a no-op where unavailable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        if sys.platform != "win32":
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if sys.platform != "win32":
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def tail(path: Path | None, lines: int = 15) -> str:
    """The last ``lines`` lines of a log file ("" if unreadable)."""
    if path is None:
        return ""
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def read_state(path: Path, cls: type[T], what: str) -> T | None:
    """The dataclass ``cls`` saved as JSON at ``path`` (unknown keys ignored); None when the file is
    missing, and None with a warning when it cannot be read."""
    import logging

    from benchsmith.schemas import loads_json

    try:
        data = loads_json(path.read_bytes())
        if not isinstance(data, dict):
            raise ValueError(f"a JSON {type(data).__name__}, not an object")
        fields = set(cls.__dataclass_fields__)  # type: ignore[attr-defined]
        return cls(**{k: v for k, v in data.items() if k in fields})
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        logging.getLogger("benchsmith").warning("ignoring unreadable %s state %s: %s", what, path, exc)
        return None


def wait_until_up(
    pid: int,
    ready: Callable[[], bool | str],
    *,
    what: str,
    wait: float,
    log_path: Path,
    t0: float | None = None,
    poll: float = 0.1,
    grace: float = 2.0,
    log_lines: int = 15,
    scrub: Callable[[str], str] = lambda text: text,
    cleanup: Callable[[], None] | None = None,
) -> None:
    """Wait for a server we just started (``pid``) to be up: ``ready()`` says True when it is, a
    sentence when it answers but is wrong (e.g. it refuses our token), False while it is not up yet.

    On failure (that sentence, the process exiting, or ``wait`` seconds passing since ``t0``) the
    process is stopped, ``cleanup`` runs, and a :class:`~benchsmith.schemas.RuntimeFault` names
    ``what`` went wrong with the tail of its log (passed through ``scrub``)."""
    import time

    from benchsmith.schemas import RuntimeFault

    deadline = (time.monotonic() if t0 is None else t0) + wait
    while True:
        verdict = ready()
        if verdict is True:
            return
        if isinstance(verdict, str):
            problem = verdict
        elif not pid_alive(pid):
            problem = "exited during start-up"
        elif time.monotonic() > deadline:
            problem = f"did not become healthy within {wait:.0f} s"
        else:
            time.sleep(poll)
            continue
        terminate(pid, grace, what)
        if cleanup is not None:
            cleanup()
        raise RuntimeFault(f"{what} {problem}; see its log {log_path}:\n{scrub(tail(log_path, log_lines))}")
