"""Reading a model's reply: the one JSON-in-a-reply reader and the one error for a reply that cannot
be read, shared by construction's graph nodes and the evaluator's tasks.

>>> read_json_reply('Sure! {"a": [1, 2]} done')
{'a': [1, 2]}
>>> read_json_reply('Here: [1] then {"a": 1}', want=dict)
{'a': 1}
>>> try:
...     read_json_reply("no json")
... except ParseError as exc:
...     print(exc.code, "-", exc.reason)
not_json - the reply holds no JSON value
"""

from __future__ import annotations

import json
from typing import Any

from benchsmith.schemas import loads_json

#: at most this many places where a value could start are tried (each failed try costs up to the
#: reply's length, so a reply of a million ``{`` would otherwise take minutes)
MAX_JSON_STARTS = 1_000


class ParseError(ValueError):
    """A model reply (or a part of it) that cannot be read as what was asked for.

    ``code`` is a short machine-readable kind (``not_json``, ``bad_shape``, ...), ``reason`` the
    sentence a person reads. Graph nodes route the sample to review with both; the evaluator
    records a format error with both."""

    def __init__(self, code: str, reason: str) -> None:
        self.code = code
        self.reason = reason
        super().__init__(reason)


def read_json_reply(text: str | None, *, want: type | tuple[type, ...] | None = None) -> Any:
    """The JSON value in a model reply: the whole text, else the first balanced ``{...}`` or
    ``[...]`` in it (code fences and prose around it are fine). With ``want``, the first value of
    that type (a whole reply of another kind is ``bad_shape``). Whatever the reply holds (deep nesting, a 4,300+ digit number, a lone surrogate) it
    is a value or a :class:`ParseError` (``empty_reply``, ``not_json``), never another exception."""
    s = (text or "").strip()
    if not s:
        raise ParseError("empty_reply", "the model returned an empty reply")
    try:
        value = loads_json(s)
    except json.JSONDecodeError:
        pass
    else:
        if want is None or isinstance(value, want):
            return value
        raise ParseError("bad_shape", f"expected {_names(want)}, got {type(value).__name__}")
    dec = json.JSONDecoder()
    tried = 0
    i = _next_start(s, 0)
    while i >= 0:
        if tried == MAX_JSON_STARTS:
            raise ParseError(
                "not_json",
                f"the reply holds no JSON value where one of its first {MAX_JSON_STARTS:,} '{{' or '[' starts",
            )
        tried += 1
        try:
            value, end = dec.raw_decode(s, i)
        except (ValueError, RecursionError):  # bad JSON, or a number of more than 4,300 digits
            i = _next_start(s, i + 1)
            continue
        if want is None or isinstance(value, want):
            return value
        i = _next_start(s, end)  # a value of another kind: look after it, not inside it
    raise ParseError("not_json", "the reply holds no JSON value")


def _names(want: type | tuple[type, ...]) -> str:
    kinds = want if isinstance(want, tuple) else (want,)
    return " or ".join({"dict": "a JSON object", "list": "a JSON array"}.get(k.__name__, k.__name__) for k in kinds)


def _next_start(s: str, i: int) -> int:
    """Where the next ``{`` or ``[`` at or after ``i`` is, else -1."""
    a, b = s.find("{", i), s.find("[", i)
    return min(a, b) if a >= 0 and b >= 0 else max(a, b)
