"""``benchsmith eval run`` as one typed config: every option declared here once (default, range,
description), so the CLI only parses flags into a :class:`RunConfig` and calls :func:`run_configured`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field

from .runner import Calling, RunResult, TaskOptions, run_eval

#: ``RunConfig`` field (dotted inside ``options``) -> the ``eval run`` flag that sets it, so a refused
#: value is reported under the name the user typed
RUN_FLAGS = {
    "split": "--split",
    "out": "--out",
    "model": "--model",
    "base_url": "--base-url",
    "calling": "--calling",
    "concurrency": "--concurrency",
    "tasks": "--tasks",
    "limit": "--limit",
    "seed": "--seed",
    "timeout": "--timeout",
    "rps": "--rps",
    "max_retries": "--max-retries",
    "categories": "--categories",
    "task_data": "--task-data",
    "user_model": "--user-model",
    "options.max_tokens": "--max-tokens",
    "options.step_budget": "--step-budget",
    "options.variant": "--prompt-variant",
    "options.strategy": "--strategy",
    "options.trials": "--trials",
    "options.trial_temperature": "--trial-temperature",
    "options.max_turns": "--max-turns",
    "options.max_steps": "--max-steps",
    "options.max_tool_calls": "--max-tool-calls",
    "options.max_episode_tokens": "--episode-tokens",
    "options.episode_wall_s": "--episode-wall",
    "options.environment_retries": "--environment-retries",
    "options.user_max_tokens": "--user-max-tokens",
    "prices": "--prices",
    "repeats": "--repeats",
}


class RunConfig(BaseModel):
    """One evaluation run: where, which model, which cases, and how each task asks (``options``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    split: Path = Field(description="a benchsmith split, a folder of `eval derive`, or a benchmark's own folder")
    out: Path = Field(description="the run folder (re-use it to resume)")
    model: str = Field(
        "local", min_length=1, description="model name at the endpoint; 'local' = the default local model"
    )
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint; none and no API key = local model")
    calling: Literal["auto", "tools", "prompt"] = Field(
        "auto", description="auto: tools for endpoints, prompt (JSON-constrained text) for the local model"
    )
    concurrency: int | None = Field(
        None, ge=1, description="requests in flight; None: the local server's slots, else 4"
    )
    tasks: tuple[str, ...] = Field((), description="tasks to run; empty: every task the split has")
    limit: int | None = Field(None, ge=1, description="at most N cases per task, spread over categories")
    seed: int = Field(0, description="seed for case selection, derivation and every model call's sampling")
    # the ranges of ModelConfig's fields of the same meaning (timeout, requests_per_second, max_retries)
    timeout: float = Field(120.0, gt=0, allow_inf_nan=False, description="seconds per request")
    rps: float | None = Field(None, gt=0, allow_inf_nan=False, description="rate limit, requests per second")
    max_retries: int | None = Field(None, ge=0, description="retries of a failed request; None: the model's default")
    categories: tuple[str, ...] = Field((), description="category prefixes: only cases of these categories")
    task_data: dict[str, Path] = Field(default_factory=dict, description="TASK -> other data for that task")
    user_model: str = Field("local", description="episodes: the simulated user's model, NAME or NAME@URL")
    repeats: int = Field(
        1,
        ge=1,
        description="runs of the same settings, each with a fresh sampling seed, into OUT/repeat-N (noise floor)",
    )
    prices: Path | None = Field(
        None, description="a price table (JSON, per million tokens per model): run.json and scores.json give the cost"
    )
    # ``options.calling`` is set from ``calling`` once "auto" is resolved
    options: TaskOptions = Field(default_factory=TaskOptions, description="how each task asks and how long it goes on")


def run_configured(config: RunConfig, *, say: Callable[[str], None] = print) -> RunResult:
    """Resolve the models ``config`` names (a local one is started), check that the endpoints answer,
    and run (:func:`run_eval`). ``say`` gets one line naming the model and how it is asked."""
    from benchsmith.models import ModelClient, check_endpoint, concurrency_for, mask_url, resolve_model
    from benchsmith.schemas import Split, check_out_dir, read_prices

    check_out_dir(config.out, "--out")
    prices = read_prices(config.prices) if config.prices is not None else None
    split = Split(config.split)
    if split.has(Split.SAMPLES) and split.has(Split.MANIFEST):  # a bad manifest: refused before a model starts
        from benchsmith.construction.nl2api import read_manifest

        read_manifest(split.manifest_path)
    retries: dict[str, Any] = {} if config.max_retries is None else {"max_retries": config.max_retries}
    cfg = resolve_model(
        None if config.model == "local" else config.model,
        config.base_url,
        timeout=config.timeout,
        max_tokens=config.options.max_tokens,
        requests_per_second=config.rps,
        seed=config.seed,  # forwarded to every call (trials: seed * 1000 + trial)
        **retries,
    )
    if cfg.base_url and not cfg.local:
        check_endpoint(cfg.base_url, min(config.timeout, 10.0))
    calling: Calling = ("prompt" if cfg.local else "tools") if config.calling == "auto" else config.calling
    concurrency = config.concurrency or concurrency_for(cfg)
    user_name, _, user_url = config.user_model.partition("@")
    ucfg = resolve_model(
        "local" if user_name in ("", "local") and not user_url else user_name or None,
        user_url or None,
        start_local=False,
        timeout=config.timeout,
        requests_per_second=config.rps,
        seed=config.seed,
        **retries,
    )
    if ucfg.base_url and not ucfg.local and ucfg.base_url != cfg.base_url:
        check_endpoint(ucfg.base_url, min(config.timeout, 10.0))
    say(
        f"model {cfg.name} at {mask_url(cfg.base_url) or 'the OpenAI API'} ({calling} mode, "
        f"{config.options.strategy} strategy, concurrency {concurrency})"
    )

    def one(out: Path, model_cfg: Any, user_cfg: Any, repeat: tuple[int, int] | None) -> RunResult:
        return run_eval(
            config.split,
            ModelClient(model_cfg),
            model_cfg.describe(),
            out,
            tasks=config.tasks or None,
            calling=calling,
            concurrency=concurrency,
            limit=config.limit,
            seed=config.seed,
            options=config.options,
            user_client=ModelClient(user_cfg),
            user_model=user_cfg.describe(),
            categories=config.categories or None,
            task_data=config.task_data or None,
            prices=prices,
            repeat=repeat,
        )

    if config.repeats == 1:
        return one(config.out, cfg, ucfg, None)
    # the same cases (--seed selects them) asked again, each repeat sampling with seed + n - 1
    result: RunResult | None = None
    for n in range(1, config.repeats + 1):
        mcfg = cfg.model_copy(update={"seed": config.seed + n - 1})
        say(f"repeat {n} of {config.repeats} (sampling seed {mcfg.seed}) into {config.out / f'repeat-{n}'}")
        result = one(config.out / f"repeat-{n}", mcfg, ucfg.model_copy(update={"seed": mcfg.seed}), (n, config.repeats))
        if result.status != "complete":
            return result  # an unfinished repeat is resumed by the same command before the next starts
    assert result is not None
    return result
