"""Lifecycle of a local Label Studio server: start (detached), reuse, status, stop; and finding any server.

Mirrors ``benchsmith.models._private.server``: a state file (pid, port, url, data dir, version)
next to the data dir, a file lock around start/stop, pid + health checks, a free port, a health
wait. Label Studio runs from its own venv (``lsenv``), bound to 127.0.0.1, with every outbound
call switched off. Its data dir (default ``./.benchsmith/label-studio``) is copied from a
migrated template kept in the cache per Label Studio version, so a start takes seconds instead
of the half minute of a fresh migration. Each data dir gets its own admin token and password
(rewritten in the copied database before the first start), stored only in a 0600 credentials
file inside the data dir: never in argv, in the state file, or in anything printed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import secrets
import shutil
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, NamedTuple

from benchsmith.annotation._private import lsenv
from benchsmith.models import procs
from benchsmith.schemas import RuntimeFault, UserError

log = logging.getLogger("benchsmith.annotation")

ENV_DATA_DIR = "BENCHSMITH_LS_DATA_DIR"
ENV_URL = "LABEL_STUDIO_URL"
ENV_API_KEY = "LABEL_STUDIO_API_KEY"
DEFAULT_DATA_DIR = Path(".benchsmith") / "label-studio"
CREDENTIALS_FILE = "benchsmith-admin.json"
LOG_FILE = "server.log"
DB_FILE = "label_studio.sqlite3"
ADMIN_USER = "admin@benchsmith.local"
HOST = "127.0.0.1"
DEFAULT_WAIT = 180.0

# Label Studio also reads these bare names (Django settings through django-environ): never pass the caller's
NO_INHERIT = ("USERNAME", "PASSWORD", "HOST", "PORT", "DEBUG", "SECRET_KEY")
# no outbound traffic: no Sentry, no version check, no analytics, no downloads, offline feature flags
OFFLINE_ENV = {
    "SENTRY_DSN": "",
    "FRONTEND_SENTRY_DSN": "",
    "LATEST_VERSION_CHECK": "false",
    "COLLECT_ANALYTICS": "false",
    "CONVERTER_DOWNLOAD_RESOURCES": "false",
    "FEATURE_FLAGS_OFFLINE": "true",
}

Echo = Callable[[str], None]


@dataclass(frozen=True)
class LabelStudioInfo:
    """A running local Label Studio server, as recorded in its state file (no secrets in here)."""

    pid: int
    port: int
    url: str
    """``http://127.0.0.1:PORT``."""
    data_dir: str
    version: str
    started_at: str
    log_path: str
    credentials_file: str
    """The 0600 JSON file ``{"username", "password", "token"}`` of the admin user."""
    start_seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def token(self) -> str:
        """The admin API token (legacy token: ``Authorization: Token ...``), read from the credentials file."""
        return _read_credentials(Path(self.data_dir))["token"]


class LabelStudioAccess(NamedTuple):
    """Where a Label Studio server answers and the API token to use; the token is masked in ``repr``."""

    url: str
    token: str
    source: str
    """``env`` (LABEL_STUDIO_URL / LABEL_STUDIO_API_KEY) or ``local`` (the benchsmith-started server)."""

    def __repr__(self) -> str:
        return f"LabelStudioAccess(url={self.url!r}, token='***', source={self.source!r})"


# ---------------------------------------------------------------- paths and files


