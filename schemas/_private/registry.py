"""One registry helper for every pluggable kind (benchmarks, scorers, tasks, graphs, checks,
environments, sandbox domains, SLOT tools): name -> object, filled by a decorator, with the
built-ins listed by module name and imported on first use (nothing is imported to register it
until someone asks for a name), plus plug-ins from outside the project.

Plug-ins: ``$BENCHSMITH_PLUGINS`` lists modules or folders (separated by ``,`` or the path
separator) to import before the first lookup in any registry; an installed distribution may
name modules in the ``benchsmith.plugins`` entry-point group instead. A plug-in registers its
parts with the same decorators the built-ins use.

>>> COLOURS: Registry[str] = Registry("colour")
>>> @COLOURS.register("red")
... def red() -> str:
...     return "#f00"
>>> COLOURS["red"](), sorted(COLOURS), "blue" in COLOURS
('#f00', ['red'], False)
>>> COLOURS.get_or_raise("blue")
Traceback (most recent call last):
...
benchsmith.schemas._private.errors.UserError: unknown colour 'blue' (fix: use one of red)
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

from .errors import UserError

T = TypeVar("T")

ENV_PLUGINS = "BENCHSMITH_PLUGINS"
ENTRY_POINT_GROUP = "benchsmith.plugins"

_PLUGIN_LOCK = threading.RLock()
_PLUGINS_LOADED: set[str] = set()


def load_plugins(spec: str | None = None) -> list[str]:
    """Import the plug-ins named in ``spec`` (default ``$BENCHSMITH_PLUGINS``) and the
    ``benchsmith.plugins`` entry points, each once per process; the module names imported.

    An entry is a module name (``my_pkg.bench``) or a folder holding a package (its
    ``__init__.py`` is imported under the folder's name). One that cannot be imported is a
    :class:`UserError` naming it."""
    spec = os.environ.get(ENV_PLUGINS, "") if spec is None else spec
    entries = [e.strip() for part in spec.split(os.pathsep) for e in part.split(",") if e.strip()]
    done = []
    with _PLUGIN_LOCK:
        if "<entry points>" not in _PLUGINS_LOADED:
            _PLUGINS_LOADED.add("<entry points>")
            from importlib.metadata import entry_points

            for ep in entry_points(group=ENTRY_POINT_GROUP):
                _import_plugin(ep.value, f"entry point {ep.name} = {ep.value}")
                done.append(ep.value)
        for entry in entries:
            if entry in _PLUGINS_LOADED:
                continue
            _PLUGINS_LOADED.add(entry)
            done.append(_import_plugin(entry, f"{ENV_PLUGINS} entry {entry!r}"))
    return done


def _import_plugin(entry: str, where: str) -> str:
    path = Path(entry).expanduser()
    try:
        if path.is_dir():
            init = path / "__init__.py"
            if not init.is_file():
                raise UserError(
                    f"{where}: {path} has no __init__.py",
                    fix="point at a folder holding a Python package, or name a module",
                )
            name = path.resolve().name
            if name in sys.modules:
                return name
            spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(path)])
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(name, None)
                raise
            return name
        importlib.import_module(entry)
        return entry
    except UserError:
        raise
    except ImportError as exc:
        raise UserError(
            f"{where} cannot be imported: {exc}",
            fix=f"install it, or fix ${ENV_PLUGINS} (modules or folders, comma-separated)",
        ) from None


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for ``package``'s public names that live in heavier modules,
    imported on first use: ``names`` maps a name to its module, relative to ``package`` (``"._task"``).
    So importing a package to score with it does not import what only running or deriving needs."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module, package), name)

    return __getattr__


_FIRST_PART = re.compile(r"[.:]")


def _home_name(module: str) -> str:
    """The name a built-in module is the home of: its last part, or the one before a private last part
    (``benchsmith.eval.acebench._task`` is the home of ``acebench``)."""
    parts = module.split(".")
    return parts[-2] if parts[-1].startswith("_") and len(parts) > 1 else parts[-1]


class Registry(MutableMapping[str, T], Generic[T]):
    """``name -> object`` for one kind of plug-in.

    ``builtins`` are modules each registering its parts with :meth:`register`, imported when first
    needed: a lookup of a name whose first part names one of them (its last part, or the one before a
    private last part) imports that one (:meth:`find`);
    listing, or any other name, imports them all (once, in order) and the plug-ins. ``set_name`` sets the registered object's ``name``
    attribute to its name. A name registered twice is a ``ValueError`` (a programming error).
    """

    def __init__(
        self,
        kind: str,
        builtins: Sequence[str] = (),
        *,
        set_name: bool = False,
        check: Callable[[str, Any], Any] | None = None,
    ) -> None:
        self.kind = kind
        self.builtins = tuple(builtins)
        self._homes = {_home_name(m): m for m in reversed(self.builtins)}  # first part -> module (the first wins)
        self.set_name = set_name
        self._check = check
        self._items: dict[str, T] = {}
        self._loaded = False
        self._searched: set[str] = set()  # built-in modules imported (with the plug-ins) by find
        self._lock = threading.RLock()

    # -- registering ------------------------------------------------------------------------------
    def register(self, name: str) -> Callable[[Any], Any]:
        """A decorator registering its target under ``name``."""

        def deco(target: Any) -> Any:
            self.add(name, target)
            return target

        return deco

    def add(self, name: str, value: Any) -> Any:
        """Register ``value`` under ``name`` (``check`` may turn it into what is stored)."""
        if name in self._items:
            raise ValueError(f"{self.kind} {name} registered twice")
        stored = self._check(name, value) if self._check is not None else value
        if self.set_name:
            value.name = name
        self._items[name] = stored
        return stored

    # -- looking up -----------------------------------------------------------------------------
    def load(self) -> None:
        """Import the built-ins and the plug-ins (once)."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            self._loaded = True  # set first: the modules imported below look names up while registering
            try:
                for module in self.builtins:
                    importlib.import_module(module)
                load_plugins()
            except BaseException:
                self._loaded = False
                raise

    def find(self, name: str) -> bool:
        """Whether ``name`` is registered, importing no more than it takes: a name whose first part
        (before ``.`` or ``:``) names a built-in module looks there, then in the plug-ins (a plug-in
        may add a scorer to a built-in benchmark); any other name loads everything. Scoring one
        benchmark so never imports the others (nor what they need: databases, the sandbox, sqlglot)."""
        if name in self._items or self._loaded:
            return name in self._items
        home = self._homes.get(_FIRST_PART.split(name, maxsplit=1)[0])
        if home is None:
            self.load()
            return name in self._items
        if home not in self._searched:
            with self._lock:
                importlib.import_module(home)
                load_plugins()
                self._searched.add(home)
        return name in self._items

    def peek(self, name: str) -> T | None:
        """The object registered as ``name`` so far, importing nothing (for a module that registers
        while it is being imported, so a lookup must not import the others)."""
        return self._items.get(name)

    def get_or_raise(self, name: str, fix: str | None = None) -> T:
        """The object registered as ``name``; an unknown name is a :class:`UserError` listing the known ones."""
        if not self.find(name):
            self.load()
            raise UserError(f"unknown {self.kind} {name!r}", fix=fix or f"use one of {', '.join(sorted(self._items))}")
        return self._items[name]

    def get(self, name: str, default: Any = None) -> Any:
        """The object registered as ``name``, else ``default`` (without raising and catching a
        ``KeyError``: scoring asks once per record for a per-category scorer that rarely exists)."""
        return self._items[name] if self.find(name) else default

    def __getitem__(self, name: str) -> T:
        self.find(name)
        return self._items[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name)

    def __iter__(self) -> Iterator[str]:
        self.load()
        return iter(list(self._items))

    def __len__(self) -> int:
        self.load()
        return len(self._items)

    def __setitem__(self, name: str, value: T) -> None:
        self._items[name] = value

    def __delitem__(self, name: str) -> None:
        del self._items[name]

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {sorted(self._items)})"
