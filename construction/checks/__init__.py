"""Automated quality checks for constructed samples: pure functions registered by name with
:func:`check`, run as an ordered tuple by :func:`run_checks`; a rejected sample keeps every
failing check and its reason.

>>> DEFAULT_CHECKS
('tool_docs', 'gold_signature', 'gold_references')
"""
from ._engine import CHECKS, CheckReport, check, failed, passed, run_checks
from . import signature as _signature, tool_docs as _tool_docs  # noqa: F401 - registration

DEFAULT_CHECKS: tuple[str, ...] = ("tool_docs", "gold_signature", "gold_references")

__all__ = ["CHECKS", "DEFAULT_CHECKS", "CheckReport", "check", "failed", "passed", "run_checks"]
