"""Lazy relations: the data values NL2API tools pass to each other by label.

A ``Relation`` is an immutable SELECT statement built only from schema-checked, quoted
identifiers and ``?`` placeholders, plus its bound parameters. Tool arguments never become
SQL text: column names are checked against the relation's columns, values are bound.
Sorting is kept as metadata and applied when the relation is materialised or limited, so
the order survives projections.

Each tool adds one step: its SELECT (``body``) reads the relation it started from by name, as a
common table expression (``WITH s_a AS (...), s_b AS (... FROM s_a ...) SELECT ...``), so a chain
is never nested deeper than one level, whatever its length. A step's name is a digest of its own
SELECT and parameters (which name the steps it reads), so two relations built from different
chains can be joined or combined: their steps are merged, a shared step appearing once.

Limits: a relation's SQL text may not exceed ``MAX_SQL_CHARS`` (``query_too_large``), and a
relation materialised as rows (a final answer, the values an ``in`` condition uses) may not
exceed the database's ``max_rows`` (``relation_too_large``). A query SQLite refuses (a pattern or
a value too large for it, too many terms) is a ``ToolError`` with code ``sql_error``. A relation
used as a value is materialised, never copied into another relation's SQL, so SQL text grows
linearly with a chain.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Sequence

from benchsmith.schemas import ToolError

from .database import Database, ReadOnlyViolation
from .database import quote_ident as q

MAX_SQL_CHARS = 1_000_000  # backstop: no relation's SQL text is longer than this

# what SQLite says when a query is too big for it -> the reason a caller reads
_REFUSALS = (
    ("pattern too complex", "a text to match is too long or too complex for the database's LIKE; use a shorter text"),
    (
        "too many sql variables",
        "too many values for one query (the database's limit on SQL variables); use fewer values",
    ),
    ("too many terms", "the query has too many terms for the database; use fewer values or steps"),
    ("expression tree is too large", "the query has too many terms for the database; use fewer values or steps"),
    ("too many columns", "the query has too many columns for the database; use fewer columns"),
    ("parser stack overflow", "the query is nested too deeply for the database; use fewer steps"),
    ("string or blob too big", "a value is too large for the database; use a shorter value"),
    ("integer overflow", "a computed integer is outside the 64-bit range the database holds"),
)


def refusal(exc: sqlite3.Error) -> ToolError:
    """The ``ToolError`` (code ``sql_error``) for a query SQLite refused, with a reason in plain words."""
    text = str(exc)
    reason = next((r for key, r in _REFUSALS if key in text.lower()), "the database refused the query")
    return ToolError(f"{reason} (SQLite: {text})", code="sql_error")


def run_query(db: Database, sql: str, params: Sequence[Any] = (), **kwargs: Any) -> list[tuple]:
    """``db.execute`` for the tools: a query SQLite refuses is a :func:`refusal`; the read-only
    guard's :class:`ReadOnlyViolation` and time-outs pass through."""
    try:
        return db.execute(sql, params, **kwargs)
    except ReadOnlyViolation:
        raise
    except (sqlite3.OperationalError, sqlite3.DataError) as exc:
        raise refusal(exc) from None


