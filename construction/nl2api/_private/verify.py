"""Verification by execution: a sequence is kept only if it reproduces the SQL's result."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from sqlglot import exp

from benchsmith.schemas import ToolCall

from .compare import multiset_equal, ordered_equal, rows_equal, tie_aware_equal
from .converter import Rejection, parse_select
from .database import Database, QueryTimeout
from .relation import Relation, ToolError
from .runtime import Binding, Runtime, preview, preview_of_rows, result_rows


def execute_sql(db: Database, sql: str) -> list[tuple]:
    """Run the gold SQL read-only (the database's read-only guard refuses anything but reading)
    with the database's time limit; failures become rejections."""
    try:
        return db.execute(sql)
    except QueryTimeout as exc:
        raise Rejection("sql_timeout", str(exc)) from None
    except sqlite3.Error as exc:
        msg = str(exc)
        if "no such table" in msg:
            raise Rejection("unknown_table", msg) from None
        if "no such column" in msg:
            raise Rejection("unknown_column", msg) from None
        if "ambiguous column" in msg:
            raise Rejection("ambiguous_column", msg) from None
        raise Rejection("sql_error", msg) from None


@dataclass
class ChainRun:
    """Proof that a sequence ran and reproduced the expected rows (only ``run_and_check`` makes one)."""

    rows: list[tuple]
    observations: list[Any]
    columns: list[str]
    descriptions: dict[str, str]


def _check_limits(db: Database, value: Any) -> None:
    if not isinstance(value, Relation) or value.limited_from is None:
        return
    pre, n, offset = value.limited_from
    if not pre.order:
        if offset > 0 or pre.count(db) > n:
            raise Rejection("unordered_limit", "LIMIT/OFFSET over rows in no fixed order")
        return
    keys = [o[0] for o in pre.order]
    cols = ", ".join('"' + k.replace('"', '""') + '"' for k in keys)
    for edge in (offset + n, offset):  # the row after the cut, and the first kept row
        if edge == 0 or n == 0:
            continue
        pair = db.execute(*pre.query(f"SELECT {cols} FROM {pre.ref}{pre.order_sql()} LIMIT 2 OFFSET ?", (edge - 1,)))
        # keys equal within the float tolerance of value comparisons tie too: 37.62 and
        # 37.620000000000005 are one sum added up in two orders
        if len(pair) == 2 and rows_equal(pair[0], pair[1]):
            raise Rejection("ambiguous_limit_ties", f"rows {edge} and {edge + 1} tie on {', '.join(keys)}")


def run_and_check(
    db: Database,
    setup: Sequence[ToolCall],
    calls: Sequence[ToolCall],
    expected: list[tuple],
    ordered: bool,
    *,
    bindings: Mapping[str, Binding] | None = None,
    observe: bool = False,
    sql: str | None = None,
) -> ChainRun:
    """Execute ``setup`` + ``calls`` and compare the final output with ``expected``.

    With ``ordered`` the rows must come in the SQL's order; rows that tie on the SQL's own
    ORDER BY keys may swap, which is checked by re-running ``sql`` with its sort keys (without
    ``sql`` any difference in order is rejected).

    Raises :class:`Rejection` (``tool_error``, ``result_mismatch``, ``order_mismatch``,
    ``unordered_limit``, ``ambiguous_limit_ties``) unless the result matches.
    """
    rt = Runtime(db, bindings)
    observations: list[Any] = []
    final: Any = None
    try:
        rt.setup(setup)
        for i, call in enumerate(calls):
            final = rt.call(call)
            if observe and i < len(calls) - 1:
                observations.append(preview(final, db))
        for value in rt.outputs.values():
            _check_limits(db, value)
        rows = result_rows(final, db)
        if observe and calls:
            observations.append(preview_of_rows(final, rows, db))
    except (ToolError, QueryTimeout, sqlite3.Error) as exc:
        raise Rejection("tool_error", str(exc)[:300]) from None
    if ordered:
        if not ordered_equal(expected, rows):
            if not multiset_equal(expected, rows):
                raise Rejection("result_mismatch", _diff(expected, rows))
            keyed = sql_rows_with_order_keys(db, sql, len(expected[0])) if sql and expected else None
            if keyed is None or not tie_aware_equal(keyed, rows):
                raise Rejection("order_mismatch", "same rows, in an order the SQL's ORDER BY does not allow")
    elif not multiset_equal(expected, rows):
        raise Rejection("result_mismatch", _diff(expected, rows))
    columns: dict[str, None] = {}
    descriptions: dict[str, str] = {}
    for value in rt.outputs.values():
        if isinstance(value, Relation):
            columns.update(dict.fromkeys(value.columns))
            descriptions.update(value.descriptions)
    return ChainRun(rows, observations, list(columns), descriptions)


def sql_rows_with_order_keys(db: Database, sql: str, width: int) -> list[tuple[tuple, tuple]] | None:
    """The SQL's rows (``width`` columns), each with the values of the SQL's ORDER BY keys
    (None if they cannot be derived)."""
    try:
        tree = parse_select(sql)
    except Rejection:
        return None
    order = tree.args.get("order")
    if order is None:
        return None
    items = list(tree.expressions)
    star = any(isinstance(i, exp.Star) or (isinstance(i, exp.Column) and isinstance(i.this, exp.Star)) for i in items)
    aliases = {i.alias.lower(): i.unalias() for i in items if isinstance(i, exp.Alias)}
    keys: list[exp.Expression] = []
    for o in order.expressions:
        t = o.this
        if isinstance(t, exp.Literal) and not t.is_string and star:
            return None  # a position into the expanded * list
        if isinstance(t, exp.Literal) and not t.is_string and t.this.isdigit() and 1 <= int(t.this) <= len(items):
            keys.append(items[int(t.this) - 1].unalias())
        elif isinstance(t, exp.Column) and not t.table and t.name.lower() in aliases:
            keys.append(aliases[t.name.lower()])
        else:
            keys.append(t)
    n = width
    if tree.args.get("distinct"):
        if star:
            return None
        # extra columns would change DISTINCT: use the selected columns the keys refer to
        plain = [i.unalias() for i in items]
        if not all(k in plain for k in keys):
            return None
        pos = [plain.index(k) for k in keys]
        return [(r, tuple(r[p] for p in pos)) for r in execute_sql(db, sql)]
    new = tree.copy()
    for i, k in enumerate(keys):
        new = new.select(exp.alias_(k.copy(), f"__bs_order_key_{i}"), append=True, copy=False)
    try:
        out = execute_sql(db, new.sql(dialect="sqlite"))
    except Rejection:
        return None
    return [(r[:n], r[n:]) for r in out]


def _diff(expected: list[tuple], got: list[tuple]) -> str:
    return f"SQL gave {len(expected)} rows {expected[:3]!r}..., tools gave {len(got)} rows {got[:3]!r}..."
