"""File-level runs: ``eval score`` and ``eval selftest`` (thin I/O around the pure core).

Both stream: cases are read one at a time (:meth:`Benchmark.iter_cases`), predictions are looked
up by line offset (:class:`Predictions`), each record goes to ``records.jsonl`` as soon as it
is scored and its slim row (:meth:`Benchmark.row`) to a list; ``scores.json`` (the benchmark's
metrics over that list) and ``selftest.json`` are written once every record is.

The output folder appears all at once: when it holds nothing but what scoring writes
(``records.jsonl``, ``scores.json``, ``selftest.json``, temporary files) or does not exist, every
file is written into a fresh folder beside it, which then replaces it
(:func:`benchsmith.schemas.swap_folder`), so a kill (even ``kill -9``) leaves the old set or the
new one, never new records beside old scores. A folder that holds other files too (a run's task
folder: cases, predictions, replies) gets per-file atomic writes instead, ``scores.json`` last
and the old one removed just before the new ``records.jsonl`` replaces the old: a ``scores.json``
there (newer than ``records.jsonl``) means a finished scoring of those records.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from benchsmith.schemas import (
    BadPredictionLine,
    RecordResult,
    ScoreHead,
    ScoreIntervals,
    SelftestFailure,
    UserError,
    iter_records,
    scores_object,
    swap_folder,
    write_records,
    write_scores,
    write_selftest,
)

from .core import (
    MODES,
    Benchmark,
    EvalCase,
    Mode,
    Predictions,
    Row,
    get_benchmark,
    iter_scored,
)
from .stats import IntervalOptions, figure_intervals


def check_mode(mode: str) -> Mode:
    if mode not in MODES:
        raise UserError(f"unknown mode {mode!r}", fix="use strict or official")
    return mode  # type: ignore[return-value]


#: what ``eval score`` / ``eval selftest`` write into their output folder
OWNED = frozenset({"records.jsonl", "scores.json", "selftest.json"})


def _owned(name: str) -> bool:
    return name in OWNED or (name.startswith(".") and name.endswith(".tmp"))


def _swappable(out: Path) -> bool:
    """Whether ``out`` can be replaced whole: absent, or a real folder (not a link, not the working
    folder) holding only what scoring writes."""
    if not out.exists():
        return not out.is_symlink()
    if not out.is_dir():
        return True  # swap_folder reports a file in the way
    if out.is_symlink() or out.resolve() == Path.cwd().resolve():
        return False
    return all(_owned(p.name) for p in out.iterdir())


def write_outputs(out: Path, build: Callable[[Path], None]) -> None:
    """Run ``build(folder)``, which writes the scoring's files into ``folder`` (``scores.json``
    last), so that ``out`` gets them all at once (a fresh folder swapped in) when it holds nothing
    else; else into ``out`` itself, file by file."""
    if not _swappable(out):
        out.mkdir(parents=True, exist_ok=True)
        build(out)
        return

    def fill(fresh: Path) -> None:
        if out.is_dir():
            os.chmod(fresh, stat.S_IMODE(out.stat().st_mode))
        build(fresh)

    swap_folder(out, fill, owned=_owned, what="eval score")


def stream_score(
    bench: Benchmark,
    cases: Iterable[EvalCase],
    prediction_for: Callable[[EvalCase], str | None],
    mode: Mode,
    out: Path,
    extra: Callable[[int], ScoreHead],
    on_record: Callable[[RecordResult], None] | None = None,
    before_scores: Callable[[Path], None] | None = None,
    intervals: IntervalOptions | None = None,
) -> dict[str, Any]:
    """Score ``cases`` into ``out/records.jsonl`` one record at a time (a temporary file that
    replaces the old one once every record is written) and write ``out/scores.json`` last:
    ``extra(records)`` (its :class:`~benchsmith.schemas.ScoreHead`, built when all are scored), then
    the benchmark's metrics over the rows (:func:`iter_scored`).
    ``before_scores(out)`` writes what else belongs to the set (``selftest.json``). With
    ``intervals``, every estimate among the figures gets its bootstrap interval
    (:func:`figure_intervals`). An old
    ``scores.json`` is removed just before the new records replace the old ones, so that a
    ``scores.json`` beside a ``records.jsonl`` always describes it."""
    rows: list[Row] = []
    done: list[tuple[ScoreHead, dict[str, Any], ScoreIntervals | None]] = []

    def records() -> Iterator[RecordResult]:
        for record in iter_scored(bench, cases, prediction_for, mode, rows):
            if on_record is not None:
                on_record(record)
            yield record
        # complete before the temporary records file replaces the old one
        figures = bench.metrics(rows, mode)
        spread = (
            None
            if intervals is None
            else figure_intervals(lambda rs: bench.metrics(rs, mode), rows, figures, intervals)
        )
        done.append((extra(len(rows)), figures, spread))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(out / "scores.json")  # it described the old records

    write_records(out / "records.jsonl", records())
    if before_scores is not None:
        before_scores(out)
    head, figures, spread = done[0]
    write_scores(out / "scores.json", head, figures, spread)
    return scores_object(head, figures, spread)


def _first_then_rest(cases: Iterable[EvalCase]) -> Iterator[EvalCase]:
    """``cases`` with its first case read now (a folder or file the benchmark cannot read is
    reported before the predictions are), the rest as they are asked for."""
    it = iter(cases)
    head = list(itertools.islice(it, 1))
    return itertools.chain(head, it)


def run_score(
    benchmark: str,
    data: str | Path,
    predictions: str | Path,
    out: str | Path,
    mode: str = "strict",
    options: Mapping[str, str | None] | None = None,
    intervals: IntervalOptions | None = None,
) -> dict[str, Any]:
    """Score a predictions file against a benchmark's data; writes scores.json and records.jsonl.

    ``options`` configure the benchmark (e.g. BFCL's ``{"format": "fc"}``; see :func:`get_benchmark`);
    ``intervals`` how the figures' intervals are made (default :class:`IntervalOptions`).
    """
    m = check_mode(mode)
    bench = get_benchmark(benchmark, **(options or {}))
    cases = _first_then_rest(bench.iter_cases(Path(data)))
    with Predictions(predictions) as preds:
        missing = 0

        def prediction_for(case: EvalCase) -> str | None:
            nonlocal missing
            pred = preds.get(case.id)
            missing += pred is None
            return pred

        def extra(records: int) -> ScoreHead:
            return ScoreHead(
                benchmark=benchmark,
                mode=m,
                records=records,
                missing_predictions=missing,
                unknown_prediction_ids=preds.never_asked(100),
                bad_prediction_lines=[BadPredictionLine(line=n, reason=why) for n, why in preds.bad_lines[:100]],
                duplicate_prediction_ids=preds.duplicates[:100],
            )

        scores: dict[str, Any] = {}

        def build(folder: Path) -> None:
            scores.update(
                stream_score(bench, cases, prediction_for, m, folder, extra, intervals=intervals or IntervalOptions())
            )

        write_outputs(Path(out), build)
        return scores


def run_selftest(
    benchmark: str,
    data: str | Path,
    out: str | Path,
    mode: str = "strict",
    options: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """Score the gold answers as predictions; list every record whose gold cannot pass."""
    m = check_mode(mode)
    bench = get_benchmark(benchmark, **(options or {}))
    failing = 0

    def count(record: RecordResult) -> None:
        nonlocal failing
        failing += not record.ok

    head = ScoreHead(benchmark=benchmark, mode=m, records=0)

    def extra(records: int) -> ScoreHead:
        nonlocal head
        head = ScoreHead(benchmark=benchmark, mode=m, records=records, gold_failing=failing)
        return head

    scores: dict[str, Any] = {}

    def build(folder: Path) -> None:
        scores.update(
            stream_score(
                bench,
                bench.iter_cases(Path(data)),
                bench.gold_prediction,
                m,
                folder,
                extra,
                count,
                lambda f: write_selftest(f / "selftest.json", head, lambda: _failing(f / "records.jsonl")),
            )
        )

    write_outputs(Path(out), build)
    return scores


def _failing(records: Path) -> Iterator[SelftestFailure]:
    """A self-test's failing records, read back from its records file one line at a time."""
    for r in iter_records(records):
        if r is not None and not r.ok:
            yield SelftestFailure(id=r.id, category=r.category, error_type=r.error_type, reason=r.reason)
