"""``benchsmith compare``'s answer: how two runs differ on the cases both scored, per task and
category, with a paired interval and an exact test (:class:`RunComparison`, ``--out FILE``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from .jsonl import write_json
from .tool import StrictModel

COMPARE_FORMAT = "benchsmith.compare/v1"
#: what may differ between two compared runs when ``--allow`` says it is intended
Difference = Literal["split", "cases", "prompt", "mode"]


class ComparedFigure(StrictModel):
    """Run B against run A on one task (``category`` None) or one of its categories: the mean record
    score over the cases both runs scored."""

    task: str
    category: str | None = None
    cases: int = Field(ge=0, description="cases both runs scored")
    a: float = Field(description="run A's mean record score on them")
    b: float = Field(description="run B's mean record score on them")
    difference: float = Field(description="b - a")
    interval: list[float] | None = Field(
        default=None, description="the paired bootstrap interval of the difference; null below two units"
    )
    method: str | None = Field(default=None, description="BCa, percentile or degenerate (scipy.stats.bootstrap)")
    units: int = Field(ge=0, description="what was resampled: cases, or clusters of records that move together")
    only_a: int = Field(ge=0, description="cases only run A got right")
    only_b: int = Field(ge=0, description="cases only run B got right")
    p_value: float = Field(ge=0.0, le=1.0, description="exact McNemar (binomial) test on the disagreements")
    within_noise: bool = Field(
        description="the interval holds 0 or p >= alpha: no difference beyond what identical runs show"
    )


class RunComparison(StrictModel):
    """Run ``run`` against the baseline ``baseline``."""

    format: str = COMPARE_FORMAT
    baseline: str
    run: str
    allowed: list[str] = Field(default=[], description="differences --allow accepted, each as found")
    confidence: float
    resamples: int
    alpha: float
    figures: list[ComparedFigure]


class NoiseFigure(StrictModel):
    """How much one task's results move between repeats of the same settings (``eval run --repeats``)."""

    task: str
    repeats: int = Field(ge=2)
    cases: int = Field(ge=0, description="cases every repeat scored")
    flip_rate: float = Field(
        ge=0.0, le=1.0, description="share of cases right in one repeat and wrong in another, per pair"
    )
    mean_scores: list[float] = Field(description="each repeat's mean record score on those cases")
    min_detectable_difference: float | None = Field(
        description="the smallest difference between two runs of this many cases that a paired test at 5% "
        "finds 80% of the time, given this flip rate: (z(0.975) + z(0.8)) * sqrt(flip_rate / cases)"
    )


def write_comparisons(path: Path, comparisons: list[RunComparison]) -> None:
    """Write ``compare --out``'s file atomically: one JSON array of :class:`RunComparison`."""
    write_json(path, [c.model_dump(mode="json") for c in comparisons])
