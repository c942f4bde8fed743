"""The one stop rule of every job that sends many requests at once (``construct``, ``eval run``): stop
after N items in a row failed because the endpoint did not answer, so a server that went down costs
N requests, not the whole run; what finished is kept and a re-run resumes."""

from __future__ import annotations

from dataclasses import dataclass


def failure_limit(concurrency: int) -> int:
    """The default N: ``concurrency`` requests in flight can all fail at one blip of the endpoint, so
    the limit is above twice that (and at least 8)."""
    return max(8, 2 * concurrency + 2)


@dataclass
class FailureStreak:
    """Consecutive endpoint failures: ``record(failed)`` after each item, True once ``limit`` in a row
    failed. A request the endpoint refused (HTTP 4xx) is an answer, not a failure: callers record it
    as ``failed=False``."""

    limit: int
    count: int = 0

    def record(self, failed: bool) -> bool:
        self.count = self.count + 1 if failed else 0
        return self.count >= self.limit
