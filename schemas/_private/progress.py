"""The one progress display of long jobs: rich bars (label, bar, done/total, elapsed, eta) that are
cleared when the job ends, so the summary line printed next stays the record. Nothing is drawn when
the output is not a terminal (logs and pipes get only the summaries) or when disabled.

A command opens the display (``with Bars():``); every job inside it, however deep, adds its bar to
that one display: a nested ``Bars`` reuses it (rich allows one live display), and a job that does
not know who called it takes a bar with :func:`progress_bar` (a bar that draws nothing when no
display is open), so scoring, self-tests and derivations show progress in the main job too.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Iterator
from types import TracebackType
from typing import Any


class Bar:
    """One bar of :class:`Bars`: ``advance()`` after each item, or ``update(done, total)`` (the
    ``progress`` callback of :func:`benchsmith.construction.run_graph` and the NL2API build)."""

    def __init__(self, progress: Any, task: Any) -> None:
        self._progress, self._task = progress, task

    def advance(self, n: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def update(self, done: int, total: int | None = None) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=done, total=total)


class Bars:
    """``with Bars() as bars: bar = bars.add("queries", total=10)``; one live display for any number of
    bars."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self._progress: Any = None
        self._owner = False  # whether this display started the live display (else it shares an outer one)
        self._tasks: list[Any] = []
        self._token: contextvars.Token[Bars | None] | None = None

    def __enter__(self) -> Bars:
        outer = _ACTIVE.get()
        if outer is not None and outer._progress is not None:
            self._progress = outer._progress if self.enabled else None
        elif self.enabled and _maybe_terminal():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            console = Console(stderr=True)
            if console.is_terminal:
                self._progress = Progress(
                    TextColumn("{task.description:>16}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    TextColumn("eta"),
                    TimeRemainingColumn(),
                    console=console,
                    transient=True,
                )
                self._progress.__enter__()
                self._owner = True
        self._token = _ACTIVE.set(self)
        return self

    def add(self, label: str, total: int | None = None, done: int = 0) -> Bar:
        """A new bar; ``total`` None until the job knows it (then it shows activity, not a share)."""
        if self._progress is None:
            return Bar(None, None)
        task = self._progress.add_task(label, total=total, completed=done)
        self._tasks.append(task)
        return Bar(self._progress, task)

    def remove(self, bar: Bar) -> None:
        """Take ``bar`` off the display (its job is done; the display goes on)."""
        if self._progress is not None and bar._task in self._tasks:
            self._tasks.remove(bar._task)
            self._progress.remove_task(bar._task)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._token is not None:
            _ACTIVE.reset(self._token)
            self._token = None
        if self._progress is not None:
            if self._owner:
                self._progress.__exit__(kind, exc, tb)
            else:  # a shared display goes on: only this one's bars leave it
                for task in self._tasks:
                    self._progress.remove_task(task)
            self._progress, self._owner, self._tasks = None, False, []


def _maybe_terminal() -> bool:
    """Whether rich could take stderr for a terminal (its own test decides), checked first so that
    a command whose output goes to a log or a pipe does not import rich at all."""
    env = os.environ
    if env.get("TTY_COMPATIBLE") == "1" or env.get("FORCE_COLOR"):
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


#: the display the current command opened, if any
_ACTIVE: contextvars.ContextVar[Bars | None] = contextvars.ContextVar("benchsmith_bars", default=None)


@contextlib.contextmanager
def progress_bar(label: str, total: int | None = None) -> Iterator[Bar]:
    """A bar on the display the caller opened (``with Bars():``) for the duration of the block, or one
    that draws nothing when none is open: for jobs that do not know who runs them (scoring)."""
    display = _ACTIVE.get()
    if display is None or display._progress is None:
        yield Bar(None, None)
        return
    bar = display.add(label, total)
    try:
        yield bar
    finally:
        display.remove(bar)
