"""Tool environments: where a tool call really runs (NL2API tools on a read-only database, a
stateful sandbox, ...). Graphs, checks and the evaluator open them by kind from a descriptor.

An environment has ``call(name, arguments, label) -> observation`` (JSON-able) and raises
:class:`~benchsmith.construction.nl2api.ToolError` (with ``.code``) for anything the caller got
wrong; it never evaluates its input as code.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from benchsmith.schemas import EnvironmentFault, Registry, ToolError, UserError


class ToolEnvironment(Protocol):
    def call(self, name: str, arguments: dict[str, Any], label: str | None = None) -> Any: ...


@dataclass(frozen=True)
class EnvContext:
    """What an environment may need besides its descriptor (e.g. the split folder of NL2API tools)."""

    split: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Opener = Callable[[dict[str, Any], EnvContext], ToolEnvironment]
ENVIRONMENTS: Registry[Opener] = Registry(
    "tool environment",
    ("benchsmith.construction.sandbox", "benchsmith.construction.mcp", "benchsmith.construction.openapi"),
)


#: kind -> ``shared_by(descriptor, context)``: the outside service its openings share (see :func:`shared_service`)
SHARED_BY: dict[str, Callable[[dict[str, Any], EnvContext], str]] = {}


def environment(
    kind: str, *, shared_by: Callable[[dict[str, Any], EnvContext], str] | None = None
) -> Callable[[Opener], Opener]:
    """Register ``opener(descriptor, context) -> ToolEnvironment`` for descriptors ``{"kind": kind, ...}``.
    ``shared_by`` names the outside service an opening resets and uses (an HTTP service benchsmith
    does not start), for environments whose openings are not isolated from each other."""
    if shared_by is not None:
        SHARED_BY[kind] = shared_by
    return ENVIRONMENTS.register(kind)


def shared_service(descriptor: dict[str, Any], context: EnvContext | None = None) -> str | None:
    """The outside service every opening of ``descriptor`` shares (its reset would undo another
    opening's work: openings of one service must not overlap), or None when each opening is its
    own (a fresh server process, a copied database)."""
    kind = descriptor.get("kind") if isinstance(descriptor, dict) else None
    ENVIRONMENTS.get_or_raise(str(kind) if kind is not None else "None")  # loads the plug-in registering it
    shared_by = SHARED_BY.get(str(kind))
    return shared_by(descriptor, context or EnvContext()) if shared_by is not None else None


def json_view(value: Any) -> Any:
    """``value``, or the JSON object or array a text holds (what many tool servers return as text),
    so states and observations compare as data, not as spellings."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def without_volatile(value: Any, keys: Iterable[str]) -> Any:
    """``value`` with every dict entry whose key is in ``keys`` left out, at any depth (the text of
    a JSON object or array is read as JSON first, :func:`json_view`)."""
    drop = frozenset(keys)
    if not drop:
        return value
    value = json_view(value)

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items() if k not in drop}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value)


def folder_digest(folder: Path) -> dict[str, str]:
    """``relative path -> SHA-256`` of every file under ``folder`` (sorted; links not followed)."""
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        out[path.relative_to(folder).as_posix()] = digest.hexdigest()
    return out


def call_with_outputs(
    send: Callable[[str, dict[str, Any]], Any],
    outputs: dict[str, Any],
    name: str,
    arguments: dict[str, Any],
    label: str | None,
) -> Any:
    """One call to a tool server that knows no labels: ``$label$`` / ``$label.key$`` arguments filled
    in from ``outputs``, the call sent, its observation kept under ``label``. An unknown label is a
    :class:`ToolError` ``unresolved_reference`` (nothing is sent)."""
    from benchsmith.schemas import ToolError, UnresolvedReference, resolve_references

    try:
        resolved = resolve_references(arguments, outputs)
    except UnresolvedReference as exc:
        raise ToolError(f"{name}: {exc}", code="unresolved_reference") from None
    observation = send(name, resolved)
    if label:
        outputs[label] = observation
    return observation


