"""The sandbox engine: domains registered by name, composed into one :class:`Sandbox` from an
initial config, with every call checked, run transactionally and logged.

A domain is a class with a typed ``State`` model and ``@tool`` methods. Tools read and change
``self.state`` and raise ``ToolError`` (with a ``code``) when a precondition fails; the engine then
restores the domain's state, so a failed call never leaves half a change behind. Before a tool
runs, every other domain of the sandbox may veto it through :meth:`Domain.guard` (the device
domain blocks network tools while the Wi-Fi is off). Nothing reads the wall clock or draws random
numbers: times and ids come from the state.

A domain with ``loose = True`` follows ACEBench's calling convention instead (its ACEBench-flavoured
domains, ``acebench_*``): arguments reach the method as given (no schema check, no conversion, no
``$label$`` references), a Python error inside the tool (a missing or unknown argument, a value of
the wrong type) becomes a ``ToolError`` with code ``tool_failed``, and nothing is rolled back, so a
call that fails part-way keeps what it changed before failing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Callable, ClassVar, TypeVar

from pydantic import Field, ValidationError

from benchsmith.schemas import (
    Registry,
    StrictModel,
    Tool,
    ToolError,
    UnresolvedReference,
    UserError,
    resolve_references,
)

from .tooling import ToolSpec, build_spec, is_tool

D = TypeVar("D", bound=type)
DOMAINS: Registry[type["Domain"]] = Registry(
    "sandbox domain",
    tuple(
        f"benchsmith.construction.sandbox._private.{m}"
        for m in ("device", "food", "messaging", "reminders", "acebench_apps", "acebench_travel")
    ),
)


class Domain:
    """Base of a sandbox domain. Subclasses set ``State`` (a strict pydantic model) and mark tools
    with ``@tool``; ``@domain(name)`` registers them and builds their tool schemas."""

    name: ClassVar[str] = ""
    State: ClassVar[type[StrictModel]]
    needs_network: ClassVar[bool] = False
    loose: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    specs: ClassVar[dict[str, ToolSpec]] = {}

    def __init__(self, state: StrictModel, sandbox: Sandbox) -> None:
        self.state = state
        self.sandbox = sandbox

    def guard(self, caller: Domain, tool_name: str) -> None:
        """Raise ``ToolError`` to stop ``caller``'s tool from running (default: allow)."""

    def snapshot(self) -> dict[str, Any]:
        """The domain's state as JSON (what :meth:`Sandbox.state` shows)."""
        return self.state.model_dump(mode="json")


def domain(name: str) -> Callable[[D], D]:
    """Register a :class:`Domain` subclass under ``name`` (its config key and tool ``domain``)."""

    def deco(cls: D) -> D:
        # peek, not `name in DOMAINS`: a lookup would import every other domain and the plug-ins
        if DOMAINS.peek(name) is not None:
            raise ValueError(f"sandbox domain {name} registered twice")
        if not (isinstance(cls, type) and issubclass(cls, Domain)):
            raise TypeError(f"@domain({name!r}) needs a Domain subclass")
        state = getattr(cls, "State", None)
        if not (isinstance(state, type) and issubclass(state, StrictModel)):
            raise TypeError(f"sandbox domain {name}: State must be a StrictModel subclass")
        specs = {}
        for attr in dir(cls):
            member = getattr(cls, attr)
            if is_tool(member):
                specs[attr] = build_spec(name, member)
        if not specs:
            raise TypeError(f"sandbox domain {name} has no @tool methods")
        cls.name = name
        cls.specs = specs
        DOMAINS.add(name, cls)
        return cls

    return deco


