"""ACEBench's agent scenarios on the sandbox: :class:`AceBenchSandbox` builds a :class:`~.engine.Sandbox`
of the ACEBench-flavoured domains from an ACEBench record's ``involved_classes`` and
``initial_config``, runs calls on it and reports the end state in ACEBench's form.

ACEBench class → domain: ``BaseApi`` → ``acebench_phone``, ``MessageApi`` → ``acebench_message``,
``ReminderApi`` → ``acebench_reminder``, ``FoodPlatform`` → ``acebench_food``, ``Travel`` →
``acebench_travel``; a name of another sandbox domain (``messaging``, ``device``, ...) is that
domain, configured by ``initial_config[name]`` and reported as its snapshot (benchsmith's own agent
data exported in ACEBench's layout); other names are ignored. As in ACEBench, every class is loaded from its own
config and then from ``initial_config["BaseApi"]``, so the latter decides ``wifi`` (default
false), ``logged_in`` (default true) and the food platform's ``logged_in_users`` (default none).
The phone domain is there whenever one of the phone classes is; it is reported only when
``BaseApi`` is involved.

>>> box = AceBenchSandbox(["BaseApi", "MessageApi"], {"BaseApi": {"wifi": False, "logged_in": True}})
>>> box.call("send_message", {"sender_name": "Eve", "receiver_name": "Frank", "message": "hi"})
{'status': False, 'message': 'Wi-Fi is off'}
>>> box.call("turn_on_wifi", {})["status"]
True
>>> box.state()[0]
{'BaseApi': {'wifi': True, 'logged_in': True}}
>>> box.call("fly_away", {})
Traceback (most recent call last):
...
benchsmith.schemas._private.errors.ToolError: no such function fly_away
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchsmith.schemas import ToolError

from .acebench_apps import AceBenchDomain
from .engine import Sandbox

ACEBENCH_CLASSES: dict[str, str] = {
    "BaseApi": "acebench_phone",
    "MessageApi": "acebench_message",
    "ReminderApi": "acebench_reminder",
    "FoodPlatform": "acebench_food",
    "Travel": "acebench_travel",
}
_PHONE_CLASSES = ("BaseApi", "MessageApi", "ReminderApi", "FoodPlatform")


def _phone_config(config: Any) -> dict[str, Any]:
    return {"wifi": config.get("wifi", False), "logged_in": config.get("logged_in", True)}


def _food_config(config: Any) -> dict[str, Any]:
    return {"logged_in_users": list(config.get("logged_in_users", []))}


class AceBenchSandbox:
    """The involved ACEBench classes as sandbox domains.

    ``call(name, arguments)`` runs one call (raising ``ToolError``: ``no such function <name>``
    when no involved class has it, ACEBench's own errors, or ``<name>: <Python error>``);
    ``state()`` is the end state as ACEBench exports it, ``[{class: {key: value}}]`` in the order
    the classes are involved; ``sandbox`` is the underlying :class:`Sandbox` (``None`` when no
    known class is involved).
    """

    def __init__(self, involved: Sequence[str], initial_config: Mapping[str, Any]) -> None:
        from .engine import DOMAINS

        self.classes: list[str] = []
        for name in involved:
            if isinstance(name, str) and (name in ACEBENCH_CLASSES or name in DOMAINS) and name not in self.classes:
                self.classes.append(name)
        base = initial_config.get("BaseApi", {})
        config: dict[str, dict[str, Any]] = {}
        for name in self.classes:
            if name not in ACEBENCH_CLASSES:  # a sandbox domain by its own name (benchsmith's exported agent data)
                own = initial_config.get(name, {})
                config[name] = own if isinstance(own, dict) else {}
                continue
            own = initial_config.get(name, {})
            if name in _PHONE_CLASSES:
                _phone_config(own)  # ACEBench reads the class's own config first (then overrides it)
                config["acebench_phone"] = _phone_config(base)
            if name == "FoodPlatform":
                _food_config(own)
                config["acebench_food"] = _food_config(base)
            else:
                config.setdefault(ACEBENCH_CLASSES[name], {})
        self.sandbox: Sandbox | None = Sandbox(config) if config else None

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run one call; returns its observation or raises ``ToolError``."""
        box = self.sandbox
        if box is None or not any(name in d.specs for d in box.domains.values()):
            raise ToolError(f"no such function {name}", code="unknown_tool")
        return box.call(name, arguments)

    def state(self) -> list[dict[str, Any]]:
        """The exported state of every involved class, as ACEBench writes it."""
        out: list[dict[str, Any]] = []
        if self.sandbox is None:
            return out
        for name in self.classes:
            if name not in ACEBENCH_CLASSES:
                out.append({name: self.sandbox.domains[name].snapshot()})
                continue
            dom = self.sandbox.domains[ACEBENCH_CLASSES[name]]
            assert isinstance(dom, AceBenchDomain)
            out.append({name: dom.exported_state()})
        return out
