"""References from one tool call's arguments to an earlier call's output.

A string argument that is exactly ``$label$`` stands for the whole output of the call
labelled ``label``; ``$label.key$`` stands for a part of it, where ``key`` is a dotted
path of dict keys and list indexes (``$out.items.0.id$``). Strings that merely contain a
reference (``"see $out$"``) are left alone.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from benchsmith.schemas._private.errors import UserError

_SEGMENT = r"[A-Za-z0-9_\-]+"
_REFERENCE_RE = re.compile(rf"^\$(?P<label>[A-Za-z_][A-Za-z0-9_]*)(?:\.(?P<key>{_SEGMENT}(?:\.{_SEGMENT})*))?\$$")


class Reference(NamedTuple):
    """A parsed ``$label$`` or ``$label.key$`` reference."""

    label: str
    key: str | None = None

    @property
    def text(self) -> str:
        """The reference written back as a string, e.g. ``$out.items.0$``."""
        return f"${self.label}.{self.key}$" if self.key else f"${self.label}$"


class UnresolvedReference(UserError):
    """A reference whose label or key path has no matching output."""

    def __init__(self, reference: Reference, reason: str) -> None:
        self.reference = reference
        self.reason = reason
        super().__init__(
            f"cannot resolve reference {reference.text}: {reason}",
            fix="make the reference name a label set on an earlier call, "
            "and a key path that exists in that call's output",
        )


def parse_reference(s: Any) -> Reference | None:
    """Parse ``s`` if it is exactly one reference, else return None.

    >>> from benchsmith.schemas import parse_reference
    >>> parse_reference("$out$")
    Reference(label='out', key=None)
    >>> parse_reference("$out.items.0$")
    Reference(label='out', key='items.0')
    >>> parse_reference("price is $5$") is None
    True
    """
    if not isinstance(s, str):
        return None
    m = _REFERENCE_RE.match(s)
    if m is None:
        return None
    return Reference(m.group("label"), m.group("key"))


def find_references(value: Any) -> list[Reference]:
    """All references in ``value`` (nested dict values and list items).

    In order of first appearance, without duplicates.

    >>> from benchsmith.schemas import find_references
    >>> find_references({"a": "$x$", "b": [{"c": "$y.rows.0$"}, "$x$", "plain"]})
    [Reference(label='x', key=None), Reference(label='y', key='rows.0')]
    """
    found: list[Reference] = []
    seen: set[Reference] = set()

    def walk(v: Any) -> None:
        if isinstance(v, str):
            ref = parse_reference(v)
            if ref is not None and ref not in seen:
                seen.add(ref)
                found.append(ref)
        elif isinstance(v, Mapping):
            for item in v.values():
                walk(item)
        elif isinstance(v, (list, tuple)):
            for item in v:
                walk(item)

    walk(value)
    return found


def _lookup(reference: Reference, outputs: Mapping[str, Any]) -> Any:
    if reference.label not in outputs:
        known = ", ".join(sorted(map(str, outputs))) or "none"
        raise UnresolvedReference(reference, f"no output labelled {reference.label!r} (known labels: {known})")
    current = outputs[reference.label]
    if reference.key is None:
        return current
    walked: list[str] = []
    for segment in reference.key.split("."):
        walked.append(segment)
        where = f"at {'.'.join(walked)!r}"
        if isinstance(current, Mapping):
            if segment not in current:
                raise UnresolvedReference(reference, f"no key {segment!r} {where}")
            current = current[segment]
        elif isinstance(current, (list, tuple)):
            if not segment.isdigit():
                raise UnresolvedReference(reference, f"{segment!r} is not a list index {where}")
            index = int(segment)
            if index >= len(current):
                raise UnresolvedReference(
                    reference,
                    f"index {index} out of range for a list of {len(current)} {where}",
                )
            current = current[index]
        else:
            raise UnresolvedReference(reference, f"cannot look up {segment!r} in a {type(current).__name__} {where}")
    return current


def resolve_references(value: Any, outputs: Mapping[str, Any]) -> Any:
    """A deep copy of ``value`` with every exact reference replaced by what it points to.

    Raises ``UnresolvedReference`` when a label or key path is missing.

    >>> from benchsmith.schemas import resolve_references
    >>> outputs = {"search": {"items": [{"id": 7}, {"id": 9}]}}
    >>> resolve_references({"item_id": "$search.items.1.id$", "all": "$search$"}, outputs)
    {'item_id': 9, 'all': {'items': [{'id': 7}, {'id': 9}]}}
    >>> from benchsmith.schemas import UnresolvedReference
    >>> try:
    ...     resolve_references(["$search.items.5$"], outputs)
    ... except UnresolvedReference as e:
    ...     print(e.reason)
    index 5 out of range for a list of 2 at 'items.5'
    """

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            ref = parse_reference(v)
            return v if ref is None else copy.deepcopy(_lookup(ref, outputs))
        if isinstance(v, Mapping):
            return {k: walk(item) for k, item in v.items()}
        if isinstance(v, tuple):
            return tuple(walk(item) for item in v)
        if isinstance(v, list):
            return [walk(item) for item in v]
        return copy.deepcopy(v)

    return walk(value)
