"""Automated quality checks for constructed samples: pure functions registered by name with
:func:`check` (``(sample)`` or ``(sample, context)``), run as an ordered tuple by
:func:`run_checks`; a rejected sample keeps every failing check and its reason. Set-level steps:
:func:`near_duplicates`, and :func:`check_samples` for a whole file with an error-candidate pool.
See ``docs/construction/checks.md``.

>>> DEFAULT_CHECKS
('tool_docs', 'query_clarity', 'gold_signature', 'gold_references', 'dialogue_consistency', 'executability', 'model_vote')
"""

from benchsmith.construction import EnvContext

from ._engine import CHECKS, CheckContext, CheckReport, check, failed, passed, run_checks, skipped
from .dedupe import Duplicate, near_duplicates
from .pool import NEAR_DUPLICATE, CheckSummary, check_samples

DEFAULT_CHECKS: tuple[str, ...] = (
    "tool_docs",
    "query_clarity",
    "gold_signature",
    "gold_references",
    "dialogue_consistency",
    "executability",
    "model_vote",
)

__all__ = [
    "CHECKS",
    "DEFAULT_CHECKS",
    "NEAR_DUPLICATE",
    "CheckContext",
    "CheckReport",
    "CheckSummary",
    "Duplicate",
    "EnvContext",
    "check",
    "check_samples",
    "failed",
    "near_duplicates",
    "passed",
    "run_checks",
    "skipped",
]
