"""Agent episodes on benchsmith's own multi-turn data: sandbox scenarios (stateful domains with
preconditions) and dialogues built by ``benchsmith construct dialogues``, played by the model under
test against a simulated user. Scored by end state (the environment's final state against the
expected one; NL2API dialogues: the last answer against the gold answer), process accuracy
(milestones reached in order), error types and, over trials, pass^k / pass@k. See
``docs/eval/episodes.md``.

>>> from benchsmith.eval import get_benchmark
>>> cases = get_benchmark("agent").load("sandbox")     # the packaged sandbox scenarios
>>> len(cases) >= 12 and {c.category for c in cases} == {"scenario"}
True
"""

from typing import TYPE_CHECKING

from benchsmith.schemas import lazy_exports

from ._plugin import AgentBench, load_agent_cases

if TYPE_CHECKING:
    from ._task import AgentTask

# the run task and derivers, imported on first use (scoring needs neither, nor the runner under them)
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("AgentTask",), "._task"),
    },
)

__all__ = ["AgentBench", "AgentTask", "load_agent_cases"]
