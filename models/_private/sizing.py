"""How big the local model server should be on this machine.

llama.cpp on a CPU: processing a prompt is compute-bound (more slots than cores only split the same
cores), generating is memory-bound (slots generating together share each pass over the weights).
So the server gets one slot per core (at most :data:`MAX_SLOTS`), each slot just the context the
prompts need: the longest prompt the default tasks send plus a reply. Those lengths are measured,
not guessed: ``python perf/prompt_sizes.py RUN_DIR`` reads the token counts the server reported for
every request of a run (``usage.prompt_tokens`` in ``replies.jsonl``) and prints them per task.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the longest prompt, in Gemma 3 tokens, of each task, measured by perf/prompt_sizes.py on the main
#: job's runs (``benchsmith demo``; ReAct turns included). NL2API ReAct: at ``eval run``'s default
#: step budget (12); the main job's budget of 6 gave 6,477. ACEBench special, T-Eval, GTA and the
#: agent prompts state a split's column list once, after the tools (``hoist_columns``); before, the
#: longest ACEBench-special prompt was 12,628 tokens
MEASURED_PROMPT_TOKENS = {
    "nl2api": 10802,
    "acebench_special": 4408,
    "teval": 4366,
    "gta": 3312,
    "nl2api-direct": 2777,
    "toolassess": 1535,
    "agent": 1437,
}
#: the longest prompt of the main job (``benchsmith demo``: NL2API at a step budget of 6, replies of
#: at most 256 tokens), measured by perf/prompt_sizes.py on its runs: Gemma 3 270M's T-Eval 7,014
#: tokens, Qwen2.5-Coder 0.5B's NL2API 4,215 and 1.5B's 5,240 (at 4b07326). Its server is sized for
#: this, not for ``eval run``'s budgets: 9,216 tokens per slot instead of 14,336 keep about 125 MB of
#: Qwen 0.5B's cache free (docs/models.md)
MAIN_JOB_PROMPT_TOKENS = 7014
#: the reply budget the main job allows per request
REPLY_TOKENS = 256
#: the cases a run draws differ from run to run, and so does the longest prompt (the longest
#: ACEBench-special prompt of the main job was 11,593 tokens in one run and 12,628 in the next,
#: before the column lists were hoisted):
#: each slot holds this much more than the longest measured prompt
MARGIN = 1.25
MAX_SLOTS = 4
#: contexts are allocated in whole blocks of this many tokens
BLOCK = 1024


@dataclass(frozen=True)
class ServerPlan:
    """Slots and context per slot for the local server, and why."""

    parallel: int
    ctx_per_slot: int
    reason: str


def plan_local_server(cores: int, longest_prompt: int | None = None, reply_tokens: int = REPLY_TOKENS) -> ServerPlan:
    """One slot per core (1..MAX_SLOTS); each slot holds the longest prompt (with a margin of
    :data:`MARGIN`) plus a reply, in blocks.

    >>> plan_local_server(2)
    ServerPlan(parallel=2, ctx_per_slot=14336, reason='2 cores -> 2 slots; longest measured prompt 10802 x 1.25 + 256 reply tokens -> 14336 per slot')
    >>> plan_local_server(16, longest_prompt=3000).parallel, plan_local_server(16, longest_prompt=3000).ctx_per_slot
    (4, 4096)
    """
    longest = longest_prompt if longest_prompt is not None else max(MEASURED_PROMPT_TOKENS.values())
    slots = max(1, min(MAX_SLOTS, cores))
    need = int(longest * MARGIN) + reply_tokens
    ctx = max(BLOCK, -(-need // BLOCK) * BLOCK)
    source = "longest measured prompt" if longest_prompt is None else "longest prompt"
    return ServerPlan(
        slots,
        ctx,
        f"{cores} cores -> {slots} slots; {source} {longest} x {MARGIN:g} + {reply_tokens} reply tokens "
        f"-> {ctx} per slot",
    )


def concurrency_for(config: object, default: int = 4) -> int:
    """Requests to keep in flight for ``config`` (a :class:`ModelConfig`): the local model's running
    server's slots (more only queue up inside it, fewer leave slots idle), else ``default``."""
    if getattr(config, "local", False):
        from benchsmith.models._private.server import local_server_status
        from benchsmith.schemas import UserError

        try:
            info = local_server_status(getattr(config, "name", None))
        except UserError:  # a hand-made config whose name is no local model: no server of its own
            return default
        if info is not None and getattr(config, "base_url", None) == info.base_url:
            return info.parallel
    return default
