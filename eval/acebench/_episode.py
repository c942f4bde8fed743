"""ACEBench's agent categories as episodes: ``agent_multi_turn`` (a simulated user holds the
instruction and reveals it step by step) and ``agent_multi_step`` (solo: the instruction is the one
user message), the calls running on the record's involved classes in the unified sandbox
(:class:`~benchsmith.construction.sandbox.AceBenchSandbox`, a fresh one per episode).

The prediction is ACEBench's own inference record, ``{"result": end state, "process": [one call
string per assistant reply that ran calls]}``, plus benchsmith's episode fields (``calls``,
``episode``, ``transcript``), so the agent scorer grades it in both modes: official mode grades the
reported end state, strict mode replays the process strings.
"""

from __future__ import annotations

import json
from typing import Any

from benchsmith.construction.sandbox import AceBenchSandbox
from benchsmith.eval import EvalCase
from benchsmith.eval.calls import python_calls
from benchsmith.eval.episodes import Episode, EpisodeSpec, episode_prediction


class _Env:
    """An :class:`AceBenchSandbox` seen as an episode environment."""

    def __init__(self, case_input: dict[str, Any]) -> None:
        involved = [c for c in case_input.get("involved_classes") or [] if isinstance(c, str)]
        config = case_input.get("initial_config")
        self.box = AceBenchSandbox(involved, config if isinstance(config, dict) else {})

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.box.call(name, arguments)

    def state(self) -> Any:
        return self.box.state()


def episode_spec(case: EvalCase) -> EpisodeSpec:
    """The episode of one agent record (pure: the environment opens only when the episode starts)."""
    inp = case.input
    tools = [f for f in inp.get("function") or [] if isinstance(f, dict) and f.get("name")]
    context = f"The current time is {inp['time']}." if inp.get("time") else ""
    return EpisodeSpec(
        instruction=str(inp.get("question") or ""),
        tools=tools,
        open_env=lambda: _Env(inp),
        context=context,
        solo=case.category == "agent_multi_step",
    )


def process_strings(episode: Episode) -> list[str]:
    """One ``[f(a=1), g()]`` string per tool turn, holding the calls that ran (a failed call ends
    its turn, as in ACEBench's execution role), in order."""
    out = []
    for ev in episode.events:
        if ev["who"] != "tool":
            continue
        ran = [{"name": o["name"], "arguments": o["arguments"]} for o in ev["observations"] if o["status"] != "not_run"]
        if ran:
            out.append(python_calls(ran))
    return out


def prediction(case: EvalCase, episode: Episode) -> str:
    """ACEBench's inference record for the episode. As in ACEBench, ``result`` holds the classes'
    end state only when some call ran (no call: an empty list)."""
    ran = any(ev["who"] == "tool" for ev in episode.events)
    result = episode.final_state if ran and isinstance(episode.final_state, list) else []
    return json.dumps(
        {"result": result, "process": process_strings(episode), **episode_prediction(episode)},
        ensure_ascii=False,
        default=str,
    )
