"""The report's "About this run" block: for each run, which model answered (the registry's title,
base or instruction-tuned, the weights file's size and sha256), which split it was evaluated on
(manifest name and version, whether the reviewers' verdicts were supplied automatically, the
models that made the accepted items) and how many cases each task had, answered and scored, so a
figure is read next to what it rests on.

Gold self-test results are not shown: ``eval selftest`` writes them to a folder of its own, which
neither the run folder nor the split records.
"""

from __future__ import annotations

from typing import Any, Sequence

from . import metrics as M
from .load import ModelInfo, Run, SplitInfo, TaskResults

SHA_SHOWN = 12  # hex characters of a sha256 shown (the full value in a tooltip / the Markdown)
_STATUS_NAMES = (
    ("ok", "ok"),
    ("format_error", "format error"),
    ("request_error", "request error"),
    ("transport_error", "transport error"),
    ("environment_error", "environment error"),
    ("pending", "pending"),
)


def _part(text: str, full: str | None = None, title: str = "", code: bool = False) -> dict[str, Any]:
    """One piece of a fact: ``text`` in the HTML (``title`` its tooltip), ``full`` in the Markdown."""
    return {"text": text, "full": full if full is not None else text, "title": title, "code": code}


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def _sha(label: str, sha: str) -> dict[str, Any]:
    return _part(f"{label} {sha[:SHA_SHOWN]}…", f"{label} {sha}", title=sha, code=True)


def model_parts(m: ModelInfo) -> list[dict[str, Any]]:
    parts = [_part(m.name if m.title is None else f"{m.name} — {m.title}")]
    parts.append(_part("local" if m.local else "remote endpoint"))
    if m.instruct is not None:
        parts.append(_part("instruction-tuned" if m.instruct else "base model (not instruction-tuned)"))
    if m.size is not None:
        parts.append(_part(f"weights file {_size(m.size)}", title=f"{m.size:,} bytes"))
    if m.file_sha256:
        parts.append(_sha("sha256", m.file_sha256))
        if m.pinned_sha256 and m.pinned_sha256 != m.file_sha256:
            parts.append(
                _part(
                    f"not the registry's pinned file ({m.pinned_sha256[:SHA_SHOWN]}…)",
                    f"not the registry's pinned file ({m.pinned_sha256})",
                    title=m.pinned_sha256,
                )
            )
    elif m.local:
        parts.append(_part("weights sha256 not recorded in run.json"))
    return parts


def split_facts(s: SplitInfo) -> list[dict[str, Any]]:
    named = " ".join(x for x in (s.name, s.version) if x)
    facts = [{"key": "Split", "parts": ([_part(named)] if named else []) + [_part(s.path)]}]
    if s.simulated_reviewers is not None:
        facts.append(
            {
                "key": "Review",
                "parts": [
                    _part(
                        "the reviewers' verdicts were supplied automatically (simulated reviewers, not people)"
                        if s.simulated_reviewers
                        else "the reviewers' verdicts were given by people (no simulated reviewer)"
                    )
                ],
            }
        )
    if s.producers is not None:
        parts = []
        for p in s.producers:
            items = "" if p.samples is None else f", {p.samples:,} item{'s' if p.samples != 1 else ''}"
            if p.file_sha256:
                sha = p.file_sha256
                parts.append(
                    _part(
                        f"{p.model} (sha256 {sha[:SHA_SHOWN]}…{items})", f"{p.model} (sha256 {sha}{items})", title=sha
                    )
                )
            else:
                parts.append(_part(f"{p.model} (remote{items})"))
        facts.append(
            {
                "key": "Accepted items made by",
                "parts": parts or [_part("no model (no accepted item was made by a model)")],
            }
        )
    return facts


def _statuses(task: TaskResults) -> str:
    """``4 ok, 1 format error``: the replies' statuses (as the leaderboard counts them) and run.json's
    pending cases."""
    counts = M.reply_status_counts(task)
    pending = (task.info.status_counts or {}).get("pending")
    if pending:
        counts["pending"] = int(pending)
    return ", ".join(f"{counts[k]:,} {name}" for k, name in _STATUS_NAMES if counts.get(k))


def task_row(task: TaskResults) -> dict[str, Any]:
    done = task.done
    scored = task.scored_cases
    if not task.scored:
        note = "not scored"
    elif scored is None:
        note = "scores.json does not say how many records it scored"
    elif scored == 0:
        note = "no data: no case was scored"
    elif task.few_cases:
        note = f"its figures rest on {scored} case{'s' if scored != 1 else ''} only"
    else:
        note = ""
    scored_text = "not scored" if not task.scored else "—" if scored is None else f"{scored:,}"
    return {
        "task": task.name,
        "cases": f"{task.cases:,}",
        "answered": "—" if done is None else f"{done:,}",
        "statuses": _statuses(task),
        "scored": scored,
        "scored_text": scored_text,
        "few": task.few_cases,
        "gold": _gold(task),
        "note": note,
    }


def _gold(task: TaskResults) -> str:
    """``4/4``: of the scored cases, how many pass with their gold answer as the prediction
    (scores.json ``gold_selftest``, written by ``eval score`` since issue 27); "—" when not recorded."""
    g = (task.scores or {}).get("gold_selftest")
    records = M.num(g.get("records")) if isinstance(g, dict) else None
    failing = M.num(g.get("gold_failing")) if isinstance(g, dict) else None
    if records is None or failing is None:
        return "—"
    return f"{int(records - failing):,}/{int(records):,}"


def about(runs: Sequence[Run], labels: Sequence[str], colours: Sequence[str]) -> list[dict[str, Any]]:
    """The block's content per run, as plain data (no markup)."""
    out = []
    for i, run in enumerate(runs):
        facts = [{"key": "Model", "parts": model_parts(run.model_info or ModelInfo(name=run.model, local=False))}]
        if run.split_info is not None:
            facts += split_facts(run.split_info)
        out.append(
            {
                "i": i,
                "label": labels[i],
                "colour": colours[i],
                "run_id": run.run_id,
                "facts": facts,
                "tasks": [task_row(t) for t in run.tasks.values()],
            }
        )
    return out
