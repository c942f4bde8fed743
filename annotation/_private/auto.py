"""The whole protocol without people at the screen: push, let a policy's simulated reviewers
annotate through the API, pull, and repeat over stages and rounds until every item is decided."""

from __future__ import annotations

from typing import Any, Callable

from .finalize import counts_text
from .simulate import Policy, simulate


def review_automatically(
    workspace: Any, ls: Any, policy: Policy, *, max_rounds: int = 3, echo: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run review / adjudication rounds until no item is open (at most ``2 * max_rounds + 1`` passes)."""
    workspace.store.set_meta("max_rounds", max_rounds)
    passes = 0
    for _ in range(2 * max_rounds + 1):
        open_stages = sorted(
            {it["status"] for it in workspace.store.items() if it["status"] in ("review", "adjudicate")}
        )
        if not open_stages:
            break
        for stage in open_stages:
            pushed = workspace.push(ls, stage, max_rounds=max_rounds)
            posted = simulate(workspace, ls, policy)
            pulled = workspace.pull(ls)
            passes += 1
            if echo:
                echo(
                    f"  {stage}: {pushed.pushed} tasks pushed, {sum(posted.values())} simulated annotations, "
                    f"moved on: {counts_text(pulled['moved'])}"
                )
    return {"passes": passes, **workspace.status()}
