"""Read-only SQLite access with schema introspection and query time limits."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from benchsmith.schemas import RuntimeFault, UserError, read_json


class QueryTimeout(RuntimeFault):
    """A query ran longer than its time limit and was interrupted."""


def quote_ident(name: str) -> str:
    """Quote an identifier for SQLite (only ever called on names checked against the schema)."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Column:
    table: str
    name: str
    type: str
    description: str
    notnull: bool = False
    primary_key: bool = False


@dataclass
class Table:
    name: str
    columns: list[Column]
    description: str = ""
    row_count: int = 0
    _by_lower: dict[str, Column] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_lower = {c.name.lower(): c for c in self.columns}

    def column(self, name: str) -> Column | None:
        return self._by_lower.get(name.lower())


class Database:
    """A SQLite database opened read-only (``mode=ro`` and ``PRAGMA query_only``).

    ``descriptions`` optionally maps ``table -> column -> description`` (and ``table ->
    "__table__"`` for a table description); when absent a sidecar file
    ``<db>.descriptions.json`` is read if it exists.
    """

    def __init__(self, path: str | Path, *, descriptions: dict[str, dict[str, str]] | None = None,
                 timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise UserError(f"database {self.path} does not exist", fix="pass the path of a SQLite file with --db")
        if not self.path.is_file():
            raise UserError(f"database {self.path} is not a file", fix="pass the path of a SQLite file with --db")
        self.timeout_s = timeout_s
        try:
            self.con = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                       check_same_thread=False)
            self.con.execute("PRAGMA query_only = ON")
            names = [r[0] for r in self.con.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table','view') AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        except sqlite3.DatabaseError as exc:
            raise UserError(f"database {self.path} cannot be read as SQLite: {exc}",
                            fix="check that the file is a SQLite database and not corrupt") from exc
        if not names:
            raise UserError(f"database {self.path} has no tables", fix="pass a SQLite database with data")
        if descriptions is None:
            sidecar = self.path.with_name(self.path.name + ".descriptions.json")
            descriptions = read_json(sidecar) if sidecar.is_file() else {}
        self.descriptions = descriptions
        self.tables: dict[str, Table] = {}
        self._tables_lower: dict[str, Table] = {}
        for name in names:
            info = self.con.execute(f"PRAGMA table_info({quote_ident(name)})").fetchall()
            docs = descriptions.get(name, {})
            cols = [Column(table=name, name=r[1], type=(r[2] or "").upper(),
                           description=docs.get(r[1]) or f"{r[1]} of {name}",
                           notnull=bool(r[3]), primary_key=bool(r[5])) for r in info]
            count = self.con.execute(f"SELECT COUNT(*) FROM {quote_ident(name)}").fetchone()[0]
            table = Table(name=name, columns=cols, description=docs.get("__table__", ""), row_count=count)
            self.tables[name] = table
            self._tables_lower[name.lower()] = table

    def table(self, name: str) -> Table | None:
        return self._tables_lower.get(name.lower())

    def execute(self, sql: str, params: Sequence[Any] = (), *, timeout_s: float | None = None) -> list[tuple]:
        """Run one read-only statement; interrupt it after ``timeout_s`` seconds."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + limit
        self.con.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
        try:
            return self.con.execute(sql, tuple(params)).fetchall()
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise QueryTimeout(f"query interrupted after {limit:.1f}s") from exc
            raise
        finally:
            self.con.set_progress_handler(None, 0)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
