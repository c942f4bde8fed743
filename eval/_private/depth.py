"""The one bound on how deep a value a scorer walks may nest (model output and case data alike).

Scorers compare, canonicalise, rename references in, type-check and serialise values with
recursive helpers (and ``==``, ``repr`` and ``json.dumps`` recurse in C). Python stops any
recursion about 1,000 frames down with a ``RecursionError``, and a JSON reply nested 950 levels
deep parses, so every value read from model output is measured here, without recursion, before
anything walks it: one nested deeper than :data:`MAX_DEPTH` is not scored (:class:`TooDeep`, a
record with error type ``too_deep``). Real tool arguments nest a few levels; the helpers then
recurse at most :data:`MAX_DEPTH` levels (a few frames each), far from the limit.

>>> nesting_depth(1), nesting_depth([]), nesting_depth({"a": [1, {"b": 2}]})
(0, 1, 3)
>>> deep = []
>>> for _ in range(5000):
...     deep = [deep]
>>> nesting_depth(deep)            # stops counting past the limit
101
>>> try:
...     check_depth(deep, what="the prediction")
... except TooDeep as exc:
...     print(exc)
the prediction nests over 100 levels
"""

from __future__ import annotations

from typing import Any

from benchsmith.models import ParseError

#: the deepest nesting of lists, tuples, sets and dicts any scorer walks
MAX_DEPTH = 100

_CONTAINERS = (list, tuple, dict, set, frozenset)


class TooDeep(ValueError):
    """A value nested deeper than a scorer may walk (:data:`MAX_DEPTH`). Scoring turns it into a
    failed record with error type ``too_deep`` (:func:`benchsmith.eval.scoring.too_deep`)."""

    def __init__(self, limit: int = MAX_DEPTH, what: str = "a value") -> None:
        self.limit, self.what = limit, what
        super().__init__(f"{what} nests over {limit} levels")


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Levels of containers (lists, tuples, sets, dicts: keys and values) in ``value``: 0 for a
    scalar or a string, 1 for ``[1, 2]``, 2 for ``[[1]]``. Measured level by level, without
    recursion, and no further than ``limit + 1`` (what it returns for anything deeper, cycles
    included). A container shared within one level (``[[1] * 9] * 9`` folded from Python syntax) is
    visited once there."""
    if not isinstance(value, _CONTAINERS):
        return 0
    level: list[Any] = [value]
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return limit + 1
        inner: list[Any] = []
        seen: set[int] = set()
        for v in level:
            for child in _children_of_dict(v) if isinstance(v, dict) else v:
                if isinstance(child, _CONTAINERS) and id(child) not in seen:
                    seen.add(id(child))
                    inner.append(child)
        level = inner
    return depth


def _children_of_dict(d: dict[Any, Any]) -> list[Any]:
    return [*d, *d.values()]


def brackets_bound(text: str) -> int:
    """An upper bound on the nesting depth of any value parsed from ``text`` (JSON, a Python
    literal, Python call syntax): each level opens a bracket that a balanced parse closes again,
    and a call read as ``{name: {arguments}}`` makes two levels of one parenthesis.

    >>> brackets_bound('[f(a=g(b=[1]))]'), brackets_bound('{"a": 1}')
    (6, 1)
    """
    return min(len(text) // 2, text.count("[") + text.count("{") + 2 * text.count("("))


def check_depth(value: Any, limit: int = MAX_DEPTH, what: str = "a value", text: str | None = None) -> None:
    """Raise :class:`TooDeep` when ``value`` nests deeper than ``limit``. ``text``: the text the
    value was parsed from, when known; a text with no more opening brackets than ``limit`` (or no
    longer than twice ``limit``) holds no deeper value, so the value is not walked."""
    if text is not None and brackets_bound(text) <= limit:
        return
    if nesting_depth(value, limit) > limit:
        raise TooDeep(limit, what)


def shallow_reply(value: Any, what: str = "the reply") -> Any:
    """``value``, read from a model reply, unless it nests deeper than :data:`MAX_DEPTH` (what no
    scorer, tool or writer walks): then a :class:`~benchsmith.models.ParseError` with the code ``too_deep``."""
    if nesting_depth(value) > MAX_DEPTH:
        raise ParseError("too_deep", f"{what} nests over {MAX_DEPTH} levels")
    return value
