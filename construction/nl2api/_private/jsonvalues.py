"""Values as JSON carries them: one tagged encoding for what SQLite gives and JSON has no word for.

A BLOB that is not UTF-8 text becomes ``{"$bytes": "<base64>"}`` and an infinite or NaN float
``{"$float": "inf" | "-inf" | "nan"}`` (JSON has no such numbers; encoders would write null or
fail). Two uses: what a model or an HTTP client sees (REST responses, tool observations), where
UTF-8 bytes are their text, as in samples; and the build's journal (``exact``), which must read
back to the very values written, so every bytes value is tagged and ints beyond orjson's 64 bits
become ``{"$int": "<digits>"}``. :func:`from_json_value` turns the tags back into values.
"""

from __future__ import annotations

import base64
import math
from typing import Any

TAGS = ("$bytes", "$float", "$int")
_INT64 = (-(2**63), 2**64 - 1)  # what orjson writes and reads back as an int
_PLAIN = frozenset({str, int, bool, type(None)})


def json_value(value: Any, *, exact: bool = False) -> Any:
    """``value`` (plain data: lists, tuples, dicts, scalars) with the values JSON cannot carry tagged.

    >>> json_value([b"ok", b"\\xff", float("-inf"), float("nan"), 2 ** 70])
    ['ok', {'$bytes': '/w=='}, {'$float': '-inf'}, {'$float': 'nan'}, 1180591620717411303424]
    >>> json_value([b"ok", 2 ** 70], exact=True)
    [{'$bytes': 'b2s='}, {'$int': '1180591620717411303424'}]
    """
    if isinstance(value, bytes):
        if not exact:
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                pass
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}  # 'inf', '-inf', 'nan'
    if exact and isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
        return {"$int": str(value)}
    if isinstance(value, (list, tuple)):
        return [json_value(v, exact=exact) for v in value]
    if isinstance(value, dict):
        return {k: json_value(v, exact=exact) for k, v in value.items()}
    return value


def from_json_value(value: Any) -> Any:
    """The values :func:`json_value` tagged, back (``exact`` output reads back to what was encoded)."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((tag, text),) = value.items()
            if tag == "$bytes":
                return base64.b64decode(text)
            if tag == "$float":
                return float(text)
            if tag == "$int":
                return int(text)
        return {k: from_json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json_value(v) for v in value]
    return value


def first_tagged(value: Any, path: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...], Any] | None:
    """Where ``value`` first holds something :func:`json_value` would tag (bytes that are not UTF-8,
    a non-finite float), as (path of keys and indexes, the value); None if it holds nothing such."""
    if isinstance(value, bytes):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return path, value
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    items = enumerate(value) if isinstance(value, (list, tuple)) else value.items() if isinstance(value, dict) else ()
    for key, item in items:
        if type(item) in _PLAIN:  # most values of most rows: no call
            continue
        found = first_tagged(item, (*path, key))
        if found is not None:
            return found
    return None
