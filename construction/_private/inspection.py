"""The whole quality-inspection pass: the rule checks (and near-duplicate removal) first, then k
voter models vote on what passed (the ``vote`` graph, resumable), then the ``model_vote`` check;
everything rejected, at either stage, lands in one error-candidate pool with its reasons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchsmith.schemas import write_json, write_jsonl


def inspect_samples(
    samples: str | Path,
    out: str | Path,
    *,
    models: Any = None,
    names: list[str] | None = None,
    context: Any = None,
    dedupe: bool = True,
    concurrency: int = 4,
    embedder: Any = None,
) -> dict[str, Any]:
    """Check ``samples`` into ``out``: ``accepted.jsonl``, ``error_pool.jsonl``, ``check_summary.json``.
    With ``models`` (role models with voters), accepted samples are voted on and must pass ``model_vote``."""
    from benchsmith.construction.checks import DEFAULT_CHECKS, check_samples

    from .run import run_graph

    out = Path(out)
    order = list(names) if names is not None else list(DEFAULT_CHECKS)
    voting = models is not None and "model_vote" in order
    rules = [n for n in order if n != "model_vote"]
    first = check_samples(samples, out / "rules", rules, context, dedupe=dedupe, embedder=embedder)
    pool = _rows(out / "rules" / "error_pool.jsonl")
    summary: dict[str, Any] = {"rules": first.to_json()}
    accepted_path = out / "rules" / "accepted.jsonl"
    if voting:
        vote = run_graph("vote", accepted_path, out / "vote", models=models, concurrency=concurrency)
        summary["vote"] = vote.to_dict()
        second = check_samples(out / "vote" / "samples.jsonl", out / "voted", ["model_vote"], context, dedupe=False)
        summary["model_vote"] = second.to_json()
        pool += _rows(out / "voted" / "error_pool.jsonl")
        accepted_path = out / "voted" / "accepted.jsonl"
    accepted = _rows(accepted_path)
    write_jsonl(out / "accepted.jsonl", accepted)
    write_jsonl(out / "error_pool.jsonl", pool)
    by: dict[str, int] = {}
    for row in pool:
        by[row["rejected_by"]] = by.get(row["rejected_by"], 0) + 1
    summary.update(
        {
            "total": first.total,
            "accepted": len(accepted),
            "rejected": len(pool),
            "rejected_by_check": dict(sorted(by.items(), key=lambda kv: -kv[1])),
            "model_calls": summary.get("vote", {}).get("model_calls", 0),
        }
    )
    write_json(out / "check_summary.json", summary)
    return summary


def _rows(path: Path) -> list[dict[str, Any]]:
    import json

    if not path.is_file():
        return []
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


__all__ = ["inspect_samples"]
