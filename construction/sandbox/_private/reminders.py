"""The ``reminders`` domain: dated reminders on the phone (works offline).

Times are ``YYYY-MM-DD HH:MM`` strings (``bad_time_format`` otherwise) and must not lie before
the state's ``now`` (``time_in_past``); the same title at the same time cannot be added twice
(``duplicate_reminder``). ``now`` is part of the state: nothing reads the wall clock.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from benchsmith.schemas import StrictModel, ToolError

from .engine import Domain, domain
from .tooling import tool

TIME_FORMAT = "%Y-%m-%d %H:%M"
_TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$")
_DAY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def valid_time(text: str) -> bool:
    """Whether ``text`` is a real ``YYYY-MM-DD HH:MM`` time.

    >>> valid_time("2025-03-10 18:30"), valid_time("2025-02-30 10:00"), valid_time("10/03/2025 18:30")
    (True, False, False)
    """
    if not _TIME_RE.match(text):
        return False
    try:
        datetime.strptime(text, TIME_FORMAT)
    except ValueError:
        return False
    return True


def _check_time(value: str) -> str:
    if not valid_time(value):
        raise ValueError(f"{value!r} is not a YYYY-MM-DD HH:MM time")
    return value


TimeText = Annotated[str, AfterValidator(_check_time)]


class Reminder(StrictModel):
    """One reminder."""

    id: int = Field(ge=1)
    title: str = Field(min_length=1)
    time: TimeText
    note: str = ""
    done: bool = False


class RemindersState(StrictModel):
    """The current time, the reminders (in creation order) and the next reminder id."""

    now: TimeText
    reminders: list[Reminder] = Field(default_factory=list)
    next_id: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> RemindersState:
        ids = [r.id for r in self.reminders]
        if len(set(ids)) != len(ids):
            raise ValueError("reminder ids must be unique")
        top = max(ids, default=0)
        if self.next_id == 0:
            self.next_id = top + 1
        elif self.next_id <= top:
            raise ValueError(f"next_id {self.next_id} must be greater than every reminder id (max {top})")
        return self


@domain("reminders")
class Reminders(Domain):
    """Reminders with a title, a time and an optional note."""

    State = RemindersState
    state: RemindersState

    def _time(self, tool_name: str, value: str) -> str:
        if not valid_time(value):
            raise ToolError(
                f"{tool_name}: time {value!r} is not a valid time; write it as YYYY-MM-DD HH:MM "
                "(e.g. 2025-03-10 18:30)",
                code="bad_time_format",
            )
        if value < self.state.now:  # same fixed-width format: text order is time order
            raise ToolError(f"{tool_name}: {value} is before the current time {self.state.now}", code="time_in_past")
        return value

    def _find(self, tool_name: str, reminder_id: int) -> Reminder:
        for r in self.state.reminders:
            if r.id == reminder_id:
                return r
        raise ToolError(f"{tool_name}: no reminder has id {reminder_id}", code="unknown_reminder")

    @tool
    def add_reminder(self, title: str, time: str, note: str = "") -> dict[str, Any]:
        """Create a reminder that goes off at a given time.

        Args:
            title: A short title for the reminder.
            time: When it goes off, as YYYY-MM-DD HH:MM (24-hour clock), not in the past.
            note: Optional longer text shown with the reminder.
        """
        title = title.strip()
        if not title:
            raise ToolError("add_reminder: the title is blank", code="empty_title")
        self._time("add_reminder", time)
        if any(r.title == title and r.time == time and not r.done for r in self.state.reminders):
            raise ToolError(f"add_reminder: a reminder {title!r} at {time} already exists", code="duplicate_reminder")
        rem = Reminder(id=self.state.next_id, title=title, time=time, note=note)
        self.state.reminders.append(rem)
        self.state.next_id += 1
        return {"status": "added", "reminder_id": rem.id, "time": time}

    @tool
    def list_reminders(self, day: str | None = None, include_done: bool = False) -> dict[str, Any]:
        """List reminders in time order, optionally only those of one day.

        Args:
            day: Only reminders on this day, as YYYY-MM-DD; all days if omitted.
            include_done: Also list reminders already marked as done.
        """
        if day is not None and not (_DAY_RE.match(day) and valid_time(day + " 00:00")):
            raise ToolError(f"list_reminders: day {day!r} is not a valid YYYY-MM-DD date", code="bad_date_format")
        rems = [r for r in self.state.reminders if (include_done or not r.done) and (day is None or r.time[:10] == day)]
        rems.sort(key=lambda r: (r.time, r.id))
        return {"now": self.state.now, "reminders": [_view(r) for r in rems]}

    @tool
    def find_reminders(self, keyword: str) -> dict[str, Any]:
        """Find reminders whose title or note contains a keyword (ignoring case).

        Args:
            keyword: The word or phrase to look for.
        """
        if not keyword.strip():
            raise ToolError("find_reminders: the keyword is blank", code="empty_keyword")
        needle = keyword.casefold()
        return {
            "reminders": [
                _view(r) for r in self.state.reminders if needle in r.title.casefold() or needle in r.note.casefold()
            ]
        }

    @tool
    def reschedule_reminder(self, reminder_id: int, time: str) -> dict[str, Any]:
        """Move a reminder to a new time.

        Args:
            reminder_id: The id of the reminder (see list_reminders or find_reminders).
            time: The new time, as YYYY-MM-DD HH:MM (24-hour clock), not in the past.
        """
        rem = self._find("reschedule_reminder", reminder_id)
        if rem.done:
            raise ToolError(f"reschedule_reminder: reminder {reminder_id} is already done", code="already_done")
        old, rem.time = rem.time, self._time("reschedule_reminder", time)
        return {"status": "rescheduled", "reminder_id": reminder_id, "old_time": old, "time": time}

    @tool
    def complete_reminder(self, reminder_id: int) -> dict[str, Any]:
        """Mark a reminder as done.

        Args:
            reminder_id: The id of the reminder (see list_reminders or find_reminders).
        """
        rem = self._find("complete_reminder", reminder_id)
        if rem.done:
            raise ToolError(f"complete_reminder: reminder {reminder_id} is already done", code="already_done")
        rem.done = True
        return {"status": "done", "reminder_id": reminder_id}

    @tool
    def delete_reminder(self, reminder_id: int) -> dict[str, Any]:
        """Delete a reminder for good.

        Args:
            reminder_id: The id of the reminder (see list_reminders or find_reminders).
        """
        rem = self._find("delete_reminder", reminder_id)
        self.state.reminders.remove(rem)
        return {"status": "deleted", "reminder_id": reminder_id, "title": rem.title}


def _view(r: Reminder) -> dict[str, Any]:
    return {"reminder_id": r.id, "title": r.title, "time": r.time, "note": r.note, "done": r.done}