class CallRecord(StrictModel):
    """One call made on a sandbox: what was asked, and what came back or why it failed."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    label: str | None = None
    domain: str | None = None
    ok: bool
    observation: Any = None
    error_code: str | None = None
    error: str | None = None


class Sandbox:
    """Domains composed from ``config`` (``{domain name: initial state}``); a tool environment.

    ``call`` runs one tool and returns its JSON-able observation or raises ``ToolError``;
    arguments may refer to earlier labelled outputs (``"$order.order_id$"``).
    """

    def __init__(self, config: Mapping[str, Any]) -> None:
        if not isinstance(config, Mapping) or not config:
            raise UserError(
                "a sandbox config must be a non-empty JSON object {domain: state}",
                fix=f"use domains from {', '.join(sorted(DOMAINS))}",
            )
        self.domains: dict[str, Domain] = {}
        owner: dict[str, str] = {}
        for name, raw in config.items():
            cls = DOMAINS.get(name)
            if cls is None:
                raise UserError(f"unknown sandbox domain {name!r}", fix=f"use one of {', '.join(sorted(DOMAINS))}")
            self.domains[name] = cls(_load_state(cls, raw), self)
            for tool_name in cls.specs:
                if tool_name in owner:
                    raise UserError(
                        f"sandbox domains {owner[tool_name]} and {name} both define tool {tool_name}",
                        fix="configure only one of them",
                    )
                owner[tool_name] = name
        for name, dom in self.domains.items():
            missing = [r for r in dom.requires if r not in self.domains]
            if missing:
                raise UserError(
                    f"sandbox domain {name} needs domain(s) {', '.join(missing)} in the same config",
                    fix=f"add {', '.join(repr(m) for m in missing)} to the config",
                )
        self._owner = owner
        self.log: list[CallRecord] = []
        self.outputs: dict[str, Any] = {}

    def tools(self) -> list[Tool]:
        """The tools of every configured domain, in config order then by name."""
        return [d.specs[n].schema for d in self.domains.values() for n in sorted(d.specs)]

    def state(self) -> dict[str, Any]:
        """A JSON-able snapshot of every domain's state."""
        return {name: d.snapshot() for name, d in self.domains.items()}

    def call(self, name: str, arguments: dict[str, Any] | None = None, label: str | None = None) -> Any:
        """Run tool ``name``; returns its observation or raises ``ToolError`` (state unchanged,
        except in a ``loose`` domain)."""
        arguments = {} if arguments is None else arguments
        owner = self._owner.get(name) if isinstance(name, str) else None
        record = CallRecord(name=str(name), arguments=_safe_arguments(arguments), label=label, domain=owner, ok=False)
        try:
            observation = self._run(name, arguments, record)
        except ToolError as exc:
            record.error_code, record.error = exc.code, str(exc)
            self.log.append(record)
            raise
        record.ok, record.observation = True, observation
        self.log.append(record)
        if label:
            self.outputs[label] = observation
        return copy.deepcopy(observation)  # the caller may change it; the log keeps its own

    def _run(self, name: str, arguments: Any, record: CallRecord) -> Any:
        owner = self._owner.get(name) if isinstance(name, str) else None
        if owner is None:
            raise ToolError(f"no tool named {name!r}; tools: {', '.join(sorted(self._owner))}", code="unknown_tool")
        if self.domains[owner].loose:
            return self._run_loose(name, arguments, self.domains[owner])
        try:
            arguments = resolve_references(arguments, self.outputs)
        except UnresolvedReference as exc:
            raise ToolError(f"{name}: {exc.reason}", code="unresolved_reference") from None
        dom = self.domains[owner]
        spec = dom.specs[name]
        record.arguments = _safe_arguments(arguments)
        if "_unreadable" in record.arguments:
            raise ToolError(f"{name}: arguments must be JSON values", code="bad_arguments")
        kwargs = spec.bind(arguments)
        for other in self.domains.values():
            if other is not dom:
                other.guard(dom, name)
        backup = dom.state.model_copy(deep=True)
        try:
            result = getattr(dom, spec.method)(**kwargs)
            return _jsonable(result)
        except BaseException:
            dom.state = backup
            raise

    def _run_loose(self, name: str, arguments: Any, dom: Domain) -> Any:
        """ACEBench's convention: arguments as given, errors of the tool become ``tool_failed``,
        no rollback (see the module docstring)."""
        if not isinstance(arguments, dict) or not all(isinstance(k, str) for k in arguments):
            raise ToolError(f"{name}: arguments must be a JSON object", code="bad_arguments")
        for other in self.domains.values():
            if other is not dom:
                other.guard(dom, name)
        try:
            result = getattr(dom, dom.specs[name].method)(**copy.deepcopy(arguments))
        except ToolError:
            raise
        except Exception as exc:  # noqa: BLE001 - as in ACEBench, any failure of the tool fails the call
            raise ToolError(f"{name}: {type(exc).__name__}", code="tool_failed") from None
        return _loose_jsonable(result)


def _load_state(cls: type[Domain], raw: Any) -> StrictModel:
    if not isinstance(raw, Mapping):
        raise UserError(
            f"sandbox config of domain {cls.name} must be a JSON object, got {type(raw).__name__}",
            fix=f"give the initial state of {cls.name} as an object",
        )
    try:
        return cls.State.model_validate(dict(raw))
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "(state)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise UserError(
            f"sandbox config {cls.name}.{where}: {err['msg']}{more}",
            fix=f"correct field {where!r} of domain {cls.name}",
        ) from None


def _jsonable(value: Any) -> Any:
    """A detached JSON copy of ``value`` (pydantic models dumped)."""

    def default(obj: Any) -> Any:
        if isinstance(obj, StrictModel):
            return obj.model_dump(mode="json")
        raise TypeError(f"sandbox observation holds a {type(obj).__name__}")

    return json.loads(json.dumps(value, default=default))


def _loose_jsonable(value: Any) -> Any:
    """A detached JSON copy of ``value`` with values JSON lacks written as text (never raises)."""
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError, RecursionError):
        return repr(value)[:2000]


def _safe_arguments(arguments: Any) -> dict[str, Any]:
    """The arguments as logged: a JSON copy, or their text when they are not JSON."""
    if not isinstance(arguments, dict):
        return {}
    try:
        return _jsonable(arguments)
    except (TypeError, ValueError):
        return {"_unreadable": repr(arguments)[:200]}
