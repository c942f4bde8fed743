"""An MCP server as a tool environment (kind ``mcp``): tool calls run for real on a fresh server.

A descriptor names an environment file (``{"kind": "mcp", "file": "environment.json"}``, relative
to the split folder) or holds one (``{"kind": "mcp", "server": {...}, ...}``). Each opening is
isolated: the state template is copied into a new work folder, ``{work}`` in the server's command
and working folder becomes that folder, the server starts there, and :meth:`close` stops it and
removes the folder. So every chain, replay and episode starts from the same state. Calls spell
the folder ``{work}`` too: in arguments it becomes the folder's path, in observations the path
becomes ``{work}``, so a gold chain that names a file there replays on any opening.

Outputs are kept under their call's label, so a later call's ``$label$`` and ``$label.key$``
arguments are filled in before it is sent (the server never sees a reference). :meth:`state` reads
the state: each probe call's observation, and with ``digest`` the SHA-256 of every file in the work
folder. :func:`~benchsmith.construction.without_volatile` leaves out the keys a run changes
(timestamps) before two observations or states are compared.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from benchsmith.construction import (
    EnvContext,
    call_with_outputs,
    environment,
    folder_digest,
    json_view,
    read_probes,
    without_volatile,
)
from benchsmith.models.procs import pid_alive
from benchsmith.schemas import (
    McpEnvironment,
    UserError,
    first_problem,
    read_mcp_environment,
)

from .session import McpSession

WORK = "{work}"


WORK_PREFIX = "benchsmith-mcp-work-"  # then the pid of the process that made it, then a random part
_swept = False


def remove_orphaned_work() -> None:
    """Remove the work folders of processes that are gone (a run killed with -9 cannot remove its
    own), once per process."""
    global _swept
    if _swept:
        return
    _swept = True
    for folder in Path(tempfile.gettempdir()).glob(f"{WORK_PREFIX}*-*"):
        pid = folder.name.removeprefix(WORK_PREFIX).split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _replace(value: Any, old: str, new: str) -> Any:
    """``value`` with ``old`` replaced by ``new`` in every text, at any depth."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    return value


class McpToolEnvironment:
    """One opening of an :class:`~benchsmith.schemas.McpEnvironment`: a fresh work folder and server."""

    mismatch_code = "nondeterministic_replay"  # what a replay that differs is called (the executability check)

    def __init__(self, spec: McpEnvironment, base: Path) -> None:
        self.spec = spec
        self.volatile = tuple(spec.volatile)
        self.work: Path | None = None
        self.outputs: dict[str, Any] = {}
        server = spec.server
        if server.command:
            remove_orphaned_work()
            self.work = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-"))
            try:
                if spec.template is not None:
                    template = (base / spec.template).resolve()
                    if not template.is_dir():
                        raise UserError(
                            f"MCP environment {server.name}: state template {template} is not a folder",
                            fix="give template as a folder relative to the environment file",
                        )
                    shutil.copytree(template, self.work, dirs_exist_ok=True, symlinks=True)
                work = str(self.work)
                server = server.model_copy(
                    update={
                        "command": [a.replace(WORK, work) for a in server.command],
                        "cwd": server.cwd.replace(WORK, work) if server.cwd else work,
                    }
                )
            except BaseException:
                shutil.rmtree(self.work, ignore_errors=True)
                raise
        self._session = McpSession(server)
        try:
            self._session.__enter__()
        except BaseException:
            self._remove_work()
            raise

    def tools(self) -> list[Any]:
        """The server's tools as benchsmith tools."""
        return self._session.tools()

    def call(self, name: str, arguments: dict[str, Any], label: str | None = None) -> Any:
        return call_with_outputs(self._send, self.outputs, name, arguments, label)

    def _send(self, name: str, arguments: dict[str, Any]) -> Any:
        """One call, the work folder spelt ``{work}`` on this side: a chain that names a path in it
        (or an observation that echoes one) replays the same on every opening's new folder."""
        if self.work is None:
            return self._session.call(name, arguments)
        work = str(self.work)
        observation = self._session.call(name, _replace(arguments, WORK, work))
        return _replace(observation, work, WORK)

    def state(self) -> dict[str, Any]:
        """The environment's state now: ``{"probes": [...], "files": {...}}`` (what is declared)."""
        out: dict[str, Any] = {}
        if self.spec.probes:
            what = f"MCP environment {self.spec.server.name}"
            out["probes"] = read_probes(self._send, self.spec.probes, self.volatile, what)
        if self.spec.digest and self.work is not None:
            out["files"] = folder_digest(self.work)
        return out

    def compare_view(self, value: Any) -> Any:
        """``value`` as replays compare it: JSON text read as JSON, the volatile keys left out."""
        return without_volatile(json_view(value), self.volatile)

    def close(self) -> None:
        try:
            self._session.__exit__(None, None, None)
        finally:
            self._remove_work()

    def _remove_work(self) -> None:
        if self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = None


def mcp_environment_spec(descriptor: dict[str, Any], context: EnvContext) -> tuple[McpEnvironment, Path]:
    """The environment a descriptor names (a file) or holds, and the folder its template is relative to."""
    from pydantic import ValidationError

    split = context.split or Path(".")
    if "file" in descriptor:
        path = Path(str(descriptor["file"]))
        path = path if path.is_absolute() else split / path
        return read_mcp_environment(path), path.parent
    try:
        return McpEnvironment.model_validate(descriptor), split
    except ValidationError as exc:
        raise UserError(
            f"MCP environment descriptor: {first_problem(exc)}",
            fix='give {"kind": "mcp", "file": "environment.json"} or the environment itself',
        ) from None


@environment("mcp")
def open_mcp_environment(descriptor: dict[str, Any], context: EnvContext) -> McpToolEnvironment:
    """A fresh :class:`McpToolEnvironment` for ``descriptor`` (see the module's docstring)."""
    spec, base = mcp_environment_spec(descriptor, context)
    return McpToolEnvironment(spec, base)
