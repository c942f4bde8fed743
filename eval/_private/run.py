"""File-level runs: ``eval score`` and ``eval selftest`` (thin I/O around the pure core).

Both stream: cases are read one at a time (:meth:`Benchmark.iter_cases`), predictions are looked
up by line offset (:class:`PredictionIndex`), each record goes to a temporary ``records.jsonl`` as
soon as it is scored and to the benchmark's :class:`Aggregator` (running sums). When every record
is written the temporary file replaces ``records.jsonl`` and ``scores.json`` (and
``selftest.json``) follow at once; an error or a kill while scoring leaves the previous output
as it was.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from benchsmith.schemas import UserError, loads_json, write_json, write_jsonl

from .core import (
    MODES, Benchmark, EvalCase, Mode, PredictionIndex, RecordResult, ScoreRun, get_benchmark, iter_scored,
)


def _check_mode(mode: str) -> Mode:
    if mode not in MODES:
        raise UserError(f"unknown mode {mode!r}", fix="use strict or official")
    return mode  # type: ignore[return-value]


def _record_line(r: RecordResult) -> dict[str, Any]:
    line = {"id": r.id, "category": r.category, "ok": r.ok, "score": r.score, "error_type": r.error_type,
            "reason": r.reason}
    if r.details:
        line["details"] = r.details
    return line


def _write(out: Path, run: ScoreRun, extra: dict[str, Any]) -> dict[str, Any]:
    """Write a scored run held in memory (``records.jsonl``, ``scores.json``)."""
    scores = {**extra, **run.scores}
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "records.jsonl", [_record_line(r) for r in run.records])
    write_json(out / "scores.json", scores)
    return scores


def stream_score(bench: Benchmark, cases: Iterable[EvalCase], prediction_for: Callable[[EvalCase], str | None],
                 mode: Mode, out: Path, extra: Callable[[int], dict[str, Any]],
                 on_record: Callable[[RecordResult], None] | None = None) -> dict[str, Any]:
    """Score ``cases`` into ``out/records.jsonl`` one record at a time (a temporary file that
    replaces the old one once every record is written) and write ``out/scores.json``:
    ``extra(records)`` (the run's own fields, built when all are scored), then the aggregate."""
    acc = bench.start_aggregate(mode)
    scores: dict[str, Any] = {}

    def lines() -> Iterator[dict[str, Any]]:
        n = 0
        for case, record in iter_scored(bench, cases, prediction_for, mode):
            n += 1
            acc.add(case, record)
            if on_record is not None:
                on_record(record)
            yield _record_line(record)
        # complete before the temporary records file replaces the old one
        scores.update({**extra(n), **acc.result()})

    write_jsonl(out / "records.jsonl", lines())
    write_json(out / "scores.json", scores)
    return scores


def _first_then_rest(cases: Iterable[EvalCase]) -> Iterator[EvalCase]:
    """``cases`` with its first case read now (a folder or file the benchmark cannot read is
    reported before the predictions are), the rest as they are asked for."""
    it = iter(cases)
    head = list(itertools.islice(it, 1))
    return itertools.chain(head, it)


def run_score(benchmark: str, data: str | Path, predictions: str | Path, out: str | Path,
              mode: str = "strict", options: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """Score a predictions file against a benchmark's data; writes scores.json and records.jsonl.

    ``options`` configure the benchmark (e.g. BFCL's ``{"format": "fc"}``; see :func:`get_benchmark`).
    """
    m = _check_mode(mode)
    bench = get_benchmark(benchmark, **(options or {}))
    cases = _first_then_rest(bench.iter_cases(Path(data)))
    with PredictionIndex(predictions) as preds:
        missing = 0

        def prediction_for(case: EvalCase) -> str | None:
            nonlocal missing
            pred = preds.get(case.id)
            missing += pred is None
            return pred

        def extra(records: int) -> dict[str, Any]:
            return {"benchmark": benchmark, "mode": m, "records": records, "missing_predictions": missing,
                    "unknown_prediction_ids": preds.never_asked(100),
                    "bad_prediction_lines": [{"line": n, "reason": why} for n, why in preds.bad_lines[:100]],
                    "duplicate_prediction_ids": preds.duplicates[:100]}

        return stream_score(bench, cases, prediction_for, m, Path(out), extra)


def run_selftest(benchmark: str, data: str | Path, out: str | Path, mode: str = "strict",
                 options: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """Score the gold answers as predictions; list every record whose gold cannot pass."""
    m = _check_mode(mode)
    bench = get_benchmark(benchmark, **(options or {}))
    head: dict[str, Any] = {"benchmark": benchmark, "mode": m}
    failing = 0

    def count(record: RecordResult) -> None:
        nonlocal failing
        failing += not record.ok

    def extra(records: int) -> dict[str, Any]:
        head["records"] = records
        return {**head, "gold_failing": failing}

    scores = stream_score(bench, bench.iter_cases(Path(data)), bench.gold_prediction, m, Path(out), extra, count)
    _write_selftest(Path(out) / "selftest.json", head, Path(out) / "records.jsonl")
    return scores


def _failing_lines(records: Path) -> Iterator[dict[str, Any]]:
    """A self-test's failing entries, read back from its records file one line at a time."""
    with open(records, encoding="utf-8") as fh:
        for line in fh:
            r = loads_json(line)
            if not r["ok"]:
                yield {"id": r["id"], "category": r["category"], "error_type": r["error_type"], "reason": r["reason"]}


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _file_mode(target: Path) -> int:
    if target.exists():
        return stat.S_IMODE(target.stat().st_mode)
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _write_selftest(target: Path, head: dict[str, Any], records: Path) -> None:
    """``selftest.json``: ``head`` and the ``failing`` entries, streamed from the records file (two
    passes, no list), byte for byte as :func:`write_json` writes the whole object; atomically."""
    def dumps(obj: Any, ascii_only: bool) -> str:
        return json.dumps(obj, ensure_ascii=ascii_only, indent=2, allow_nan=False)

    # write_json falls back to \u escapes for the whole file when any text is not UTF-8-encodable
    ascii_only = not _utf8(dumps(head, False)) or not all(_utf8(dumps(e, False)) for e in _failing_lines(records))
    mode = _file_mode(target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            text = dumps({**head, "failing": []}, ascii_only)
            entries = _failing_lines(records)
            first = next(entries, None)
            if first is None:
                fh.write(text + "\n")
            else:
                fh.write(text[: -len("[]\n}")] + "[\n")
                for i, entry in enumerate(itertools.chain([first], entries)):
                    body = "\n".join("    " + ln for ln in dumps(entry, ascii_only).split("\n"))
                    fh.write((",\n" if i else "") + body)
                fh.write("\n  ]\n}\n")
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