def state_of(env: Any) -> Any:
    """The environment's state as plain JSON (``state()``), or None for one without state."""
    snap = getattr(env, "state", None)
    return json.loads(json.dumps(snap(), ensure_ascii=False, default=str)) if callable(snap) else None


def _around(before: str, after: str, context: int = 24) -> tuple[str, str]:
    """The part of two texts that differs, with a little context either side (``…`` marks a cut)."""
    p = 0
    while p < min(len(before), len(after)) and before[p] == after[p]:
        p += 1
    s = 0
    while s < min(len(before), len(after)) - p and before[-1 - s] == after[-1 - s]:
        s += 1
    start = max(0, p - context)

    def cut(text: str) -> str:
        end = min(len(text), len(text) - s + context)
        return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")

    return cut(before), cut(after)


def state_changes(before: Any, after: Any, path: str = "") -> list[str]:
    """What changed from one state to another, one line per place (``path: old → new``; a text
    shown around its changed part; JSON text compared as data).

    >>> state_changes({"files": {"a": "1", "b": "2"}, "n": 1}, {"files": {"a": "1", "c": "3"}, "n": 2})
    ["files.b: removed (was '2')", "files.c: added '3'", 'n: 1 → 2']
    """
    before, after = json_view(before), json_view(after)
    where = path or "(state)"
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in after:
                out.append(f"{sub}: removed (was {_brief(before[key])})")
            elif key not in before:
                out.append(f"{sub}: added {_brief(after[key])}")
            else:
                out += state_changes(before[key], after[key], sub)
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [line for i, (a, b) in enumerate(zip(before, after)) for line in state_changes(a, b, f"{where}.{i}")]
    if before == after:
        return []
    if isinstance(before, str) and isinstance(after, str):
        old, new = _around(before, after)
        return [f"{where}: {old or repr(old)} → {new or repr(new)}"]
    return [f"{where}: {_brief(before)} → {_brief(after)}"]


def _brief(value: Any, limit: int = 120) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def close_environment(env: Any) -> None:
    """Stop what an environment started (a server process, a work folder), if it has anything to stop."""
    close = getattr(env, "close", None)
    if callable(close):
        close()


def read_probes(
    send: Callable[[str, dict[str, Any]], Any], probes: Iterable[Any], volatile: Iterable[str], what: str
) -> list[Any]:
    """The observations of an environment's state probes (``name`` + ``arguments`` each, sent with
    ``send``), as compared: JSON text read as JSON, the ``volatile`` keys left out. A probe that fails
    is the environment's fault (``what`` names it), never the caller's."""
    out = []
    for probe in probes:
        try:
            observation = send(probe.name, dict(probe.arguments))
        except ToolError as exc:
            raise EnvironmentFault(f"{what}: state probe {probe.name} failed: {exc}") from None
        out.append(without_volatile(json_view(observation), volatile))
    return out


