"""Label Studio in its own virtual environment under the cache, installed once with pip.

Label Studio pins its own SDK and Django, so it never goes into the project's environment:
``<cache>/label-studio/venv-<version>`` (``$BENCHSMITH_CACHE`` moves the cache root). A marker
file is written only after a successful install, so a half-finished one is redone; a file lock
keeps two processes from installing at once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from benchsmith.models import cache_root, procs
from benchsmith.schemas import RuntimeFault

LS_VERSION = "1.23.2"
"""The Label Studio release benchsmith installs (it pins label-studio-sdk==2.1.2)."""
MARKER = ".benchsmith-installed.json"
INSTALL_TIMEOUT = 1800.0
# pip's lines worth echoing as progress (the rest goes to the install log only)
_PROGRESS = ("Collecting ", "Installing collected", "Successfully installed", "ERROR", "error:")

Echo = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ls_cache_dir() -> Path:
    """``<cache>/label-studio``: the venvs, templates and install logs."""
    return cache_root() / "label-studio"


def venv_dir(version: str = LS_VERSION) -> Path:
    return ls_cache_dir() / f"venv-{version}"


def executable(version: str = LS_VERSION) -> Path:
    """The ``label-studio`` command of the installed venv (it may not exist yet)."""
    return venv_dir(version) / "bin" / "label-studio"


def is_installed(version: str = LS_VERSION) -> bool:
    """The venv finished installing (its marker is there) and its ``label-studio`` command exists."""
    venv = venv_dir(version)
    try:
        marker = json.loads((venv / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return marker.get("version") == version and executable(version).is_file()


def _base_python() -> str:
    """A plain interpreter to build the venv from (this one's base, not a venv's shim)."""
    return getattr(sys, "_base_executable", None) or sys.executable or shutil.which("python3") or "python3"


def _run(cmd: list[str], log_path: Path, echo: Echo, t0: float) -> None:
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"$ {' '.join(cmd)}\n")
        log.flush()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_REQUIRE_VIRTUALENV")}
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        env["PYTHONUNBUFFERED"] = "1"
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if line.lstrip().startswith(_PROGRESS):
                echo(f"  [{time.monotonic() - t0:5.0f} s] {line.strip()[:160]}")
        rc = proc.wait(timeout=INSTALL_TIMEOUT)
    if rc:
        raise RuntimeFault(
            f"installing Label Studio failed (`{' '.join(cmd[:4])} ...` exited {rc}); "
            f"see {log_path}:\n{procs.tail(log_path, 20)}"
        )


def ensure_label_studio(version: str = LS_VERSION, echo: Echo | None = None) -> Path:
    """The ``label-studio`` executable of ``label-studio==version`` in its own venv, installing it if needed.

    The first install takes a few minutes (about 1 GB; pip's wheel cache makes later ones fast).
    Progress goes to ``echo`` (default: stderr); pip's full output to ``<cache>/label-studio/install-<version>.log``.
    """
    echo = echo or _stderr
    if is_installed(version):
        return executable(version)
    root = ls_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with procs.file_lock(root / f"install-{version}.lock"):
        if is_installed(version):  # another process finished it while we waited
            return executable(version)
        venv = venv_dir(version)
        log_path = root / f"install-{version}.log"
        log_path.write_text("", encoding="utf-8")
        t0 = time.monotonic()
        if venv.exists():
            echo(f"removing the unfinished Label Studio install in {venv}")
            shutil.rmtree(venv)
        echo(f"installing label-studio=={version} into {venv} (a few minutes the first time; log: {log_path})")
        _run([_base_python(), "-m", "venv", str(venv)], log_path, echo, t0)
        py = str(venv / "bin" / "python")
        _run([py, "-m", "pip", "install", "--upgrade", "pip"], log_path, echo, t0)
        _run([py, "-m", "pip", "install", f"label-studio=={version}"], log_path, echo, t0)
        if not executable(version).is_file():
            raise RuntimeFault(
                f"pip installed label-studio=={version} but {executable(version)} is missing; see {log_path}"
            )
        seconds = time.monotonic() - t0
        tmp = venv / (MARKER + ".tmp")
        tmp.write_text(
            json.dumps(
                {"version": version, "seconds": round(seconds, 1), "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            ),
            encoding="utf-8",
        )
        os.replace(tmp, venv / MARKER)
        echo(f"label-studio=={version} installed in {seconds:.0f} s")
        return executable(version)
