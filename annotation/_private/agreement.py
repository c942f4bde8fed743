"""Agreement between reviewers (pure functions)."""

from __future__ import annotations

from collections import Counter
from typing import Hashable, Sequence


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa of two raters' labels, one ``(label_a, label_b)`` pair per item; ``None``
    when it is undefined (no items, or both raters always gave one and the same label, so the
    chance agreement is 1).

    >>> cohen_kappa([("accept", "accept"), ("reject", "reject"), ("accept", "reject"), ("accept", "accept")])
    0.5
    >>> cohen_kappa([("accept", "accept")]) is None
    True
    """
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    left, right = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(left[k] * right.get(k, 0) for k in left) / (n * n)
    if expected >= 1.0:
        return None
    return round((observed - expected) / (1.0 - expected), 6)


def percent_agreement(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """The share of items on which both raters agree.

    >>> percent_agreement([("a", "a"), ("a", "b")])
    0.5
    """
    return sum(1 for a, b in pairs if a == b) / len(pairs) if pairs else None
