"""The ``sandbox`` tool environment: ``{"kind": "sandbox", "config": {domain: initial state}}``
opens a fresh :class:`~.engine.Sandbox` (see ``benchsmith.construction._private.envs``)."""

from __future__ import annotations

from typing import Any

from benchsmith.construction import ENVIRONMENTS, EnvContext, environment
from benchsmith.schemas import UserError

from .engine import Sandbox


def open_sandbox(descriptor: dict[str, Any], context: EnvContext) -> Sandbox:
    """A fresh sandbox for ``{"kind": "sandbox", "config": {...}}`` (the context is not needed)."""
    extra = sorted(set(descriptor) - {"kind", "config"})
    if extra:
        raise UserError(
            f"sandbox environment descriptor has unknown key(s) {extra}",
            fix='use {"kind": "sandbox", "config": {domain: initial state}}',
        )
    if "config" not in descriptor:
        raise UserError(
            "sandbox environment descriptor has no config",
            fix='use {"kind": "sandbox", "config": {domain: initial state}}',
        )
    return Sandbox(descriptor["config"])


def _register() -> None:
    """``@environment("sandbox")``, tolerating a second import of this module under another name
    (pytest's ``--doctest-modules`` imports files by path): the same opener is not registered twice."""
    known = ENVIRONMENTS.peek("sandbox")
    if (
        known is not None
        and known.__qualname__ == open_sandbox.__qualname__
        and known.__module__.endswith("sandbox._private.environment")
    ):
        return
    environment("sandbox")(open_sandbox)


_register()
