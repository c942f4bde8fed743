"""A real Label Studio server for the tests: ``from ls_fixture import label_studio`` in a test module.

The session fixture ``label_studio`` yields a ``LabelStudioServer`` (``base_url``, ``token`` -- the
admin's legacy API token --, ``data_dir``, ``pid``, ``client()``, ``env()``). The first run installs
Label Studio into its own venv under the cache and migrates a template data dir (about 1-3
minutes, once per machine and Label Studio version); later runs copy the template into a temporary
data dir and the server is up in a few seconds. One server serves the whole session, even when
several modules import the fixture; it is stopped at the end.
"""

from __future__ import annotations

import atexit
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest


@dataclass
class LabelStudioServer:
    base_url: str
    token: str = field(repr=False)
    data_dir: Path
    pid: int
    info: Any = field(repr=False)
    """The ``LabelStudioInfo`` of the server."""

    def env(self) -> dict[str, str]:
        """``LABEL_STUDIO_URL`` / ``LABEL_STUDIO_API_KEY`` pointing at this server (for subprocesses, monkeypatch)."""
        return {"LABEL_STUDIO_URL": self.base_url, "LABEL_STUDIO_API_KEY": self.token}

    def client(self) -> Any:
        """A ``label_studio_sdk.LabelStudio`` client logged in as the admin."""
        from label_studio_sdk import LabelStudio

        return LabelStudio(base_url=self.base_url, api_key=self.token)


_SERVER: LabelStudioServer | None = None


def _progress(msg: str) -> None:  # the first run waits minutes: say why, past pytest's capture
    print(f"[label-studio fixture] {msg}", file=sys.__stderr__, flush=True)


def start_session_server(root: Path | Callable[[], Path]) -> LabelStudioServer:
    """Start (once per process) a Label Studio server on a copy of the template in ``root`` (or ``root()``)."""
    global _SERVER
    from benchsmith.annotation._private.server import label_studio_status, start_label_studio

    if _SERVER is not None and label_studio_status(_SERVER.data_dir) is not None:
        return _SERVER
    data_dir = (root() if callable(root) else root) / "label-studio"
    info = start_label_studio(data_dir=data_dir, wait=300.0, echo=_progress)
    _SERVER = LabelStudioServer(base_url=info.url, token=info.token(), data_dir=data_dir, pid=info.pid, info=info)
    atexit.register(stop_session_server)  # also when pytest dies before the fixture's teardown
    return _SERVER


def stop_session_server() -> None:
    global _SERVER
    from benchsmith.annotation._private.server import stop_label_studio

    if _SERVER is not None:
        stop_label_studio(_SERVER.data_dir)
        _SERVER = None


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory: pytest.TempPathFactory) -> LabelStudioServer:
    server = start_session_server(lambda: tmp_path_factory.mktemp("ls-session"))
    yield server
    stop_session_server()
