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

from benchsmith.eval._private.episode import (
    BUDGET_ENDS,
    END_REASONS,
    NORMAL_ENDS,
    STOP_PHRASE,
    USER_FAILURES,
    Budgets,
    Episode,
    EpisodeEnv,
    EpisodeSpec,
    EpisodeTask,
    Journal,
    LabelledEnv,
    clean_summary,
    episode_prediction,
    error_type,
    run_episode,
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