def data_dir_path(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """``data_dir``, else ``$BENCHSMITH_LS_DATA_DIR``, else ``./.benchsmith/label-studio`` (absolute)."""
    return Path(data_dir or os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR).expanduser().absolute()


def state_path(data_dir: Path) -> Path:
    """The state file next to the data dir: ``<data dir>.state.json``."""
    return data_dir.with_name(data_dir.name + ".state.json")


def template_dir(version: str = lsenv.LS_VERSION) -> Path:
    """The migrated template data dir of ``version``: ``<cache>/label-studio/template-<version>``."""
    return lsenv.ls_cache_dir() / f"template-{version}"


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` atomically to a file only its owner can read (0600 from creation on)."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _read_credentials(data_dir: Path) -> dict[str, str]:
    path = data_dir / CREDENTIALS_FILE
    try:
        creds = json.loads(path.read_text(encoding="utf-8"))
        if not creds.get("token"):
            raise ValueError("no token")
        return creds
    except FileNotFoundError:
        raise UserError(
            f"{path} is missing: this Label Studio data dir was not set up by benchsmith",
            fix=f"start a server on a new data dir, or set {ENV_URL} and {ENV_API_KEY}",
        ) from None
    except (OSError, ValueError) as exc:
        raise UserError(
            f"cannot read the admin credentials {path} ({type(exc).__name__})",
            fix="stop the server and start it on a new data dir",
        ) from None


def _scrub(text: str, *secrets_: str) -> str:
    for s in secrets_:
        if s:
            text = text.replace(s, "***")
    return text


# ---------------------------------------------------------------- HTTP


def _opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback / explicit URL: no proxies


def ls_healthy(url: str, timeout: float = 2.0) -> bool:
    """``GET url/health`` answers 200 with ``{"status": "UP"}`` (Label Studio's health view)."""
    try:
        with _opener().open(f"{url}/health", timeout=timeout) as resp:
            body = json.loads(resp.read() or b"{}")
            return resp.status == 200 and str(body.get("status", "")).upper() in ("UP", "OK")
    except (OSError, ValueError, urllib.error.URLError):
        return False


def _auth_header(url: str, token: str, timeout: float) -> str:
    """``Token <legacy token>``, or for a personal access token (a JWT) ``Bearer <access token>``."""
    if token.count(".") != 2:
        return f"Token {token}"
    req = urllib.request.Request(
        f"{url}/api/token/refresh",
        data=json.dumps({"refresh": token}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with _opener().open(req, timeout=timeout) as resp:
        return f"Bearer {json.loads(resp.read())['access']}"


def whoami(url: str, token: str, timeout: float = 10.0) -> dict[str, Any]:
    """``GET /api/current-user/whoami`` with ``token``; raises ``urllib.error.HTTPError`` / ``OSError``."""
    req = urllib.request.Request(
        f"{url}/api/current-user/whoami", headers={"Authorization": _auth_header(url, token, timeout)}
    )
    with _opener().open(req, timeout=timeout) as resp:
        return json.loads(resp.read())


def check_access(url: str, token: str, token_source: str, url_source: str, timeout: float = 10.0) -> dict[str, Any]:
    """The current user at ``url`` with ``token``; a ``UserError`` naming where they came from (never the token)."""
    try:
        return whoami(url, token, timeout)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise UserError(
                f"Label Studio at {url} refused the API token from {token_source} (HTTP {exc.code})",
                fix=f"set {token_source} to a valid token (Account & Settings in Label Studio)",
            ) from None
        raise UserError(
            f"Label Studio at {url} answered HTTP {exc.code} to /api/current-user/whoami",
            fix=f"check {url_source}: it must be the server's base URL",
        ) from None
    except (OSError, ValueError, KeyError) as exc:
        reason = getattr(exc, "reason", None) or type(exc).__name__
        raise UserError(
            f"cannot reach Label Studio at {url} ({reason})",
            fix=f"start it (`benchsmith annotate server start`) or fix {url_source}",
        ) from None


# ---------------------------------------------------------------- processes


def _looks_like_ls(pid: int) -> bool | None:
    cmd = procs.command_line(pid)
    return None if cmd is None else ("label-studio" in cmd or "label_studio" in cmd)


def _server(data_dir: Path) -> procs.ManagedServer[LabelStudioInfo]:
    """The Label Studio server of ``data_dir``: its state file and lock sit beside the data dir."""
    return procs.ManagedServer(
        "Label Studio",
        state_path(data_dir),
        data_dir.with_name(data_dir.name + ".lock"),
        LabelStudioInfo,
        _looks_like_ls,
        ls_healthy,
        logger="benchsmith.annotation",
    )


def _child_env(data_dir: Path, creds: dict[str, str]) -> dict[str, str]:
    """The server's environment: the caller's without Label Studio/Django settings, plus ours (the secrets live here,
    never in argv)."""
    env = {
        k: v for k, v in os.environ.items() if k not in NO_INHERIT and not k.startswith(("LABEL_STUDIO_", "DJANGO_"))
    }
    env.update(OFFLINE_ENV)
    env.update(
        {
            "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir),
            "LABEL_STUDIO_USERNAME": creds["username"],
            "LABEL_STUDIO_PASSWORD": creds["password"],
            "LABEL_STUDIO_USER_TOKEN": creds["token"],
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _spawn(data_dir: Path, port: int, creds: dict[str, str], version: str) -> tuple[int, Path]:
    exe = lsenv.ensure_label_studio(version)
    log_path = data_dir / LOG_FILE
    cmd = [str(exe), "start", "--no-browser", "--internal-host", HOST, "-p", str(port)]
    with open(log_path, "ab") as out:
        out.write(f"--- {datetime.now(timezone.utc).isoformat(timespec='seconds')} {' '.join(cmd)}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=data_dir,
            env=_child_env(data_dir, creds),
            start_new_session=True,
        )
    return proc.pid, log_path


def _wait_up(pid: int, url: str, token: str, wait: float, log_path: Path, t0: float) -> None:
    """Wait for ``/health`` on exactly this port and for ``token`` to be accepted there (so it is our server,
    not another one that took the port); on failure stop it and raise with the scrubbed log tail."""

    def ready() -> bool | str:
        if not ls_healthy(url):
            return False
        try:
            whoami(url, token, timeout=10.0)
            return True
        except (OSError, ValueError, KeyError) as exc:
            return f"answers on {url} but refused the admin token ({getattr(exc, 'code', type(exc).__name__)})"

    procs.wait_until_up(
        pid,
        ready,
        what=f"Label Studio on {url}",
        wait=wait,
        log_path=log_path,
        t0=t0,
        poll=0.25,
        grace=5.0,
        log_lines=25,
        scrub=lambda text: _scrub(text, token),
    )


# ---------------------------------------------------------------- template and data dir


def _new_credentials() -> dict[str, str]:
    return {"username": ADMIN_USER, "password": secrets.token_urlsafe(18), "token": secrets.token_hex(20)}


def _django_password_hash(password: str, iterations: int = 600_000) -> str:
    """Django's ``pbkdf2_sha256`` format (Django upgrades the iteration count on the next login)."""
    salt = secrets.token_urlsafe(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), iterations)
    return f"pbkdf2_sha256${iterations}${salt}${base64.b64encode(digest).decode()}"


def _rotate_credentials(db: Path, old: dict[str, str], new: dict[str, str]) -> None:
    """Give a copied data dir its own admin token and password (before its server starts)."""
    con = sqlite3.connect(db)
    try:
        with con:
            row = con.execute("SELECT user_id FROM authtoken_token WHERE key = ?", (old["token"],)).fetchone()
            if row is None:
                raise RuntimeFault(
                    f"the Label Studio template database {db} has no admin token; delete "
                    f"{template_dir()} so it is rebuilt"
                )
            con.execute("UPDATE authtoken_token SET key = ? WHERE key = ?", (new["token"], old["token"]))
            con.execute(
                "UPDATE htx_user SET password = ? WHERE id = ?", (_django_password_hash(new["password"]), row[0])
            )
    finally:
        con.close()


def ensure_template(version: str = lsenv.LS_VERSION, wait: float = DEFAULT_WAIT, echo: Echo | None = None) -> Path:
    """The migrated template data dir of ``version``, created once (a fresh start: migrations, admin user, token).

    It holds ``label_studio.sqlite3`` and the 0600 credentials of its admin user; data dirs are copies
    of it that get their own credentials. Guarded by a file lock; complete only when its marker exists."""
    echo = echo or lsenv.to_stderr
    tpl = template_dir(version)
    marker = tpl / ".benchsmith-template.json"
    if marker.is_file():
        return tpl
    lsenv.ensure_label_studio(version, echo)
    root = lsenv.ls_cache_dir()
    with procs.file_lock(root / f"template-{version}.lock"):
        if marker.is_file():
            return tpl
        building = root / f"template-{version}.building"
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True, mode=0o700)
        creds = _new_credentials()
        _write_private(building / CREDENTIALS_FILE, json.dumps(creds))
        port = procs.free_port(HOST)
        echo(f"migrating a fresh Label Studio {version} data dir into a template (about half a minute, once) ...")
        t0 = time.monotonic()
        pid, log_path = _spawn(building, port, creds, version)
        _wait_up(pid, f"http://{HOST}:{port}", creds["token"], wait, log_path, t0)
        seconds = time.monotonic() - t0
        procs.terminate(pid, 20.0, "Label Studio")
        (building / LOG_FILE).unlink(missing_ok=True)
        (building / ".benchsmith-template.json").write_text(
            json.dumps({"version": version, "fresh_start_seconds": round(seconds, 1)}), encoding="utf-8"
        )
        shutil.rmtree(tpl, ignore_errors=True)
        os.replace(building, tpl)
        echo(f"Label Studio template ready in {tpl} (fresh start {seconds:.0f} s)")
        return tpl


def _prepare_data_dir(data_dir: Path, version: str, wait: float, echo: Echo) -> None:
    """A new data dir becomes a copy of the template with its own credentials; an existing one must be ours."""
    if (data_dir / DB_FILE).exists():
        _read_credentials(data_dir)  # a UserError when the data dir was not set up by benchsmith
        return
    if data_dir.exists() and any(p.name != LOG_FILE for p in data_dir.iterdir()):
        raise UserError(
            f"{data_dir} exists, is not empty and holds no Label Studio database",
            fix="choose an empty or new --data-dir",
        )
    tpl = ensure_template(version, wait, echo)
    data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)
    old = json.loads((tpl / CREDENTIALS_FILE).read_text(encoding="utf-8"))
    for item in tpl.iterdir():
        if item.name in (CREDENTIALS_FILE, ".benchsmith-template.json", ".env", DB_FILE):
            continue  # .env holds Django's SECRET_KEY: Label Studio writes a new one for each data dir
        (shutil.copytree if item.is_dir() else shutil.copy2)(
            item, data_dir / item.name, **({"dirs_exist_ok": True} if item.is_dir() else {})
        )
    # the database comes last, under a temporary name: a data dir with a database always has its credentials
    tmp_db = data_dir / (DB_FILE + ".copying")
    shutil.copy2(tpl / DB_FILE, tmp_db)
    os.chmod(tmp_db, 0o600)
    new = _new_credentials()
    _rotate_credentials(tmp_db, old, new)
    _write_private(data_dir / CREDENTIALS_FILE, json.dumps(new))
    os.replace(tmp_db, data_dir / DB_FILE)


# ---------------------------------------------------------------- public lifecycle


def label_studio_status(data_dir: str | os.PathLike[str] | None = None) -> LabelStudioInfo | None:
    """The running, healthy local server of ``data_dir`` (see ``data_dir_path``) from its state file, or None."""
    return _server(data_dir_path(data_dir)).status()


def start_label_studio(
    port: int | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    wait: float = DEFAULT_WAIT,
    version: str = lsenv.LS_VERSION,
    echo: Echo | None = None,
) -> LabelStudioInfo:
    """Start Label Studio in the background on 127.0.0.1, or reuse the healthy one already running on ``data_dir``.

    Installs Label Studio into its own venv and builds the migrated template the first time
    (minutes, with progress on ``echo``, default stderr). ``port`` defaults to a free one; the
    server must answer ``/health`` and accept its admin token on exactly that port within ``wait``
    seconds. Its log is ``<data dir>/server.log``; its state ``<data dir>.state.json``.
    """
    echo = echo or lsenv.to_stderr
    if port is not None and not 0 < port < 65536:
        raise UserError(f"port {port} is out of range", fix="use 1-65535 or leave the port out (a free one is picked)")
    if wait <= 0:
        raise UserError(f"wait={wait} must be positive", fix=f"use a number of seconds (default {DEFAULT_WAIT:.0f})")
    folder = data_dir_path(data_dir)
    folder.parent.mkdir(parents=True, exist_ok=True)
    server = _server(folder)
    with server.claimed(restart_grace=10.0) as running:
        if running is not None:
            if port is not None and port != running.port:
                raise UserError(
                    f"Label Studio is already running on {folder} at {running.url} (pid {running.pid}), "
                    f"not on port {port}",
                    fix="stop it first with `benchsmith annotate server stop`, or leave the port out to reuse it",
                )
            return running
        if port is not None and not procs.port_is_free(HOST, port):
            raise UserError(f"port {port} on {HOST} is already in use", fix="choose another port or leave it out")
        lsenv.ensure_label_studio(version, echo)
        _prepare_data_dir(folder, version, wait, echo)
        creds = _read_credentials(folder)
        port = port or procs.free_port(HOST)
        url = f"http://{HOST}:{port}"
        t0 = time.monotonic()
        pid, log_path = _spawn(folder, port, creds, version)
        _wait_up(pid, url, creds["token"], wait, log_path, t0)
        info = LabelStudioInfo(
            pid=pid,
            port=port,
            url=url,
            data_dir=str(folder),
            version=version,
            started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            log_path=str(log_path),
            credentials_file=str(folder / CREDENTIALS_FILE),
            start_seconds=round(time.monotonic() - t0, 2),
        )
        server.write(info)
        log.info("Label Studio up at %s (pid %s) in %.1f s", url, pid, info.start_seconds)
        return info


def stop_label_studio(data_dir: str | os.PathLike[str] | None = None, grace: float = 20.0) -> LabelStudioInfo | None:
    """Stop the local server of ``data_dir`` (SIGTERM, SIGKILL after ``grace`` s) and remove its state file.

    Returns what was stopped, or None when none was running (not an error). The data dir is kept."""
    return _server(data_dir_path(data_dir)).stop(grace)


def resolve_label_studio(data_dir: str | os.PathLike[str] | None = None, validate: bool = True) -> LabelStudioAccess:
    """Where to reach Label Studio and with which token.

    ``$LABEL_STUDIO_URL`` + ``$LABEL_STUDIO_API_KEY`` when set (any existing server: no local one
    is needed), else the running local server of ``data_dir`` and its admin token. With
    ``validate`` the token is checked with ``GET /api/current-user/whoami``. A ``UserError`` when
    neither is available or the token is refused (naming the variable or file, never the token)."""
    url, key = os.environ.get(ENV_URL, "").strip(), os.environ.get(ENV_API_KEY, "").strip()
    if url or key:
        if not (url and key):
            missing = ENV_URL if not url else ENV_API_KEY
            raise UserError(
                f"{ENV_URL} and {ENV_API_KEY} go together, but {missing} is not set",
                fix="set both, or unset both to use the local server (`benchsmith annotate server start`)",
            )
        access = LabelStudioAccess(url.rstrip("/"), key, "env")
        if validate:
            check_access(access.url, key, ENV_API_KEY, ENV_URL)
        return access
    info = label_studio_status(data_dir)
    if info is None:
        raise UserError(
            f"no Label Studio server: {ENV_URL} / {ENV_API_KEY} are not set and none is running on "
            f"{data_dir_path(data_dir)}",
            fix=f"run `benchsmith annotate server start`, or set {ENV_URL} and {ENV_API_KEY}",
        )
    access = LabelStudioAccess(info.url, info.token(), "local")
    if validate:
        check_access(access.url, access.token, info.credentials_file, "the local server's state file")
    return access
