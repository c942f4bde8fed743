"""Benchmark samples: the task, its tools, the gold trajectory and how answers are judged."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any, Literal, Union

from pydantic import Field, model_validator

from benchsmith.schemas._private.tool import StrictModel, Tool, ToolCall

# Only these fields make up a sample's identity (see ``content_id``).
CONTENT_FIELDS = ("query", "dialogue", "context", "tools", "setup", "gold", "answer")


class Step(StrictModel):
    """One step of a gold trajectory: an optional thought, a call, what came back, a verdict."""

    thought: str | None = None
    call: ToolCall | None = None
    observation: Any = None
    verdict: (
        Literal["success", "internal_error", "input_error", "irrelevant_response", "unable_to_accomplish"] | None
    ) = None
    hidden: bool = False


class Message(StrictModel):
    """One chat message of a dialogue; only assistant messages carry tool calls."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    name: str | None = None

    @model_validator(mode="after")
    def _tool_calls_only_from_assistant(self) -> Message:
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"a {self.role!r} message cannot have tool_calls")
        return self


class ExactAnswer(StrictModel):
    """The answer must equal ``value``.

    Lists match in any order unless ``ordered``; floats match within ``float_tolerance``.
    """

    kind: Literal["exact"] = "exact"
    value: Any
    ordered: bool = False
    float_tolerance: float = Field(default=1e-6, ge=0)


class WhitelistAnswer(StrictModel):
    """All ``whitelist`` groups must match (any phrasing each); no ``blacklist`` group may."""

    kind: Literal["whitelist"] = "whitelist"
    whitelist: list[Annotated[list[str], Field(min_length=1)]] = Field(min_length=1)
    blacklist: list[Annotated[list[str], Field(min_length=1)]] = Field(default_factory=list)


class ReferenceAnswer(StrictModel):
    """Free-form answers judged against one or more reference answers."""

    kind: Literal["reference"] = "reference"
    references: list[str] = Field(min_length=1)


class NoAnswer(StrictModel):
    """No final answer is judged (e.g. only the calls are)."""

    kind: Literal["none"] = "none"


AnswerSpec = Annotated[
    Union[ExactAnswer, WhitelistAnswer, ReferenceAnswer, NoAnswer],
    Field(discriminator="kind"),
]


class CheckResult(StrictModel):
    """The outcome of one verification check."""

    name: str
    ok: bool
    reason: str = ""
    code: str | None = None


class Verification(StrictModel):
    """Whether and how a sample was verified."""

    status: Literal["verified", "rejected", "unverified"]
    method: str
    checks: list[CheckResult] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)
    verified_at: datetime | None = None


class Provenance(StrictModel):
    """Where a sample (or split) came from and how it was made."""

    source: str
    source_id: str | None = None
    method: str
    versions: dict[str, str] = Field(default_factory=dict)
    seed: int | None = None
    created_at: datetime
    params: dict[str, Any] = Field(default_factory=dict)


class Sample(StrictModel):
    """One benchmark sample.

    Exactly one of ``query`` and ``dialogue`` is set. ``id`` is filled from the content
    (``content_id``) when not given; a given id is kept. The id is computed at validation
    time only: after changing a sample in place, use ``content_id`` to recompute it.

    >>> from datetime import datetime, timezone
    >>> from benchsmith.schemas import Sample, content_id
    >>> prov = {"source": "demo", "method": "manual",
    ...         "created_at": datetime(2024, 1, 1, tzinfo=timezone.utc)}
    >>> s = Sample(query="What is 2+2?", answer={"kind": "exact", "value": 4}, provenance=prov)
    >>> s.id.startswith("bs-") and len(s.id) == 19 and s.id == content_id(s)
    True
    >>> Sample(id="imported-17", query="What is 2+2?", provenance=prov).id
    'imported-17'
    """

    id: str | None = None
    query: str | None = None
    dialogue: list[Message] | None = None
    context: str | None = None
    tools: list[Tool] = Field(default_factory=list)
    setup: list[ToolCall] = Field(default_factory=list)
    gold: list[Step] = Field(default_factory=list)
    answer: AnswerSpec = Field(default_factory=NoAnswer)
    categories: list[str] = Field(default_factory=list)
    difficulty: str | None = None
    provenance: Provenance
    verification: Verification | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_and_fill_id(self) -> Sample:
        if (self.query is None) == (self.dialogue is None):
            raise ValueError("exactly one of query and dialogue must be set")
        if self.query is not None and not self.query.strip():
            raise ValueError("query must not be blank")
        if self.dialogue is not None and not self.dialogue:
            raise ValueError("dialogue must have at least one message")
        duplicated_tools = _duplicates(tool.name for tool in self.tools)
        if duplicated_tools:
            raise ValueError(f"tool names must be unique, repeated: {duplicated_tools}")
        calls = [*self.setup, *(step.call for step in self.gold if step.call is not None)]
        duplicated_labels = _duplicates(call.label for call in calls if call.label is not None)
        if duplicated_labels:
            raise ValueError(f"call labels must be unique across setup and gold, repeated: {duplicated_labels}")
        if self.id is None:
            self.id = content_id(self)
        return self


def _duplicates(names: Iterable[str]) -> list[str]:
    return sorted(name for name, n in Counter(names).items() if n > 1)


def content_id(sample: Sample) -> str:
    """The stable content id of ``sample``: ``"bs-"`` + 16 hex digits of a SHA-256.

    Only query, dialogue, context, tools, setup, gold and answer count; provenance,
    verification, metadata, categories, difficulty and the stored id do not.

    >>> from datetime import datetime, timezone
    >>> from benchsmith.schemas import Sample, content_id
    >>> a = Sample(query="Hi", provenance={"source": "a", "method": "m",
    ...            "created_at": datetime(2024, 1, 1, tzinfo=timezone.utc)})
    >>> b = a.model_copy(update={"metadata": {"note": "x"}, "categories": ["greeting"]})
    >>> content_id(a) == content_id(b)
    True
    """
    content = sample.model_dump(mode="json", include=set(CONTENT_FIELDS))
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "bs-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
