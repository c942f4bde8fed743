"""Read-only SQLite access with schema introspection, query time limits and a read-only guard.

Every statement on a :class:`Database` connection, schema introspection included, runs under
the time limit (a progress handler installed right after connecting) and past an authorizer
that allows reads only: SELECT, reading columns, functions (except ``load_extension``), recursive
CTEs and the schema-reading PRAGMAs. ATTACH/DETACH, writing PRAGMAs, transactions and every
statement that writes are refused with :class:`ReadOnlyViolation`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from benchsmith.schemas import RuntimeFault, UserError, read_json

# rows a relation may hold when it is materialised (final answers, values used by ``in``)
MAX_ROWS = 100_000
DESCRIPTIONS_SHAPE = dict[str, dict[str, str]]
DESCRIPTIONS_FIX = 'write {"table": {"column": "description", "__table__": "table description"}}'

_READ_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"})
_DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})
_ACTIONS = {
    getattr(sqlite3, f"SQLITE_{n}"): n.replace("_", " ")
    for n in (
        "ATTACH",
        "DETACH",
        "PRAGMA",
        "TRANSACTION",
        "SAVEPOINT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "ALTER_TABLE",
        "REINDEX",
        "ANALYZE",
        "CREATE_INDEX",
        "CREATE_TABLE",
        "CREATE_TEMP_INDEX",
        "CREATE_TEMP_TABLE",
        "CREATE_TEMP_TRIGGER",
        "CREATE_TEMP_VIEW",
        "CREATE_TRIGGER",
        "CREATE_VIEW",
        "CREATE_VTABLE",
        "DROP_INDEX",
        "DROP_TABLE",
        "DROP_TEMP_INDEX",
        "DROP_TEMP_TABLE",
        "DROP_TEMP_TRIGGER",
        "DROP_TEMP_VIEW",
        "DROP_TRIGGER",
        "DROP_VIEW",
        "DROP_VTABLE",
        "FUNCTION",
    )
}


class QueryTimeout(RuntimeFault):
    """A query ran longer than its time limit and was interrupted."""


class ReadOnlyViolation(sqlite3.OperationalError):
    """A statement the read-only guard refused (ATTACH, a writing PRAGMA, INSERT, ...)."""


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
    # rows of a table, counted at open within the time limit; None for views (counting one runs
    # its query) and for tables too large to count in time
    row_count: int | None = None
    _by_lower: dict[str, Column] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_lower = {c.name.lower(): c for c in self.columns}

    def column(self, name: str) -> Column | None:
        return self._by_lower.get(name.lower())


class Database:
    """A SQLite database opened read-only (``mode=ro``, ``PRAGMA query_only`` and an authorizer).

    ``descriptions`` optionally maps ``table -> column -> description`` (and ``table ->
    "__table__"`` for a table description); when absent a sidecar file
    ``<db>.descriptions.json`` is read if it exists. A view that cannot be read (it refers to
    a dropped table or column) is left out of ``tables`` and listed in ``skipped`` with the
    reason. ``check`` runs SQLite's ``quick_check`` at open (within the time limit), so a
    damaged file is refused up front. ``max_rows`` bounds every materialised relation.

    One object may be shared by threads: its statements run one at a time. (Two threads on one
    SQLite connection with a progress handler or an authorizer can deadlock: one holds the
    connection's mutex and waits for the GIL inside the callback while the other holds the GIL
    and waits for the mutex to read a row.)
    """

    def __init__(
        self,
        path: str | Path,
        *,
        descriptions: dict[str, dict[str, str]] | None = None,
        timeout_s: float = 10.0,
        check: bool = False,
        max_rows: int = MAX_ROWS,
    ) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise UserError(f"database {self.path} does not exist", fix="pass the path of a SQLite file with --db")
        if not self.path.is_file():
            raise UserError(f"database {self.path} is not a file", fix="pass the path of a SQLite file with --db")
        self.timeout_s = timeout_s
        self.max_rows = max_rows
        self._deadline = time.monotonic() + timeout_s
        self._denied: list[str] = []
        self._lock = threading.RLock()  # one statement at a time; also keeps _deadline and _denied its own
        self.skipped: dict[str, str] = {}
        try:
            self.con = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._unreadable(exc) from None
        # the longest LIKE pattern this SQLite takes (bytes); a longer one fails mid-query
        self.like_pattern_bytes = self.con.getlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH)
        try:
            self._open(descriptions, check)
        except BaseException:
            self.con.close()
            raise

    def _open(self, descriptions: dict[str, dict[str, str]] | None, check: bool) -> None:
        # the time limit holds for every statement from here on, the first one included
        self.con.set_progress_handler(self._over_time, 10_000)
        try:
            self.con.execute("PRAGMA query_only = ON")
            for fn in ("json_each", "json_tree"):  # load the JSON table functions before the guard:
                try:  # their one-time set-up asks to update the schema
                    self.con.execute(f"SELECT 1 FROM {fn}('[]')").fetchall()
                except sqlite3.OperationalError:  # a SQLite without JSON functions
                    pass
            if check:
                self._quick_check()
            self.con.set_authorizer(self._authorize)
            found = self._run(
                "SELECT name, type FROM sqlite_master WHERE type IN ('table','view') "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        except QueryTimeout:
            raise UserError(
                f"database {self.path}: reading its schema took longer than {self.timeout_s:.1f}s",
                fix="check the file, or raise the time limit (--timeout)",
            ) from None
        except sqlite3.DatabaseError as exc:
            raise self._unreadable(exc) from None
        if descriptions is None:
            sidecar = self.path.with_name(self.path.name + ".descriptions.json")
            descriptions = read_json(sidecar, DESCRIPTIONS_SHAPE, fix=DESCRIPTIONS_FIX) if sidecar.is_file() else {}
        self.descriptions = descriptions
        self.tables: dict[str, Table] = {}
        self._tables_lower: dict[str, Table] = {}
        counting_until = time.monotonic() + self.timeout_s  # one budget for counting the rows of all tables
        for name, kind in found:
            try:
                info = self._run(f"PRAGMA table_info({quote_ident(name)})")
            except sqlite3.OperationalError as exc:  # a view over a dropped table or column
                if kind != "view":
                    raise self._unreadable(exc) from None
                self.skipped[name] = f"view {name} cannot be read: {exc}"
                continue
            except sqlite3.DatabaseError as exc:
                raise self._unreadable(exc) from None
            docs = descriptions.get(name, {})
            cols = [
                Column(
                    table=name,
                    name=r[1],
                    type=(r[2] or "").upper(),
                    description=docs.get(r[1]) or f"{r[1]} of {name}",
                    notnull=bool(r[3]),
                    primary_key=bool(r[5]),
                )
                for r in info
            ]
            table = Table(
                name=name,
                columns=cols,
                description=docs.get("__table__", ""),
                row_count=self._count(name, counting_until) if kind == "table" else None,
            )
            self.tables[name] = table
            self._tables_lower[name.lower()] = table
        if not self.tables:
            why = f" ({len(self.skipped)} view(s) cannot be read: {', '.join(self.skipped)})" if self.skipped else ""
            raise UserError(f"database {self.path} has no tables{why}", fix="pass a SQLite database with data")

    # ---- guards ----------------------------------------------------------------------------------
    def _over_time(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() not in _DENIED_FUNCTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _READ_PRAGMAS:
            return sqlite3.SQLITE_OK
        what = _ACTIONS.get(action, f"action {action}")
        if action == sqlite3.SQLITE_PRAGMA:
            what += f" {arg1}" + (f"={arg2}" if arg2 is not None else "")
        elif action == sqlite3.SQLITE_FUNCTION:
            what += f" {arg2}"
        elif arg1:
            what += f" {arg1}"
        if what not in self._denied:
            self._denied.append(what)
        return sqlite3.SQLITE_DENY

    def _run(
        self, sql: str, params: Sequence[Any] = (), limit: float | None = None, max_rows: int | None = None
    ) -> list[tuple]:
        limit = self.timeout_s if limit is None else limit
        with self._lock:
            self._deadline = time.monotonic() + limit
            self._denied = []
            try:
                cursor = self.con.execute(sql, tuple(params))
                rows = cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows)
                cursor.close()
                return rows
            except sqlite3.DatabaseError as exc:
                if self._denied or "authoriz" in str(exc):
                    what = ", ".join(self._denied[:3]) or (sql.split() or ["the statement"])[0].upper()
                    raise ReadOnlyViolation(
                        f"{self.path.name} is open read-only: refused {what} (only statements that read run here)"
                    ) from None
                if isinstance(exc, sqlite3.OperationalError) and "interrupted" in str(exc):
                    raise QueryTimeout(f"query interrupted after {limit:.1f}s") from exc
                raise

    def _count(self, name: str, until: float) -> int | None:
        left = until - time.monotonic()
        if left <= 0:
            return None
        try:
            return self._run(f"SELECT COUNT(*) FROM {quote_ident(name)}", (), left)[0][0]
        except QueryTimeout:
            return None
        except sqlite3.DatabaseError as exc:
            raise self._unreadable(exc) from None

    def _quick_check(self) -> None:
        try:
            problems = [r[0] for r in self._run("PRAGMA quick_check(5)") if r[0] != "ok"]
        except QueryTimeout:
            return  # too large to check within the time limit: its queries will tell
        if problems:
            text = " ".join("; ".join(map(str, problems)).split())  # one line
            raise UserError(
                f"database {self.path} is damaged: {text[:300]}", fix="copy the database again or rebuild the split"
            )

    def _unreadable(self, exc: BaseException) -> UserError:
        return UserError(
            f"database {self.path} cannot be read as SQLite: {exc}",
            fix="check that the file is a SQLite database and not damaged (rebuild or copy it again)",
        )

    # ---- queries ---------------------------------------------------------------------------------
    def table(self, name: str) -> Table | None:
        return self._tables_lower.get(name.lower())

    def execute(
        self, sql: str, params: Sequence[Any] = (), *, timeout_s: float | None = None, max_rows: int | None = None
    ) -> list[tuple]:
        """Run one read-only statement; interrupt it after ``timeout_s`` seconds; fetch at most
        ``max_rows`` rows when given.

        Raises :class:`QueryTimeout` when interrupted and :class:`ReadOnlyViolation` (a
        ``sqlite3.OperationalError``) for a statement that would not only read."""
        return self._run(sql, params, timeout_s, max_rows)

    def close(self) -> None:
        with self._lock:
            self.con.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
