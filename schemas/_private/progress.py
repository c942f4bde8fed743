"""The one progress display of long jobs: rich bars (label, bar, done/total, elapsed, eta) that are
cleared when the job ends, so the summary line printed next stays the record. Nothing is drawn when
the output is not a terminal (logs and pipes get only the summaries) or when disabled."""

from __future__ import annotations

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

    def __enter__(self) -> Bars:
        if self.enabled:
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
        return self

    def add(self, label: str, total: int | None = None, done: int = 0) -> Bar:
        """A new bar; ``total`` None until the job knows it (then it shows activity, not a share)."""
        if self._progress is None:
            return Bar(None, None)
        return Bar(self._progress, self._progress.add_task(label, total=total, completed=done))

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.__exit__(kind, exc, tb)
            self._progress = None
