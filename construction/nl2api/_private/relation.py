"""Lazy relations: the data values NL2API tools pass to each other by label.

A ``Relation`` is an immutable SELECT statement built only from schema-checked, quoted
identifiers and ``?`` placeholders, plus its bound parameters. Tool arguments never become
SQL text: column names are checked against the relation's columns, values are bound.
Sorting is kept as metadata and applied when the relation is materialised or limited, so
the order survives projections.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from benchsmith.schemas import BenchsmithError

from .database import Database, quote_ident as q


class ToolError(BenchsmithError):
    """A tool call that cannot run (unknown column, wrong argument type, ...)."""

    def __init__(self, message: str, *, code: str = "tool_input_error") -> None:
        self.code = code
        super().__init__(message)


@dataclass(frozen=True)
class Relation:
    sql: str
    params: tuple[Any, ...]
    columns: tuple[str, ...]
    visible: tuple[str, ...]
    order: tuple[tuple[str, bool], ...] = ()
    descriptions: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    # (relation before the limit, limit, offset) when this relation is a limited sorted one
    limited_from: tuple["Relation", int, int] | None = field(default=None, compare=False, repr=False)

    # ---- helpers -------------------------------------------------------------------------
    def check_column(self, name: Any, *, arg: str = "key_name") -> str:
        if not isinstance(name, str):
            raise ToolError(f"{arg} must be a column name (string), got {type(name).__name__}")
        if name in self.columns:
            return name
        lowered = {c.lower(): c for c in self.columns}
        if name.lower() in lowered:
            return lowered[name.lower()]
        raise ToolError(f"{arg}={name!r} is not a column of the data; columns: {', '.join(self.visible or self.columns)}",
                        code="unknown_column")

    def new_column_name(self, name: Any) -> str:
        if not isinstance(name, str) or not name.strip():
            raise ToolError("output_name must be a non-empty string")
        if name in self.columns:
            raise ToolError(f"output_name={name!r} already exists in the data; choose another name")
        return name

    def order_sql(self) -> str:
        if not self.order:
            return ""
        return " ORDER BY " + ", ".join(f"{q(c)} {'ASC' if asc else 'DESC'}" for c, asc in self.order)

    def derive(self, sql: str, params: tuple[Any, ...], **changes: Any) -> "Relation":
        changes.setdefault("limited_from", None)
        return replace(self, sql=sql, params=params, **changes)

    # ---- materialisation -----------------------------------------------------------------
    def rows(self, db: Database, *, limit: int | None = None) -> list[tuple]:
        cols = ", ".join(q(c) for c in self.visible)
        sql = f"SELECT {cols} FROM ({self.sql}){self.order_sql()}"
        params = self.params
        if limit is not None:
            sql += " LIMIT ?"
            params = params + (limit,)
        return db.execute(sql, params)

    def count(self, db: Database) -> int:
        return db.execute(f"SELECT COUNT(*) FROM ({self.sql})", self.params)[0][0]

    def column_sql(self, name: str) -> tuple[str, tuple[Any, ...]]:
        """A subquery returning one column of this relation (for IN / scalar use)."""
        col = self.check_column(name)
        return f"SELECT {q(col)} FROM ({self.sql}){self.order_sql()}", self.params

    def single_visible_column(self) -> str:
        if len(self.visible) != 1:
            raise ToolError(f"expected data with exactly one column, got columns {list(self.visible)}; "
                            "retrieve one column first")
        return self.visible[0]


def base_relation(sql: str, params: tuple[Any, ...], columns: list[str], descriptions: dict[str, str]) -> Relation:
    cols = tuple(columns)
    return Relation(sql=sql, params=params, columns=cols, visible=cols, descriptions=descriptions)
