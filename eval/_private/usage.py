"""A run task's usage, summed from what it recorded: every turn of every line of its
``replies.jsonl`` for the run's model and prompt version (an attempt that failed and was played
again counts too: it was paid for), a reply shared with an identical request counted once. Calls of
a case killed before its line was written are not in the file, and not counted."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from benchsmith.schemas import CallUsage, RoleUsage, iter_reply_lines, tally_usage


def run_usage(
    folder: Path, model: str, prompt_version: str | None, user_model: str | None = None
) -> dict[str, RoleUsage]:
    """Usage per role of the task folder ``folder``: ``assistant`` (the model under test, ``model``)
    and ``user`` (the user simulator, ``user_model``)."""
    names = {"assistant": model, "user": user_model}

    def calls() -> Iterator[CallUsage]:
        for _, line in iter_reply_lines(folder / "replies.jsonl"):
            if line is None or line.model != model or line.prompt_version != prompt_version:
                continue
            for turn in line.turns:
                if not turn.shared:
                    yield CallUsage(
                        role=turn.role,
                        model=names.get(turn.role),
                        usage={k: v for k, v in turn.usage.items() if isinstance(v, int)},
                        latency_s=turn.latency_s,
                        finish_reason=turn.finish_reason,
                    )

    return tally_usage(calls())
