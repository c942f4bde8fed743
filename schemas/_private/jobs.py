"""The one way a job runs many items at once (``construct``, ``eval run``): at most ``concurrency``
in flight, a call back per finished item (the progress bar), and the one stop rule: stop after N
items in a row failed because the endpoint did not answer, so a server that went down costs N
requests, not the whole run; what finished is kept and a re-run resumes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")


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
    work: Callable[[T], Awaitable[R]],
    *,
    concurrency: int,
    stop_after: int | None = None,
    done: Callable[[T, R], None] | None = None,
    failed: Callable[[R], bool] = bool,
    in_order: bool = False,
) -> int | None:
    """Run ``work(item)`` for every item, at most ``concurrency`` at once, started in the order of
    ``items`` and read from it as the work goes (an input of any length holds ``concurrency`` items);
    ``done(item, result)`` after each that finished, in input order with ``in_order`` (a finished
    item waits for those before it, and counts against ``concurrency`` while it waits).

    ``failed(result)`` says whether the item failed because the endpoint did not answer (default:
    the result itself, a bool): once ``stop_after`` items in a row did (:class:`FailureStreak`; None:
    never), no further item starts, those running finish, and the length of the streak is returned
    (None when no streak stopped the job). An exception from ``work`` also stops new items from
    starting and is raised once the running ones have finished, so nothing finished is lost."""
    import asyncio  # here: scoring imports this package and never runs a job

    streak = FailureStreak(stop_after) if stop_after is not None else None
    source = iter(items)
    running: set[asyncio.Future[tuple[int, T, R]]] = set()
    waiting: dict[int, tuple[T, R]] = {}  # finished, not yet handed on (in_order)
    started = handed = 0
    stopped: int | None = None
    error: BaseException | None = None

    async def one(n: int, item: T) -> tuple[int, T, R]:
        return n, item, await work(item)

    def fill() -> None:
        nonlocal started
        while stopped is None and error is None and len(running) + len(waiting) < max(1, concurrency):
            try:
                item = next(source)
            except StopIteration:
                return
            running.add(asyncio.ensure_future(one(started, item)))
            started += 1

    def hand_on(item: T, result: R) -> None:
        nonlocal stopped
        if done is not None:
            done(item, result)
        if streak is not None and streak.record(failed(result)) and stopped is None:
            stopped = streak.count

    try:
        fill()
        while running:
            finished, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                running.discard(task)
                try:
                    n, item, result = task.result()
                except Exception as exc:  # noqa: BLE001 - raised below, after the running items finish
                    error = error or exc
                    continue
                if in_order:
                    waiting[n] = (item, result)
                else:
                    hand_on(item, result)
            while handed in waiting:
                hand_on(*waiting.pop(handed))
                handed += 1
            fill()
    finally:  # cancelled (Ctrl-C): cancel what runs, so nothing is left pending
        for task in running:
            task.cancel()
    if error is not None:
        raise error
    return stopped


def run_items_in_threads(
    items: Iterable[T],
    work: Callable[[T], bool],
    *,
    concurrency: int,
    stop_after: int,
    done: Callable[[T, bool], None] | None = None,
) -> int | None:
    """:func:`run_items` for a blocking ``work`` (a LangGraph graph's ``invoke``) that returns whether
    its item failed because the endpoint did not answer, each item in a thread of a pool of
    ``concurrency``. Ctrl-C starts no further item; the running ones
    finish (their checkpoints keep them) before ``KeyboardInterrupt`` is raised."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:

        async def in_thread(item: T) -> bool:
            return await asyncio.get_running_loop().run_in_executor(pool, work, item)

        return asyncio.run(run_items(items, in_thread, concurrency=concurrency, stop_after=stop_after, done=done))
