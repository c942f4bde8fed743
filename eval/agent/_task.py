"""The ``agent`` run task: each case is an episode (a simulated user with the case's goal and
persona, the model under test with the case's tools, calls running in a fresh copy of the case's
environment)."""

from __future__ import annotations

import json

from benchsmith.construction import EnvContext, shared_service
from benchsmith.eval import EvalCase, task
from benchsmith.eval.episodes import Episode, EpisodeSpec, EpisodeTask, LabelledEnv, episode_prediction

from ._plugin import AgentBench, open_case_env, split_dir


@task(AgentBench)
class AgentTask(EpisodeTask):
    description = "episodes against a simulated user: sandbox scenarios and constructed dialogues"
    min_cases = 2

    def episode_spec(self, case: EvalCase) -> EpisodeSpec:
        inp = case.input
        return EpisodeSpec(
            instruction=inp["instruction"],
            tools=inp.get("tools") or [],
            open_env=lambda: LabelledEnv(open_case_env(case)),
            persona=inp.get("persona"),
            shared=shared_service(inp["environment"], EnvContext(split=split_dir(case))),
        )

    def prediction(self, case: EvalCase, episode: Episode) -> str:
        return json.dumps(episode_prediction(episode), ensure_ascii=False, default=str)
