"""Episodes: the model under test as an agent talking with a simulated user, its calls executing in
the case's own environment, within budgets (``docs/eval/episodes.md``).

* writing an episodic task: :class:`EpisodeTask` (a ``Task`` whose ``spec`` gives an
  :class:`EpisodeSpec`), :class:`EpisodeEnv` (what an environment offers), :class:`LabelledEnv`
* running one: :func:`run_episode` -> :class:`Episode`; :class:`Budgets`; :class:`Journal` (every
  finished turn, so a killed episode resumes)
* reading one: :func:`episode_prediction` (what scorers read), :func:`clean_summary`,
  :func:`error_type` (the error type of an ended episode)
* how episodes end: :data:`END_REASONS` = :data:`NORMAL_ENDS` + :data:`USER_FAILURES` +
  :data:`BUDGET_ENDS`; :data:`STOP_PHRASE`

>>> from benchsmith.eval.episodes import NORMAL_ENDS
>>> NORMAL_ENDS
('user_stop', 'assistant_done')
"""

from typing import TYPE_CHECKING

from benchsmith.eval._private.episode_ends import (
    BUDGET_ENDS,
    END_REASONS,
    NORMAL_ENDS,
    STOP_PHRASE,
    USER_FAILURES,
    clean_summary,
    error_type,
)
from benchsmith.schemas import lazy_exports

if TYPE_CHECKING:
    from benchsmith.eval._private.episode import (
        Budgets,
        Episode,
        EpisodeEnv,
        EpisodeSpec,
        EpisodeTask,
        Journal,
        LabelledEnv,
        episode_prediction,
        run_episode,
    )

# the engine, imported on first use: a scorer reading how an episode ended (clean_summary, error_type)
# does not load it and the runner under it
__getattr__ = lazy_exports(
    __name__,
    dict.fromkeys(
        ("Budgets", "Episode", "EpisodeEnv", "EpisodeSpec", "EpisodeTask", "Journal", "LabelledEnv")
        + ("episode_prediction", "run_episode"),
        "benchsmith.eval._private.episode",
    ),
)

__all__ = [
    "BUDGET_ENDS",
    "END_REASONS",
    "NORMAL_ENDS",
    "STOP_PHRASE",
    "USER_FAILURES",
    "Budgets",
    "Episode",
    "EpisodeEnv",
    "EpisodeSpec",
    "EpisodeTask",
    "Journal",
    "LabelledEnv",
    "clean_summary",
    "episode_prediction",
    "error_type",
    "run_episode",
]
