"""Label Studio in its own virtual environment under the cache, installed once with pip.

Label Studio pins its own SDK and Django, so it never goes into the project's environment:
``<cache>/label-studio/venv-<version>`` (``$BENCHSMITH_CACHE`` moves the cache root). A marker
file is written only after a successful install, so a half-finished one is redone; a file lock
keeps two processes from installing at once.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable

from benchsmith.models import cache_root, procs
from benchsmith.schemas import RuntimeFault

LS_VERSION = "1.23.2"
"""The Label Studio release benchsmith installs (it pins label-studio-sdk==2.1.2)."""

Echo = Callable[[str], None]


def to_stderr(msg: str) -> None:
    """Progress for a person watching (the install and template steps): stderr, at once."""
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
    """The venv finished installing (its marker is there) and its ``label-studio`` command exists.
    A marker of the installer before ``procs.ensure_venv`` (``{"version": ...}``) counts too."""
    venv = venv_dir(version)
    try:
        marker = json.loads((venv / procs.VENV_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    named = marker.get("requirements") == _requirements(version) or marker.get("version") == version
    return named and executable(version).is_file()


def _requirements(version: str) -> list[str]:
    return [f"label-studio=={version}"]


def ensure_label_studio(version: str = LS_VERSION, echo: Echo | None = None) -> Path:
    """The ``label-studio`` executable of ``label-studio==version`` in its own venv, installing it if needed.

    The first install takes a few minutes (about 1 GB; pip's wheel cache makes later ones fast).
    Progress goes to ``echo`` (default: stderr); pip's full output to ``<cache>/label-studio/install-<version>.log``.
    """
    echo = echo or to_stderr
    if is_installed(version):
        return executable(version)
    log = ls_cache_dir() / f"install-{version}.log"
    procs.ensure_venv(venv_dir(version), _requirements(version), echo, log=log, upgrade_pip=True)
    if not executable(version).is_file():
        raise RuntimeFault(f"pip installed label-studio=={version} but {executable(version)} is missing")
    return executable(version)
