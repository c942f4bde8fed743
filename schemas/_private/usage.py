"""What model calls cost: tokens and latency per role (the model under test, the user simulator,
each construction role), and money from a price table the user gives (``--prices FILE``; no price
is ever guessed). Written into run.json, scores.json and a construction run's summary.json."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Iterable

from pydantic import Field

from .jsonl import read_json, validate_shape
from .tool import StrictModel

_PRICES_FIX = (
    'write {"currency": "USD", "per_million_tokens": {"MODEL": {"prompt": 0.15, "cached_prompt": 0.075, '
    '"completion": 0.6}}} with the prices of the models you run'
)


class ModelPrice(StrictModel):
    """One model's prices per million tokens."""

    prompt: float = Field(ge=0.0, description="per million prompt tokens not read from the cache")
    cached_prompt: float | None = Field(
        default=None, ge=0.0, description="per million prompt tokens read from the cache; none given: as prompt"
    )
    completion: float = Field(ge=0.0, description="per million completion tokens (reasoning tokens among them)")


class PriceTable(StrictModel):
    """``--prices FILE``: prices per model name, in one currency."""

    currency: str = Field(default="USD", min_length=1)
    per_million_tokens: dict[str, ModelPrice]


def read_prices(path: Path) -> PriceTable:
    """A price table file; one line naming the file and the fix when it is not one."""
    return validate_shape(read_json(path, fix=_PRICES_FIX), PriceTable, where=str(path), fix=_PRICES_FIX)


class RoleUsage(StrictModel):
    """The calls of one role: tokens as the endpoint reported them, latency, and their cost."""

    model: str | None = None
    calls: int = Field(default=0, ge=0)
    prompt_tokens: int = Field(default=0, ge=0)
    cached_prompt_tokens: int = Field(default=0, ge=0, description="of prompt_tokens, read from the server's cache")
    completion_tokens: int = Field(default=0, ge=0)
    reasoning_tokens: int = Field(default=0, ge=0, description="of completion_tokens, spent thinking")
    output_budget_exhausted: int = Field(default=0, ge=0, description="calls cut by their output budget")
    latency_p50_s: float | None = None
    latency_p90_s: float | None = None
    latency_p99_s: float | None = None
    cost: float | None = Field(default=None, description="in the price table's currency; none: no price given")


class CostSummary(StrictModel):
    """Money spent, from a price table: the total, and per correct case (eval) or accepted sample."""

    currency: str
    total: float
    per_success: float | None = Field(description="total / successes; none when nothing succeeded")
    successes: int = Field(ge=0, description="correct cases (eval) or accepted samples (construction)")
    unpriced: list[str] = Field(default=[], description="roles whose model the price table does not name")


class CallUsage(StrictModel):
    """One model call as usage is tallied from it."""

    role: str
    model: str | None = None
    usage: dict[str, int] = {}
    latency_s: float = 0.0
    finish_reason: str | None = None


def _percentile(sorted_values: list[float], q: int) -> float | None:
    if not sorted_values:
        return None
    if len(sorted_values) == 1:
        return round(sorted_values[0], 4)
    return round(statistics.quantiles(sorted_values, n=100, method="inclusive")[q - 1], 4)


def tally_usage(calls: Iterable[CallUsage]) -> dict[str, RoleUsage]:
    """Usage per role of ``calls`` (roles in the order they first come): sums of the tokens each
    reply reported, and latency percentiles (p50, p90, p99; inclusive method)."""
    out: dict[str, RoleUsage] = {}
    latencies: dict[str, list[float]] = {}
    for call in calls:
        role = out.setdefault(call.role, RoleUsage(model=call.model))
        u = call.usage
        role.calls += 1
        role.prompt_tokens += int(u.get("prompt_tokens") or 0)
        role.cached_prompt_tokens += int(u.get("cached_tokens") or 0)
        role.completion_tokens += int(u.get("completion_tokens") or 0)
        role.reasoning_tokens += int(u.get("reasoning_tokens") or 0)
        role.output_budget_exhausted += call.finish_reason == "length"
        if call.model is not None and role.model != call.model:
            role.model = role.model or call.model
        latencies.setdefault(call.role, []).append(float(call.latency_s))
    for name, role in out.items():
        values = sorted(latencies[name])
        role.latency_p50_s, role.latency_p90_s, role.latency_p99_s = (_percentile(values, q) for q in (50, 90, 99))
    return out


def price_usage(usage: dict[str, RoleUsage], prices: PriceTable, successes: int) -> CostSummary:
    """Set each role's ``cost`` from ``prices`` (by its model's name) and sum them; a role whose
    model has no price keeps ``cost`` None and is listed as ``unpriced`` (never guessed)."""
    total = 0.0
    unpriced: list[str] = []
    for name, role in usage.items():
        price = prices.per_million_tokens.get(role.model or "")
        if price is None:
            role.cost = None
            unpriced.append(name)
            continue
        cached = min(role.cached_prompt_tokens, role.prompt_tokens)
        cached_price = price.prompt if price.cached_prompt is None else price.cached_prompt
        role.cost = (
            (role.prompt_tokens - cached) * price.prompt
            + cached * cached_price
            + role.completion_tokens * price.completion
        ) / 1_000_000
        total += role.cost
    return CostSummary(
        currency=prices.currency,
        total=total,
        per_success=total / successes if successes and math.isfinite(total) else None,
        successes=successes,
        unpriced=unpriced,
    )
