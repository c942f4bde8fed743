"""The lines of an NL2API build's journal (``.journal.jsonl`` in a split folder): a head with the
inputs' fingerprint, then one record per pair, accepted (everything the split needs) or rejected
(why). ``benchsmith.construction.nl2api``'s ``PairJournal`` is their one writer and reader; values a
JSON line cannot hold as they are (bytes, integers beyond 64 bits, NaN) are written tagged there."""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal, Union

from pydantic import Field, TypeAdapter

from .tool import StrictModel


class PairJournalHead(StrictModel):
    """The journal's first line: what the build was run on; a journal of other inputs is not resumed."""

    fingerprint: dict[str, Any]


class PairConversion(StrictModel):
    """The converter's API sequence for the pair's SQL (calls as ``ToolCall`` data)."""

    setup: list[dict[str, Any]]
    calls: list[dict[str, Any]]
    ordered: bool
    features: list[str]


class PairAccepted(StrictModel):
    """A pair verified by execution: the tool sequence gives the SQL's rows."""

    line: int = Field(description="the pair's line in the pairs file (from 1)")
    status: Literal["accepted"]
    conv: PairConversion
    rows: list[list[Any]] = Field(description="the answer: the rows the gold calls give")
    observations: list[Any] = Field(description="each gold call's output")
    columns: list[str]
    descriptions: dict[str, str]
    extended: bool = Field(description="the gold calls need the extended tools (joining, ranking derived data)")
    calls: list[dict[str, Any]] = Field(description="the gold calls in the split's style")
    rest: dict[str, Any] | None = Field(
        default=None, description="REST style: the endpoint, its tool and gold arguments"
    )


class PairRejected(StrictModel):
    """A pair the build could not turn into a verified sample, and why."""

    line: int
    status: Literal["rejected"]
    code: str
    message: str


PairRecord = Annotated[Union[PairAccepted, PairRejected], Field(discriminator="status")]


@functools.cache
def _record() -> TypeAdapter[PairAccepted | PairRejected]:
    return TypeAdapter(PairRecord)  # built on first use: scoring never reads a build journal


def pair_record(value: Any) -> PairAccepted | PairRejected:
    """A journal record (decoded JSON) as its model; a pydantic ``ValidationError`` when it is not one."""
    return _record().validate_python(value)
