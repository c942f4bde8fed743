"""The final output's preview taken from its rows (no second query) must equal the LIMIT query's."""

from __future__ import annotations

import random
import sqlite3

import pytest

from benchsmith.construction.nl2api import Database
from benchsmith.construction.nl2api._private.relation import base_relation
from benchsmith.construction.nl2api._private.runtime import _head_is_fixed, preview, preview_of_rows


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Database:
    path = tmp_path_factory.mktemp("preview") / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, x REAL, name TEXT COLLATE NOCASE, v TEXT)")
    rng = random.Random(7)
    names = ["a", "A", "b", "B ", "c", "d", None]
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
        [(i, rng.randint(0, 12), rng.choice([1, 1.0, 2.5, None, 3]), rng.choice(names), f"v{i}") for i in range(1, 60)],
    )
    con.commit()
    con.close()
    return Database(path)


def _rel(db: Database, where: str, order: tuple, visible: tuple = ("id", "k", "x", "name", "v")):
    cols = ["id", "k", "x", "name", "v"]
    rel = base_relation(f"SELECT id, k, x, name, v FROM t WHERE {where}", (), cols, {})
    return rel.same_rows(order=order, visible=visible)


CASES = [
    ("1", (("id", True),)),  # unique key: never ties
    ("1", (("id", False),)),
    ("1", (("k", True),)),  # ties everywhere
    ("k > 9", (("k", True), ("id", False))),
    ("1", (("name", True),)),  # NOCASE: 'a' and 'A' tie for SQLite
    ("1", (("name", True), ("id", True))),
    ("1", (("x", True), ("id", True))),  # 1 and 1.0 are one value
    ("id <= 3", (("k", False),)),  # fewer rows than the preview
    ("id <= 6", (("id", True),)),
    ("id <= 7", (("id", True),)),
]


@pytest.mark.parametrize("where,order", CASES)
def test_preview_from_rows_equals_the_limit_query(db, where, order):
    rel = _rel(db, where, order)
    assert preview_of_rows(rel, rel.rows(db), db) == preview(rel, db)


def test_ties_and_hidden_keys_are_not_taken_from_the_rows(db):
    by_name = _rel(db, "1", (("name", True),))
    assert not _head_is_fixed(by_name, by_name.rows(db), 6)  # 'a'/'A' and NULLs tie
    assert _head_is_fixed(_rel(db, "1", (("id", True),)), _rel(db, "1", (("id", True),)).rows(db), 6)
    hidden = _rel(db, "1", (("id", True),), visible=("k", "v"))
    assert not _head_is_fixed(hidden, hidden.rows(db), 6)
    # a tie past the head (rows 7 and 8) leaves the first six fixed
    rows = [(i, 0) for i in range(6)] + [(9, 0), (9, 1)]
    rel = base_relation("SELECT 1", (), ["a", "b"], {}).same_rows(order=(("a", True),))
    assert _head_is_fixed(rel, rows, 6)
    assert not _head_is_fixed(rel, rows[:5] + [(5, 0), (5, 1)], 6)
    # text that NOCASE or RTRIM may find equal counts as a tie; numbers compare by value
    assert not _head_is_fixed(rel, [("a", 0), ("A", 1)], 6)
    assert not _head_is_fixed(rel, [("b ", 0), ("b", 1)], 6)
    assert not _head_is_fixed(rel, [(1, 0), (1.0, 1)], 6)
    assert _head_is_fixed(rel, [("a", 0), ("b", 1), (None, 2), (1, 3)], 6)


def test_random_sorted_relations(db):
    rng = random.Random(3)
    keys = ["id", "k", "x", "name", "v"]
    for _ in range(200):
        order = tuple((c, rng.random() < 0.5) for c in rng.sample(keys, rng.randint(1, 2)))
        rel = _rel(db, f"k >= {rng.randint(0, 12)}", order)
        assert preview_of_rows(rel, rel.rows(db), db) == preview(rel, db), order
