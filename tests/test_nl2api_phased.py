"""Pairs run a phase at a time per batch (convert all, run their SQL, verify each): the same
results as pair by pair, and the SQL of a pair the converter refused is never executed."""

from __future__ import annotations

import asyncio
import json

from benchsmith.construction.nl2api import Database, chinook_db, default_pairs_path
from benchsmith.construction.nl2api._private import pairwork


def _items() -> list[tuple[int, dict]]:
    rows = [json.loads(x) for x in default_pairs_path().read_text("utf-8").splitlines() if x.strip()][:40]
    rows += [
        {"id": "bad-parse", "question": "q", "sql": "SELEC nothing FROM"},
        {"id": "not-select", "question": "q", "sql": "DELETE FROM tracks"},
        {"id": "random", "question": "q", "sql": "SELECT name FROM tracks ORDER BY RANDOM() LIMIT 1"},
        {"id": "empty", "question": "q", "sql": "SELECT name FROM tracks WHERE track_id < 0"},
        {"id": "no-table", "question": "q", "sql": "SELECT x FROM no_such_table"},
        {"id": "no-column", "question": "q", "sql": "SELECT no_such_column FROM tracks"},
    ]
    return [
        (
            i + 1,
            {
                "id": r["id"],
                "question": r["question"],
                "sql": r["sql"],
                "evidence": None,
                "difficulty": None,
                "db_id": None,
            },
        )
        for i, r in enumerate(rows)
    ]


def _in_process(db: Database, items: list) -> list:
    """The items as one batch in this process, as a build without workers runs them."""
    with pairwork.in_process(db, "slot") as (work, _):
        return asyncio.run(work(items))


def test_phased_results_equal_pair_by_pair():
    db = Database(chinook_db())
    items = _items()
    one_by_one = [pairwork.process_pair(db, "slot", line, pair) for line, pair in items]
    phased = _in_process(db, items)
    assert phased == one_by_one
    codes = {r.code for r in phased if r.status == "rejected"}
    assert {"parse_error", "not_select", "nondeterministic", "empty_result"} <= codes, codes
    assert sum(r.status == "accepted" for r in phased) >= 35
    assert pairwork.process_batch(str(chinook_db()), db.timeout_s, None, "slot", items) == one_by_one


def test_refused_sql_is_never_executed(monkeypatch):
    db = Database(chinook_db())
    ran: list[str] = []
    real = pairwork.execute_sql

    def spy(d, sql):
        ran.append(sql)
        return real(d, sql)

    monkeypatch.setattr(pairwork, "execute_sql", spy)
    items = _items()
    refused = []
    for _, pair in items:
        try:
            pairwork._convert_safely(db, pair["sql"])
        except pairwork.Rejection:
            refused.append(pair["sql"])
    assert len(refused) >= 4
    _in_process(db, items)
    assert ran == [pair["sql"] for _, pair in items if pair["sql"] not in refused]  # each once, in order
