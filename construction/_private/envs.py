"""Tool environments: where a tool call really runs (NL2API tools on a read-only database, a
stateful sandbox, ...). Graphs, checks and the evaluator open them by kind from a descriptor.

An environment has ``call(name, arguments, label) -> observation`` (JSON-able) and raises
:class:`~benchsmith.construction.nl2api.ToolError` (with ``.code``) for anything the caller got
wrong; it never evaluates its input as code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from benchsmith.schemas import Registry, UserError


class ToolEnvironment(Protocol):
    def call(self, name: str, arguments: dict[str, Any], label: str | None = None) -> Any: ...


@dataclass(frozen=True)
class EnvContext:
    """What an environment may need besides its descriptor (e.g. the split folder of NL2API tools)."""

    split: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Opener = Callable[[dict[str, Any], EnvContext], ToolEnvironment]
ENVIRONMENTS: Registry[Opener] = Registry("tool environment", ("benchsmith.construction.sandbox",))


def environment(kind: str) -> Callable[[Opener], Opener]:
    """Register ``opener(descriptor, context) -> ToolEnvironment`` for descriptors ``{"kind": kind, ...}``."""

    return ENVIRONMENTS.register(kind)


def open_environment(descriptor: dict[str, Any], context: EnvContext | None = None) -> ToolEnvironment:
    """A fresh environment for ``descriptor`` (``{"kind": ..., ...}``)."""
    kind = descriptor.get("kind") if isinstance(descriptor, dict) else None
    return ENVIRONMENTS.get_or_raise(str(kind) if kind is not None else "None")(descriptor, context or EnvContext())


@environment("nl2api")
def _nl2api(descriptor: dict[str, Any], context: EnvContext) -> ToolEnvironment:
    """``{"kind": "nl2api", "style": "slot"|"sel"|"rest", "setup": [calls]}`` on ``context.split``."""
    from benchsmith.construction.nl2api import Database, ToolEnv

    split = Path(descriptor.get("split") or context.split or "")
    if not (split / "database.sqlite").is_file():
        raise UserError(f"NL2API tools need their split folder; {split} has no database.sqlite",
                        fix="pass the split folder (--split DIR) the samples were built from")
    cache = context.extra.setdefault("_dbs", {})
    db = cache.get(str(split))
    if db is None:
        db = cache[str(split)] = Database(split / "database.sqlite")
    env = ToolEnv(split, db, descriptor.get("style", "slot"), descriptor.get("setup") or [])
    return _LabelledEnv(env)


class _LabelledEnv:
    def __init__(self, env: Any) -> None:
        self._env = env
        self._n = 0

    def call(self, name: str, arguments: dict[str, Any], label: str | None = None) -> Any:
        self._n += 1
        return self._env.call(name, arguments, label or f"out_{self._n}")

    def answer(self, label: str) -> Any:
        """The full answer rows of the output under ``label`` (what a sample's exact answer holds)."""
        from benchsmith.construction.nl2api import result_rows

        if self._env.style == "rest":
            return [list(r) for r in (self._env.outputs[label].get("rows") or [])]
        return [list(r) for r in result_rows(self._env.runtime.outputs[label], self._env.db)]
