"""Compare query results under SQLite's semantics (float tolerance, order only where fixed)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Sequence

Row = Sequence[Any]


def _norm(value: Any, digits: int) -> Any:
    if isinstance(value, bool):
        return ("n", float(value))
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            return ("nan",)
        return ("n", round(float(value), digits))
    if value is None:
        return ("null",)
    if isinstance(value, bytes):
        return ("b", value)
    return ("s", value)


def values_equal(a: Any, b: Any, *, rel_tol: float = 1e-6, abs_tol: float = 1e-9) -> bool:
    """Equal as SQLite results: numbers by value within tolerance, others exactly.

    >>> values_equal(1, 1.0), values_equal(0.1 + 0.2, 0.3), values_equal("1", 1)
    (True, True, False)
    """
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    return type(a) is type(b) and a == b


def rows_equal(a: Row, b: Row, **tol: float) -> bool:
    return len(a) == len(b) and all(values_equal(x, y, **tol) for x, y in zip(a, b))


def multiset_equal(a: list[Row], b: list[Row], *, digits: int = 6, **tol: float) -> bool:
    """Same rows with the same multiplicities, in any order.

    >>> multiset_equal([(1, "a"), (2, "b")], [(2.0, "b"), (1, "a")])
    True
    >>> multiset_equal([(1,), (1,)], [(1,)])
    False
    """
    if len(a) != len(b):
        return False
    if a == b:  # the same rows in the same order (equal values normalise equally)
        return True
    if Counter(tuple(_norm(v, digits) for v in r) for r in a) == Counter(tuple(_norm(v, digits) for v in r) for r in b):
        return True
    # rounding can split near-equal floats into different buckets: fall back to sorted pairwise
    key = lambda r: tuple(_norm(v, digits) for v in r)  # noqa: E731
    return all(rows_equal(x, y, **tol) for x, y in zip(sorted(a, key=key), sorted(b, key=key)))


def ordered_equal(a: list[Row], b: list[Row], **tol: float) -> bool:
    return len(a) == len(b) and all(rows_equal(x, y, **tol) for x, y in zip(a, b))


def tie_aware_equal(expected_with_keys: list[tuple[Row, tuple]], got: list[Row], **tol: float) -> bool:
    """``got`` matches the SQL's rows in the SQL's order, up to reordering within runs of rows
    that tie on the SQL's own ORDER BY keys (``expected_with_keys`` pairs each row with them).

    >>> sql = [(("b",), (1,)), (("a",), (1,)), (("c",), (2,))]
    >>> tie_aware_equal(sql, [("a",), ("b",), ("c",)])
    True
    >>> tie_aware_equal(sql, [("c",), ("a",), ("b",)])
    False
    """
    if len(expected_with_keys) != len(got):
        return False
    i = 0
    while i < len(expected_with_keys):
        j = i + 1
        while j < len(expected_with_keys) and rows_equal(expected_with_keys[j][1], expected_with_keys[i][1]):
            j += 1
        if not multiset_equal([r for r, _ in expected_with_keys[i:j]], list(got[i:j]), **tol):
            return False
        i = j
    return True
