"""Process and HTTP helpers shared by the local servers (the model server and Label Studio): liveness,
identity, health, free ports, a file lock, and the one lifecycle of a background server
(:class:`ManagedServer`)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Generic, Iterator, Protocol, TypeVar

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


class ServerState(Protocol):
    """What a background server's state file records, at least: its process and where it answers."""

    @property
    def pid(self) -> int: ...

    @property
    def url(self) -> str: ...


S = TypeVar("S", bound=ServerState)


@dataclass(frozen=True)
class ManagedServer(Generic[S]):
    """A server benchsmith runs in the background (the local model server, Label Studio): the state
    file that says which process it is and where it answers, the lock that keeps two starts or
    stops from racing, and how to tell it is ours and healthy. The one lifecycle both servers use:
    :meth:`status`, :meth:`claimed` (start or reuse), :meth:`stop`."""

    what: str
    """The server's name in messages ("local model server", "Label Studio")."""
    state_file: Path
    lock_file: Path
    state_type: type[S]
    looks: Callable[[int], bool | None]
    """Whether a pid's command line is this server's (None: cannot be read)."""
    healthy: Callable[[str], bool]
    """Whether the server at a URL answers its health check."""
    logger: str = "benchsmith"

    def read(self) -> S | None:
        return read_state(self.state_file, self.state_type, self.what)

    def write(self, info: S) -> None:
        """Record ``info`` (a dataclass) as the running server, atomically."""
        from dataclasses import asdict

        from benchsmith.schemas import write_json

        write_json(self.state_file, asdict(info))  # type: ignore[call-overload]

    def forget(self) -> None:
        self.state_file.unlink(missing_ok=True)

    def is_ours(self, info: S) -> bool:
        return is_ours(info.pid, self.looks, lambda: self.healthy(info.url))

    def status(self) -> S | None:
        """The running, healthy server, or None (a state file whose process is gone is removed)."""
        info = self.read()
        if info is None:
            return None
        if not pid_alive(info.pid):
            self.forget()  # stale: the process is gone
            return None
        return info if self.healthy(info.url) else None

    @contextlib.contextmanager
    def claimed(self, restart_grace: float) -> Iterator[S | None]:
        """Under the lock: the healthy running server to reuse, or None to start one, after a server
        of ours that runs but does not answer was stopped (``restart_grace`` seconds) and its state
        file removed."""
        with file_lock(self.lock_file):
            info = self.read()
            if info is not None:
                if pid_alive(info.pid) and self.healthy(info.url):
                    yield info
                    return
                if self.is_ours(info):  # alive but not answering: replace it
                    import logging

                    logging.getLogger(self.logger).warning(
                        "%s pid %s does not answer %s/health; restarting it", self.what, info.pid, info.url
                    )
                    terminate(info.pid, restart_grace, self.what)
                self.forget()
            yield None

    def stop(self, grace: float) -> S | None:
        """Stop the server (SIGTERM, SIGKILL after ``grace`` seconds) if it is ours and remove its
        state file; what was stopped, or None when none was running (not an error)."""
        if not self.state_file.exists():
            return None
        with file_lock(self.lock_file):
            info = self.read()
            if info is None:
                return None
            stopped = None
            if self.is_ours(info):
                terminate(info.pid, grace, self.what)
                stopped = info
            self.forget()
            return stopped


VENV_MARKER = ".benchsmith-installed.json"
# pip's lines worth echoing as progress (the rest goes to the install log only)
_PIP_PROGRESS = ("Collecting ", "Installing collected", "Successfully installed", "ERROR", "error:")


def ensure_venv(
    folder: Path,
    requirements: list[str],
    echo: Callable[[str], None] | None = None,
    *,
    log: Path | None = None,
    timeout: float = 1800.0,
    upgrade_pip: bool = False,
) -> Path:
    """A virtual environment at ``folder`` with ``requirements`` installed by pip, made once, for
    tools that pin their own dependencies (Label Studio, a third-party MCP server built on another
    ``mcp`` SDK): a marker naming the requirements is written only after a good install (a
    half-finished one is redone), and a file lock keeps two processes from installing at once.
    pip's output goes to ``log`` (default ``<folder>.log`` beside it), its progress lines to
    ``echo``; a failed step is a ``RuntimeFault`` with the log's last lines. ``upgrade_pip`` first
    brings the venv's pip up to date (large dependency trees resolve better). The folder."""
    import shutil
    import subprocess
    import time

    from benchsmith.schemas import RuntimeFault

    marker = folder / VENV_MARKER

    def done() -> bool:
        try:
            return json.loads(marker.read_text(encoding="utf-8")).get("requirements") == requirements
        except (OSError, ValueError):
            return False

    if done():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(folder.parent / f"{folder.name}.lock"):
        if done():  # another process finished it while this one waited
            return folder
        log = log or folder.parent / f"{folder.name}.log"
        log.write_text("", encoding="utf-8")
        if echo is not None:
            echo(f"installing {' '.join(requirements)} into {folder} (once; log: {log})")
        shutil.rmtree(folder, ignore_errors=True)
        base = getattr(sys, "_base_executable", None) or sys.executable  # not a venv's shim
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_REQUIRE_VIRTUALENV")}
        env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONUNBUFFERED="1")
        py = str(folder / "bin" / "python")
        t0 = time.monotonic()
        steps = [[base, "-m", "venv", str(folder)], [py, "-m", "pip", "install", *requirements]]
        if upgrade_pip:
            steps.insert(1, [py, "-m", "pip", "install", "--upgrade", "pip"])
        for cmd in steps:
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"$ {' '.join(cmd)}\n")
                out.flush()
                proc = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
                )
                assert proc.stdout is not None
                for line in proc.stdout:
                    out.write(line)
                    if echo is not None and line.lstrip().startswith(_PIP_PROGRESS):
                        echo(f"  [{time.monotonic() - t0:5.0f} s] {line.strip()[:160]}")
                rc = proc.wait(timeout=timeout)
            if rc:
                raise RuntimeFault(
                    f"installing {' '.join(requirements)} failed (`{' '.join(cmd[:4])} ...` exited {rc}); "
                    f"see {log}:\n{tail(log, 20)}"
                )
        seconds = time.monotonic() - t0
        tmp = marker.with_suffix(".tmp")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        tmp.write_text(
            json.dumps({"requirements": requirements, "seconds": round(seconds, 1), "installed_at": stamp}),
            encoding="utf-8",
        )
        os.replace(tmp, marker)
        if echo is not None:
            echo(f"{' '.join(requirements)} installed in {seconds:.0f} s")
    return folder
