"""An episode's events (``benchsmith eval run``'s episodic tasks; ``docs/eval/episodes.md``): one
model per speaker, told apart by ``who``, and a line of a task's ``episodes.jsonl`` journal
(:class:`JournalLine`: every finished turn, so a killed episode resumes from its last one)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Any, Iterator, Literal, Union

from pydantic import Field, TypeAdapter

from .jsonl import append_jsonl, iter_appended
from .tool import StrictModel


class EventError(StrictModel):
    """Why a reply could not be used (a code and a short message)."""

    code: str
    message: str = ""


class EventCall(StrictModel):
    """A call the assistant asked for, as read from its reply."""

    id: str
    name: str
    arguments: dict[str, Any] = {}
    known: bool = Field(default=True, description="whether the episode's tools have this name")


class Observation(StrictModel):
    """What one call gave: ``ok`` (its output), ``error`` (a code and message), or ``not_run`` (an
    earlier call of the same reply failed, or the call budget ran out)."""

    id: str
    name: str
    arguments: dict[str, Any] = {}
    status: Literal["ok", "error", "not_run"]
    observation: Any = None
    label: str | None = Field(default=None, description="the $label$ later calls may pass this output on as")
    code: str | None = None
    message: str | None = None


class UserEvent(StrictModel):
    """The simulated user's message (or its failure to play its role)."""

    who: Literal["user"]
    text: str = ""
    stop: bool | None = Field(default=None, description="the user said the stop phrase")
    raw: str | None = None
    error: EventError | None = None
    elapsed_s: float = 0.0


class AssistantEvent(StrictModel):
    """One reply of the model under test: text and calls, or an unreadable reply (``error``, ``raw``)."""

    who: Literal["assistant"]
    usage: dict[str, Any] = {}
    latency_s: float = 0.0
    text: str = ""
    calls: list[EventCall] = []
    raw: str | None = None
    error: EventError | None = None
    elapsed_s: float = 0.0


class ToolEvent(StrictModel):
    """The observations of the calls of the assistant's reply before it, and the state they changed."""

    who: Literal["tool"]
    observations: list[Observation]
    state_diff: list[str] = []
    elapsed_s: float = 0.0


class EndEvent(StrictModel):
    """Why the episode stopped (one of ``benchsmith.eval.episodes.END_REASONS``)."""

    who: Literal["end"]
    reason: str


EpisodeEvent = Annotated[Union[UserEvent, AssistantEvent, ToolEvent, EndEvent], Field(discriminator="who")]


@functools.cache
def _event() -> TypeAdapter[UserEvent | AssistantEvent | ToolEvent | EndEvent]:
    return TypeAdapter(EpisodeEvent)  # built on first use: scoring never reads an episode event


class JournalLine(StrictModel):
    """One line of ``episodes.jsonl``: event ``n`` (from 0) of the episode ``key``."""

    key: str
    n: int = Field(ge=0)
    event: EpisodeEvent


def episode_event(value: Any) -> dict[str, Any]:
    """``value`` (an event as the episode engine holds it) checked against its speaker's model and
    written back as that model lays it out: the fields given, in the model's order. A ``ValueError``
    (pydantic's) when it is not an event."""
    return _event().validate_python(value).model_dump(exclude_unset=True)


def append_journal(path: Path, key: str, n: int, event: Any) -> None:
    """Append event ``n`` of episode ``key`` to a journal (one write, fsync'd)."""
    line = JournalLine(key=key, n=n, event=_event().validate_python(event))
    append_jsonl(path, line.model_dump(exclude_unset=True))


def iter_journal(path: Path) -> Iterator[JournalLine]:
    """The readable lines of a journal in order; a line that is not one (a write killed mid-line, or
    another program's) is skipped (:func:`iter_appended`)."""
    return (line for _, line in iter_appended(path, JournalLine) if line is not None)