class KeptEnvironments:
    """Environments kept open between the nodes of an item, so a chain on a live server does not
    start a new one and replay every kept step for each step (n starts and n²/2 calls for n steps).
    ``take(item, calls)`` gives the item's environment when it has run exactly ``calls`` (else it is
    closed and None is returned: a call that was tried and not kept may have changed it);
    ``keep(item, env, calls)`` keeps one after a node; ``release(item)`` closes it (the run, when
    the item's turn ends). Nothing here is checkpointed: a resumed item opens afresh and replays."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[Any, str]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(calls: Iterable[Any]) -> str:
        return json.dumps(list(calls), sort_keys=True, ensure_ascii=False, default=str)

    def take(self, item: str, calls: Iterable[Any]) -> Any:
        with self._lock:
            kept = self._kept.pop(item, None)
        if kept is None:
            return None
        env, ran = kept
        if ran == self._key(calls):
            return env
        close_environment(env)
        return None

    def keep(self, item: str, env: Any, calls: Iterable[Any]) -> None:
        with self._lock:
            old = self._kept.pop(item, None)
            self._kept[item] = (env, self._key(calls))
        if old is not None and old[0] is not env:
            close_environment(old[0])

    def release(self, item: str) -> None:
        with self._lock:
            kept = self._kept.pop(item, None)
        if kept is not None:
            close_environment(kept[0])


def open_environment(descriptor: dict[str, Any], context: EnvContext | None = None) -> ToolEnvironment:
    """A fresh environment for ``descriptor`` (``{"kind": ..., ...}``)."""
    kind = descriptor.get("kind") if isinstance(descriptor, dict) else None
    return ENVIRONMENTS.get_or_raise(str(kind) if kind is not None else "None")(descriptor, context or EnvContext())


@environment("nl2api")
def _nl2api(descriptor: dict[str, Any], context: EnvContext) -> ToolEnvironment:
    """``{"kind": "nl2api", "style": "slot"|"sel"|"rest", "setup": [calls], "db_id"?: name}`` on
    ``context.split``. A merged split (``databases/<db_id>.sqlite``) runs on the database the
    descriptor's ``db_id`` names (the sample's ``metadata.db_id``); without one, on ``database.sqlite``."""
    from benchsmith.construction.nl2api import Database, ToolEnv
    from benchsmith.schemas import Split

    split = Path(descriptor.get("split") or context.split or "")
    db_id = descriptor.get("db_id")
    layout = Split(split)
    if db_id is None:
        if not (split / "database.sqlite").is_file():
            if layout.has_databases():
                raise UserError(
                    f"split {split} has several databases ({', '.join(layout.db_ids())}) and no "
                    "database.sqlite, and the NL2API environment names none of them",
                    fix='add the sample\'s metadata.db_id to the descriptor as "db_id"',
                )
            raise UserError(
                f"NL2API tools need their split folder; {split} has no database.sqlite",
                fix="pass the split folder (--split DIR) the samples were built from",
            )
        path = split / "database.sqlite"
    elif not isinstance(db_id, str):
        raise UserError(
            f"the NL2API environment's db_id {db_id!r} is not a string", fix="name the sample's database by its db_id"
        )
    else:
        path = layout.database_for(db_id)  # a missing database is a UserError naming the split and db_id
    cache = context.extra.setdefault("_dbs", {})

    def open_db(path: Path, db_id: str | None) -> Any:
        key = str(split) if path == split / "database.sqlite" else f"{split}::{db_id}"
        db = cache.get(key)
        if db is None:
            db = cache[key] = Database(path)
        return db

    style = descriptor.get("style", "slot")
    env = ToolEnv(split, open_db(path, db_id), style, descriptor.get("setup") or [])
    if style == "rest" and layout.has_databases():  # each endpoint of a merged split on its own database
        return _LabelledEnv(env, lambda name: open_db(layout.database_for(name), name))
    return _LabelledEnv(env)


class _LabelledEnv:
    def __init__(self, env: Any, db_for: Callable[[str], Any] | None = None) -> None:
        self._env = env
        self._n = 0
        self._db_for = db_for  # REST endpoints naming their own database (merged splits)

    def call(self, name: str, arguments: dict[str, Any], label: str | None = None) -> Any:
        self._n += 1
        endpoint = self._env.endpoints.get(name) if self._db_for is not None else None
        if endpoint is None or not endpoint.get("db_id"):
            return self._env.call(name, arguments, label or f"out_{self._n}")
        own = self._env.db
        self._env.db = self._db_for(endpoint["db_id"])
        try:
            return self._env.call(name, arguments, label or f"out_{self._n}")
        finally:
            self._env.db = own

    def answer(self, label: str) -> Any:
        """The full answer rows of the output under ``label`` (what a sample's exact answer holds)."""
        from benchsmith.construction.nl2api import result_rows

        if self._env.style == "rest":
            return [list(r) for r in (self._env.outputs[label].get("rows") or [])]
        return [list(r) for r in result_rows(self._env.runtime.outputs[label], self._env.db)]
