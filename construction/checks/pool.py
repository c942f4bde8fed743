"""The whole-file pass: run the checks on every sample, drop near-duplicates among the samples
that passed, and write what was accepted and an error-candidate pool of what was not.

``out_dir`` receives (all written atomically):

* ``accepted.jsonl``: the accepted samples, each with ``verification.checks`` holding this run's
  results (earlier checks of other names are kept; a sample without a verification gets
  ``{"status": "verified", "method": "quality-checks"}``);
* ``error_pool.jsonl``: one row per rejected sample,
  ``{"sample": ..., "rejected_by": check, "reasons": [{"check", "code", "reason"}, ...]}``; a
  near-duplicate has ``rejected_by`` ``"near_duplicate"`` and ``duplicate_of`` (the kept id);
* ``check_summary.json``: counts (see :class:`CheckSummary`).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from benchsmith.construction import EnvContext
from benchsmith.schemas import CheckResult, Sample, UserError, Verification, read_jsonl, write_json, write_jsonl

from ._engine import CheckContext, resolve_names, run_checks
from .dedupe import near_duplicates

NEAR_DUPLICATE = "near_duplicate"


@dataclass
class CheckSummary:
    """What a :func:`check_samples` pass did (also written to ``check_summary.json``)."""

    total: int
    accepted: int
    rejected: int
    checks: list[str]
    rejected_by_check: dict[str, int] = field(default_factory=dict)  # first failing check (or near_duplicate)
    rejected_by_code: dict[str, int] = field(default_factory=dict)  # its code
    failed_by_check: dict[str, int] = field(default_factory=dict)  # every failing result counts
    skipped_by_check: dict[str, int] = field(default_factory=dict)  # passing results with code "skipped"
    near_duplicates: int = 0
    near_dup_threshold: float | None = None
    out_dir: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _load(samples: str | os.PathLike[str] | Iterable[Sample | dict[str, Any]]) -> tuple[list[Sample], Path | None]:
    if isinstance(samples, (str, os.PathLike)):
        path = Path(samples)
        return read_jsonl(path, Sample), path
    out = []
    for k, s in enumerate(samples, 1):
        if isinstance(s, Sample):
            out.append(s)
        elif isinstance(s, dict):
            try:
                out.append(Sample.model_validate(s))
            except ValueError as exc:
                raise UserError(
                    f"sample {k} of the given list is not a valid sample: {exc}"[:600],
                    fix="pass benchsmith Sample objects or their JSON",
                ) from None
        else:
            raise UserError(f"sample {k} of the given list is a {type(s).__name__}", fix="pass Samples or dicts")
    return out, None


def _verified(sample: Sample, results: list[CheckResult], now: datetime) -> Sample:
    names = {r.name for r in results}
    old = sample.verification
    if old is None:
        ver = Verification(status="verified", method="quality-checks", checks=results, verified_at=now)
    else:
        ver = old.model_copy(update={"checks": [c for c in old.checks if c.name not in names] + results})
    return sample.model_copy(update={"verification": ver})


def _reason(r: CheckResult) -> dict[str, Any]:
    return {"check": r.name, "code": r.code, "reason": r.reason}


def check_samples(
    samples: str | os.PathLike[str] | Iterable[Sample | dict[str, Any]],
    out_dir: str | os.PathLike[str],
    names: Iterable[str] | None = None,
    context: CheckContext | None = None,
    dedupe: bool = True,
    embedder: Any = None,
) -> CheckSummary:
    """Check every sample (a JSONL path or a list), then drop near-duplicates among those that
    passed (``dedupe``; threshold ``context.near_dup_threshold``), and write ``accepted.jsonl``,
    ``error_pool.jsonl`` and ``check_summary.json`` into ``out_dir``.

    Given a path inside a split folder (one with ``database.sqlite`` or ``databases/``) and a context without a split,
    that folder is used as the split, so ``executability`` can replay NL2API samples. A bad input
    line is a ``UserError`` naming ``file:line``.
    """
    order = resolve_names(names)
    items, path = _load(samples)
    ctx = context if context is not None else CheckContext()
    if (
        path is not None
        and ctx.env.split is None
        and ((path.parent / "database.sqlite").is_file() or (path.parent / "databases").is_dir())
    ):
        ctx = replace(ctx, env=EnvContext(split=path.parent, extra=ctx.env.extra))
    now = datetime.now(timezone.utc)
    passing: list[tuple[Sample, list[CheckResult]]] = []
    pool: list[dict[str, Any]] = []
    rejected_by: Counter[str] = Counter()
    rejected_code: Counter[str] = Counter()
    failed_by: Counter[str] = Counter()
    skipped_by: Counter[str] = Counter()
    for sample in items:
        report = run_checks(sample, order, ctx)
        for r in report.results:
            if not r.ok:
                failed_by[r.name] += 1
            elif r.code == "skipped":
                skipped_by[r.name] += 1
        if report.accepted:
            passing.append((sample, report.results))
            continue
        first = report.rejected_by
        assert first is not None
        rejected_by[first.name] += 1
        rejected_code[first.code or "?"] += 1
        pool.append(
            {
                "sample": sample.model_dump(mode="json"),
                "rejected_by": first.name,
                "reasons": [_reason(r) for r in report.failures],
            }
        )
    dups = near_duplicates([s for s, _ in passing], ctx.near_dup_threshold, embedder) if dedupe else []
    dropped = {d.index: d for d in dups}
    accepted = []
    for k, (sample, results) in enumerate(passing):
        d = dropped.get(k)
        if d is None:
            accepted.append(_verified(sample, results, now))
            continue
        kept = passing[d.duplicate_of][0]
        rejected_by[NEAR_DUPLICATE] += 1
        rejected_code[NEAR_DUPLICATE] += 1
        pool.append(
            {
                "sample": sample.model_dump(mode="json"),
                "rejected_by": NEAR_DUPLICATE,
                "duplicate_of": kept.id,
                "reasons": [
                    {
                        "check": NEAR_DUPLICATE,
                        "code": NEAR_DUPLICATE,
                        "reason": f"cosine {d.cosine:.3f} with {kept.id} (kept), at or above {ctx.near_dup_threshold}",
                    }
                ],
            }
        )
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"{out}: cannot create the output folder: {exc.strerror or exc}", fix="choose a writable --out folder"
        ) from None
    write_jsonl(out / "accepted.jsonl", accepted)
    write_jsonl(out / "error_pool.jsonl", pool)
    summary = CheckSummary(
        total=len(items),
        accepted=len(accepted),
        rejected=len(pool),
        checks=list(order),
        rejected_by_check=dict(rejected_by.most_common()),
        rejected_by_code=dict(rejected_code.most_common()),
        failed_by_check=dict(failed_by.most_common()),
        skipped_by_check=dict(skipped_by.most_common()),
        near_duplicates=len(dups),
        near_dup_threshold=ctx.near_dup_threshold if dedupe else None,
        out_dir=str(out),
    )
    write_json(out / "check_summary.json", summary.to_json())
    return summary
