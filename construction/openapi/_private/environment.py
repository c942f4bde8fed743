"""An HTTP service described by an OpenAPI document as a tool environment (kind ``openapi``).

A descriptor names an environment file (``{"kind": "openapi", "file": ".../environment.json"}``,
relative to the split folder), an :class:`~benchsmith.schemas.OpenApiEnvironment` beside the
catalog's ``service.json``. A service is not started by benchsmith, so isolation is its declared
reset: the reset calls run at every opening, before any other call, and a failing one is a
:class:`~benchsmith.schemas.EnvironmentFault` (the environment, not the model). Outputs are kept under
their call's label and ``$label$`` arguments filled in before sending; :meth:`state` gives the
probe calls' observations, the volatile keys left out.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from benchsmith.construction import (
    EnvContext,
    call_with_outputs,
    environment,
    json_view,
    read_probes,
    without_volatile,
)
from benchsmith.schemas import (
    EnvironmentFault,
    OpenApiEnvironment,
    ToolError,
    read_openapi_environment,
    read_openapi_service,
)

from .session import OpenApiSession

_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


def _service_lock(base_url: str) -> threading.RLock:
    """The process's lock of one service (re-entrant: an item's replay opens it again in its thread)."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(base_url, threading.RLock())


class OpenApiToolEnvironment:
    """One opening of an :class:`~benchsmith.schemas.OpenApiEnvironment`: a session, the service reset."""

    mismatch_code = "nondeterministic_replay"  # what a replay that differs is called (the executability check)

    def __init__(self, spec: OpenApiEnvironment, base: Path) -> None:
        self.spec = spec
        self.volatile = tuple(spec.volatile)
        self.outputs: dict[str, Any] = {}
        self.service = read_openapi_service(base / spec.service)
        self._lock = _service_lock(self.service.base_url)
        self._lock.acquire()  # construction threads: one opening of a service at a time (its reset)
        self._session = OpenApiSession(self.service)
        try:
            self._session.__enter__()
            for step in spec.reset:
                try:
                    self._session.call(step.name, dict(step.arguments))
                except ToolError as exc:
                    raise EnvironmentFault(
                        f"OpenAPI service {self.service.name}: reset call {step.name} failed: {exc}"
                    ) from None
        except BaseException:
            self.close()
            raise

    def call(self, name: str, arguments: dict[str, Any], label: str | None = None) -> Any:
        return call_with_outputs(self._session.call, self.outputs, name, arguments, label)

    def state(self) -> dict[str, Any]:
        """The service's state now: ``{"probes": [...]}``."""
        if not self.spec.probes:
            return {}
        what = f"OpenAPI service {self.service.name}"
        return {"probes": read_probes(self._session.call, self.spec.probes, self.volatile, what)}

    def compare_view(self, value: Any) -> Any:
        """``value`` as replays compare it: JSON text read as JSON, the volatile keys left out."""
        return without_volatile(json_view(value), self.volatile)

    def close(self) -> None:
        try:
            self._session.__exit__(None, None, None)
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None


def _environment_file(descriptor: dict[str, Any], context: EnvContext) -> Path:
    from benchsmith.schemas import UserError

    if "file" not in descriptor:
        raise UserError(
            "an openapi environment descriptor names its file",
            fix='give {"kind": "openapi", "file": "environment.json"} (beside the catalog\'s service.json)',
        )
    path = Path(str(descriptor["file"]))
    return path if path.is_absolute() else (context.split or Path(".")) / path


def service_of(descriptor: dict[str, Any], context: EnvContext) -> str:
    """The service an opening resets and calls: its base URL (every opening shares it)."""
    path = _environment_file(descriptor, context)
    spec = read_openapi_environment(path)
    return f"openapi:{read_openapi_service(path.parent / spec.service).base_url}"


@environment("openapi", shared_by=service_of)
def open_openapi_environment(descriptor: dict[str, Any], context: EnvContext) -> OpenApiToolEnvironment:
    """A fresh :class:`OpenApiToolEnvironment` for ``{"kind": "openapi", "file": ...}``."""
    path = _environment_file(descriptor, context)
    return OpenApiToolEnvironment(read_openapi_environment(path), path.parent)