@dataclass(frozen=True)
class Relation:
    body: str  # this step's SELECT; it reads the previous step by its name
    body_params: tuple[Any, ...]
    columns: tuple[str, ...]
    visible: tuple[str, ...]
    # (column, ascending[, "first" | "last"]): without the third item NULLs sort as SQLite does
    # (first when ascending, last when descending)
    order: tuple[tuple[Any, ...], ...] = ()
    descriptions: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    # (relation before the limit, limit, offset) when this relation is a limited sorted one
    limited_from: tuple["Relation", int, int] | None = field(default=None, compare=False, repr=False)
    # the earlier steps, oldest first: (name, body, params)
    steps: tuple[tuple[str, str, tuple[Any, ...]], ...] = ()

    def __post_init__(self) -> None:
        _check_size(self.body, self.steps)

    # ---- the statement -------------------------------------------------------------------
    @property
    def sql(self) -> str:
        """The whole SELECT statement (earlier steps as common table expressions)."""
        return _statement(self.steps, self.body, self.body_params)[0]

    @property
    def params(self) -> tuple[Any, ...]:
        """The statement's parameters, in the order their placeholders appear in :attr:`sql`."""
        return _statement(self.steps, self.body, self.body_params)[1]

    @cached_property
    def ref(self) -> str:
        """The name a step built on this relation reads it by (a digest of its SELECT and parameters)."""
        digest = hashlib.blake2b(
            f"{self.body}\x00{self.body_params!r}".encode("utf-8", "surrogatepass"), digest_size=8
        ).hexdigest()
        return q(f"__bs_{digest}")

    def then(self, body: str, params: tuple[Any, ...], **changes: Any) -> "Relation":
        """A new step: ``body`` is a SELECT that reads this relation as :attr:`ref`."""
        changes.setdefault("limited_from", None)
        return replace(
            self,
            body=body,
            body_params=params,
            steps=self.steps + ((self.ref, self.body, self.body_params),),
            **changes,
        )

    def with_inputs(
        self, others: "tuple[Relation, ...]", body: str, params: tuple[Any, ...], **changes: Any
    ) -> "Relation":
        """A new step reading this relation and ``others`` (each by its :attr:`ref`): the steps of
        all of them are merged in order, a step they share appearing once."""
        steps: dict[str, tuple[str, str, tuple[Any, ...]]] = {}
        for rel in (self, *others):
            for step in rel.steps + ((rel.ref, rel.body, rel.body_params),):
                steps.setdefault(step[0], step)
        changes.setdefault("limited_from", None)
        return replace(self, body=body, body_params=params, steps=tuple(steps.values()), **changes)

    # ---- helpers -------------------------------------------------------------------------
    def check_column(self, name: Any, *, arg: str = "key_name") -> str:
        if not isinstance(name, str):
            raise ToolError(f"{arg} must be a column name (string), got {type(name).__name__}")
        if name in self.columns:
            return name
        lowered = {c.lower(): c for c in self.columns}
        if name.lower() in lowered:
            return lowered[name.lower()]
        raise ToolError(
            f"{arg}={name!r} is not a column of the data; columns: {', '.join(self.visible or self.columns)}",
            code="unknown_column",
        )

    def new_column_name(self, name: Any) -> str:
        if not isinstance(name, str) or not name.strip():
            raise ToolError("output_name must be a non-empty string")
        if name in self.columns:
            raise ToolError(f"output_name={name!r} already exists in the data; choose another name")
        return name

    def order_sql(self) -> str:
        if not self.order:
            return ""
        return " ORDER BY " + ", ".join(
            f"{q(o[0])} {'ASC' if o[1] else 'DESC'}" + (f" NULLS {o[2].upper()}" if len(o) > 2 and o[2] else "")
            for o in self.order
        )

    def same_rows(self, **changes: Any) -> "Relation":
        """This relation's rows with other metadata (order, visible columns)."""
        changes.setdefault("limited_from", None)
        return replace(self, **changes)

    # ---- materialisation -----------------------------------------------------------------
    def rows(self, db: Database, *, limit: int | None = None) -> list[tuple]:
        """The visible rows in order; all of them (at most ``db.max_rows``) unless ``limit``."""
        cols = ", ".join(q(c) for c in self.visible)
        body = f"SELECT {cols} FROM {self.ref}{self.order_sql()}"
        if limit is not None:
            return run_query(db, *self.query(body + " LIMIT ?", (limit,)))
        rows = run_query(db, *self.query(body), max_rows=db.max_rows + 1)
        if len(rows) > db.max_rows:
            raise ToolError(
                f"the data has more than {db.max_rows:,} rows (the limit); filter, group or limit it first",
                code="relation_too_large",
            )
        return rows

    def count(self, db: Database) -> int:
        return run_query(db, *self.query(f"SELECT COUNT(*) FROM {self.ref}"))[0][0]

    def query(self, body: str, params: tuple[Any, ...] = ()) -> tuple[str, tuple[Any, ...]]:
        """(SQL, params) of a statement whose ``body`` reads this relation as :attr:`ref` (the
        statement of ``self.then(body, params)``, without making that relation)."""
        steps = self.steps + ((self.ref, self.body, self.body_params),)
        _check_size(body, steps)
        return _statement(steps, body, params)

    def single_visible_column(self) -> str:
        if len(self.visible) != 1:
            raise ToolError(
                f"expected data with exactly one column, got columns {list(self.visible)}; retrieve one column first"
            )
        return self.visible[0]


def _statement(
    steps: tuple[tuple[str, str, tuple[Any, ...]], ...], body: str, params: tuple[Any, ...]
) -> tuple[str, tuple[Any, ...]]:
    """(SQL, params) of ``body`` reading ``steps`` as common table expressions."""
    if not steps:
        return body, params
    sql = "WITH " + ", ".join(f"{name} AS ({step})" for name, step, _ in steps) + " " + body
    return sql, tuple(p for _, _, ps in steps for p in ps) + params


def _check_size(body: str, steps: tuple[tuple[str, str, tuple[Any, ...]], ...]) -> None:
    size = len(body) + sum(len(name) + len(step) + 6 for name, step, _ in steps)
    if size > MAX_SQL_CHARS:
        raise ToolError(
            f"the query behind this data would be {size:,} characters long "
            f"(limit {MAX_SQL_CHARS:,}); use fewer or shorter steps",
            code="query_too_large",
        )


def base_relation(sql: str, params: tuple[Any, ...], columns: list[str], descriptions: dict[str, str]) -> Relation:
    cols = tuple(columns)
    return Relation(body=sql, body_params=params, columns=cols, visible=cols, descriptions=descriptions)
