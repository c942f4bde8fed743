"""Sandbox scenarios for agent benchmarks: stateful phone apps (device, messaging, reminders,
food delivery) composed into one :class:`Sandbox`, hand-written scenarios with gold calls and
expected end states, verification by execution, and ACEBench-style end-state and process
accuracy. ACEBench's own agent apps are ACEBench-flavoured domains of the same sandbox
(``acebench_phone``, ``acebench_message``, ``acebench_reminder``, ``acebench_food``,
``acebench_travel``), built from an ACEBench record by :class:`AceBenchSandbox`. See
``docs/construction/sandbox.md``.

>>> from benchsmith.construction.sandbox import Sandbox, ToolError, end_state_accuracy
>>> sb = Sandbox({"device": {"wifi_on": False},
...               "messaging": {"owner": "Mina", "contacts": ["Tomas"]}})
>>> try:
...     sb.call("send_message", {"recipient": "Tomas", "text": "On my way"})
... except ToolError as e:
...     print(e.code)
offline
>>> sb.call("enable_wifi", {})
{'wifi_on': True, 'changed': True}
>>> sb.call("send_message", {"recipient": "Tomas", "text": "On my way"})
{'status': 'sent', 'message_id': 1, 'recipient': 'Tomas'}
>>> end_state_accuracy(sb.state(), {"messaging": {"messages": [{"recipient": "Tomas", "text": "On my way"}]}})
True
>>> [(r.name, r.ok, r.error_code) for r in sb.log]
[('send_message', False, 'offline'), ('enable_wifi', True, None), ('send_message', True, None)]

The packaged scenarios all verify:

>>> scenarios = load_scenarios()
>>> len(scenarios) >= 12 and all(verify_scenario(s).ok for s in scenarios)
True
"""

from __future__ import annotations

from benchsmith.schemas import ToolError

from ._private.acebench import ACEBENCH_CLASSES, AceBenchSandbox
from ._private.engine import DOMAINS, CallRecord, Domain, Sandbox, domain
from ._private.environment import open_sandbox
from ._private.metrics import call_signature, end_state_accuracy, process_accuracy, state_mismatches
from ._private.scenario import (
    Scenario,
    ScenarioReport,
    is_scenarios_file,
    load_scenarios,
    scenario_to_sample,
    verify_scenario,
)
from ._private.tooling import ToolSpec, tool

__all__ = [
    "ACEBENCH_CLASSES",
    "DOMAINS",
    "AceBenchSandbox",
    "CallRecord",
    "Domain",
    "Sandbox",
    "Scenario",
    "ScenarioReport",
    "ToolError",
    "ToolSpec",
    "call_signature",
    "domain",
    "end_state_accuracy",
    "is_scenarios_file",
    "load_scenarios",
    "open_sandbox",
    "process_accuracy",
    "scenario_to_sample",
    "state_mismatches",
    "tool",
    "verify_scenario",
]
