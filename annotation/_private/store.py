"""The annotation workspace's own state: a SQLite file with every item's status and history, the
Label Studio projects and tasks it created, and the annotations it pulled. Every change is one
transaction, so an interrupted push or pull leaves a consistent state that a re-run completes."""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    sample_id TEXT PRIMARY KEY, kind TEXT NOT NULL, status TEXT NOT NULL, round INTEGER NOT NULL,
    sample TEXT NOT NULL, original TEXT NOT NULL, history TEXT NOT NULL DEFAULT '[]', position INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS projects (
    stage TEXT NOT NULL, round INTEGER NOT NULL, kind TEXT NOT NULL, project_id INTEGER NOT NULL,
    config_hash TEXT NOT NULL, PRIMARY KEY (stage, round, kind));
CREATE TABLE IF NOT EXISTS tasks (
    sample_id TEXT NOT NULL, stage TEXT NOT NULL, round INTEGER NOT NULL, project_id INTEGER NOT NULL,
    task_id INTEGER NOT NULL, PRIMARY KEY (sample_id, stage, round));
CREATE TABLE IF NOT EXISTS annotations (
    annotation_id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL, task_id INTEGER NOT NULL, user_id INTEGER,
    updated_at TEXT, result TEXT NOT NULL, cancelled INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS users (user_id INTEGER PRIMARY KEY, username TEXT, simulated INTEGER NOT NULL DEFAULT 0);
"""


class Store:
    """``Store(workspace / "annotation.sqlite")``; thread-safe; JSON columns are (de)serialised here."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._con = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute("PRAGMA synchronous=FULL")
        self._con.executescript(SCHEMA)
        self._lock = threading.RLock()

    def close(self) -> None:
        self._con.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._con.execute("BEGIN IMMEDIATE")
            try:
                yield self._con
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
            self._con.execute("COMMIT")

    def q(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._con.execute(sql, args).fetchall()

    # -- meta -------------------------------------------------------------------------------------
    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self.q("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    def set_meta(self, key: str, value: Any) -> None:
        with self.tx() as c:
            c.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))

    def meta_once(self, key: str, value: Any) -> Any:
        """The value of ``key``; ``value`` is stored first when it has none (one transaction, so two
        processes end with the same value)."""
        with self.tx() as c:
            c.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))
            return json.loads(c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0])

    # -- items --------------------------------------------------------------------------------------
    def add_items(self, rows: list[tuple[str, str, dict[str, Any]]]) -> int:
        """Register ``(sample_id, kind, sample)`` rows not seen before; returns how many were new."""
        with self.tx() as c:
            start = c.execute("SELECT COALESCE(MAX(position), 0) FROM items").fetchone()[0]
            new = 0
            for sample_id, kind, sample in rows:
                text = json.dumps(sample, ensure_ascii=False, sort_keys=True)
                cur = c.execute(
                    "INSERT OR IGNORE INTO items (sample_id, kind, status, round, sample, original, position) "
                    "VALUES (?, ?, 'review', 1, ?, ?, ?)",
                    (sample_id, kind, text, text, start + new + 1),
                )
                new += cur.rowcount
            return new

    def items(self, status: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT sample_id, kind, status, round, sample, original, history FROM items"
        rows = self.q(sql + (" WHERE status = ?" if status else "") + " ORDER BY position", (status,) if status else ())
        return [
            {
                "sample_id": r[0],
                "kind": r[1],
                "status": r[2],
                "round": r[3],
                "sample": json.loads(r[4]),
                "original": json.loads(r[5]),
                "history": json.loads(r[6]),
            }
            for r in rows
        ]

    def update_item(
        self,
        sample_id: str,
        *,
        status: str,
        round: int,
        sample: dict[str, Any] | None = None,
        event: dict[str, Any] | None = None,
    ) -> None:
        with self.tx() as c:
            (history,) = c.execute("SELECT history FROM items WHERE sample_id = ?", (sample_id,)).fetchone()
            hist = json.loads(history) + ([event] if event else [])
            if sample is None:
                c.execute(
                    "UPDATE items SET status = ?, round = ?, history = ? WHERE sample_id = ?",
                    (status, round, json.dumps(hist, ensure_ascii=False), sample_id),
                )
            else:
                c.execute(
                    "UPDATE items SET status = ?, round = ?, sample = ?, history = ? WHERE sample_id = ?",
                    (
                        status,
                        round,
                        json.dumps(sample, ensure_ascii=False, sort_keys=True),
                        json.dumps(hist, ensure_ascii=False),
                        sample_id,
                    ),
                )

    # -- projects and tasks ---------------------------------------------------------------------------
    def project(self, stage: str, round: int, kind: str) -> tuple[int, str] | None:
        rows = self.q(
            "SELECT project_id, config_hash FROM projects WHERE stage = ? AND round = ? AND kind = ?",
            (stage, round, kind),
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def projects(self) -> list[dict[str, Any]]:
        return [
            {"stage": r[0], "round": r[1], "kind": r[2], "project_id": r[3]}
            for r in self.q("SELECT stage, round, kind, project_id FROM projects ORDER BY round, stage, kind")
        ]

    def add_project(self, stage: str, round: int, kind: str, project_id: int, config_hash: str) -> None:
        with self.tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO projects VALUES (?, ?, ?, ?, ?)", (stage, round, kind, project_id, config_hash)
            )

    def task_ids(self, project_id: int) -> dict[str, int]:
        return dict(self.q("SELECT sample_id, task_id FROM tasks WHERE project_id = ?", (project_id,)))

    def add_tasks(self, stage: str, round: int, project_id: int, mapping: dict[str, int]) -> None:
        with self.tx() as c:
            c.executemany(
                "INSERT OR REPLACE INTO tasks VALUES (?, ?, ?, ?, ?)",
                [(sid, stage, round, project_id, tid) for sid, tid in mapping.items()],
            )

    def task_sample(self, task_id: int) -> tuple[str, str, int] | None:
        rows = self.q("SELECT sample_id, stage, round FROM tasks WHERE task_id = ?", (task_id,))
        return rows[0] if rows else None

    # -- annotations ------------------------------------------------------------------------------------
    def upsert_annotations(self, rows: list[dict[str, Any]]) -> tuple[int, int]:
        """Store pulled annotations; returns (new, changed)."""
        new = changed = 0
        with self.tx() as c:
            for a in rows:
                old = c.execute(
                    "SELECT updated_at, result, cancelled FROM annotations WHERE annotation_id = ?", (a["id"],)
                ).fetchone()
                result = json.dumps(a.get("result") or [], ensure_ascii=False, sort_keys=True)
                vals = (
                    a["id"],
                    a["project"],
                    a["task"],
                    a.get("completed_by"),
                    a.get("updated_at"),
                    result,
                    int(bool(a.get("was_cancelled"))),
                )
                if old is None:
                    new += 1
                elif (old[0], old[1], old[2]) != (vals[4], vals[5], vals[6]):
                    changed += 1
                else:
                    continue
                c.execute("INSERT OR REPLACE INTO annotations VALUES (?, ?, ?, ?, ?, ?, ?)", vals)
        return new, changed

    def annotations_for(self, task_id: int) -> list[dict[str, Any]]:
        rows = self.q(
            "SELECT annotation_id, user_id, updated_at, result, cancelled FROM annotations WHERE task_id = ? "
            "ORDER BY annotation_id",
            (task_id,),
        )
        return [
            {"id": r[0], "user": r[1], "updated_at": r[2], "result": json.loads(r[3]), "cancelled": bool(r[4])}
            for r in rows
        ]

    def forget_annotations(self, task_ids: list[int]) -> None:
        """Drop the pulled annotations of tasks deleted on the server (their copies live on the kept task)."""
        with self.tx() as c:
            c.executemany("DELETE FROM annotations WHERE task_id = ?", [(int(t),) for t in task_ids])

    def watermark(self, project_id: int) -> str | None:
        return self.get_meta(f"pulled_until:{project_id}")

    def set_watermark(self, project_id: int, value: str) -> None:
        self.set_meta(f"pulled_until:{project_id}", value)

    def add_user(self, user_id: int, username: str, simulated: bool) -> None:
        with self.tx() as c:
            c.execute("INSERT OR REPLACE INTO users VALUES (?, ?, ?)", (user_id, username, int(simulated)))

    def users(self) -> dict[int, dict[str, Any]]:
        return {r[0]: {"username": r[1], "simulated": bool(r[2])} for r in self.q("SELECT * FROM users")}
