"""The one way a job runs many items at once (``construct``, ``eval run``): at most ``concurrency``
in flight, a call back per finished item (the progress bar), and the one stop rule: stop after N
items in a row failed because the endpoint did not answer, so a server that went down costs N
requests, not the whole run; what finished is kept and a re-run resumes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable, TypeVar

T = TypeVar("T")


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


async def run_items(
    items: Iterable[T],
    work: Callable[[T], Awaitable[bool]],
    *,
    concurrency: int,
    stop_after: int,
    done: Callable[[T], None] | None = None,
) -> int | None:
    """Run ``work(item)`` for every item, at most ``concurrency`` at once, started in the order of
    ``items``; ``done(item)`` after each that finished. ``work`` returns True when its item failed
    because the endpoint did not answer (:class:`FailureStreak`): once ``stop_after`` items in a row
    did, no further item starts, those running finish, and the length of the streak is returned
    (None when no streak stopped the job). An exception from ``work`` also stops new items from
    starting and is raised once the running ones have finished, so nothing finished is lost."""
    import asyncio  # here: scoring imports this package and never runs a job

    streak = FailureStreak(stop_after)
    gate = asyncio.Semaphore(max(1, concurrency))
    stopped: int | None = None
    error: BaseException | None = None

    async def one(item: T) -> None:
        nonlocal stopped, error
        async with gate:
            if stopped is not None or error is not None:
                return
            try:
                failed = await work(item)
            except Exception as exc:  # noqa: BLE001 - raised below, after the running items finish
                error = error or exc
                return
            if done is not None:
                done(item)
            if streak.record(failed) and stopped is None:
                stopped = streak.count

    await asyncio.gather(*(one(item) for item in items))
    if error is not None:
        raise error
    return stopped


def run_items_in_threads(
    items: Iterable[T],
    work: Callable[[T], bool],
    *,
    concurrency: int,
    stop_after: int,
    done: Callable[[T], None] | None = None,
) -> int | None:
    """:func:`run_items` for a blocking ``work`` (a LangGraph graph's ``invoke``), each item in a
    thread of a pool of ``concurrency``. Ctrl-C starts no further item; the running ones finish
    (their checkpoints keep them) before ``KeyboardInterrupt`` is raised."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:

        async def in_thread(item: T) -> bool:
            return await asyncio.get_running_loop().run_in_executor(pool, work, item)

        return asyncio.run(run_items(items, in_thread, concurrency=concurrency, stop_after=stop_after, done=done))
