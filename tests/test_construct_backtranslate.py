"""The ``backtranslate`` construction graph on the real Chinook database with a scripted chat
model: SQL that does not parse, run or convert is rejected before any model call; accepted
questions become pair samples that ``to_pairs`` writes and ``nl2api build`` verifies; each pure
check and the verifier reject with their codes; an unreadable reply goes to review; the pure
checks are data-driven (``tests/fixtures/construct/backtranslate_checks.jsonl``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import pair_lines
from scripted_chat import ScriptedChat, by_task

import benchsmith.construction.graphs.backtranslate as bt
from benchsmith.construction import RoleModels, run_graph
from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db
from benchsmith.schemas import Sample, UserError, read_jsonl

QUESTION = "You write the natural-language question that an SQL query answers"
CHECK = "You check whether a question asks exactly what an SQL query computes"
FIXTURES = Path(__file__).parent / "fixtures" / "construct"
PAIRS = [json.loads(x) for x in pair_lines()[:6]]
HUMAN = {p["sql"]: p["question"] for p in PAIRS}
FAITHFUL = '{"faithful": true, "problem": ""}'


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _sql(last: str) -> str:
    return last.split("SQL: ", 1)[1].split("\n", 1)[0]


def human_question(last: str, messages: list[dict]) -> str:
    """The question a person wrote for this SQL (the embedded pairs)."""
    return json.dumps({"question": HUMAN[_sql(last)]})


def write_items(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run(tmp: Path, rows: list[dict], question=human_question, check=FAITHFUL, options=None):
    items = write_items(tmp / "sql.jsonl", rows)
    models = RoleModels(default=ScriptedChat(script=by_task(**{QUESTION: question, CHECK: check})))
    summary = run_graph("backtranslate", items, tmp / "out", models=models, options=options or {})
    out = tmp / "out"
    return (
        summary.to_dict(),
        _lines(out / "samples.jsonl"),
        _lines(out / "error_pool.jsonl"),
        _lines(out / "review.jsonl"),
    )


def sql_rows() -> list[dict]:
    return [
        {"id": p["id"], "sql": p["sql"], **({"evidence": p["evidence"]} if p.get("evidence") else {})} for p in PAIRS
    ]


def test_accepted_pairs_validate_and_build(tmp_path):
    summary, raw, pool, review = run(tmp_path, sql_rows())
    assert summary["samples"] == len(PAIRS) and not pool and not review
    assert summary["calls_by_node"] == {"question": len(PAIRS), "check": len(PAIRS)}
    samples = read_jsonl(tmp_path / "out" / "samples.jsonl", Sample)
    for s, p in zip(sorted(samples, key=lambda s: s.metadata["pair_id"]), sorted(PAIRS, key=lambda p: p["id"])):
        assert s.query == p["question"] and s.context == p.get("evidence")
        assert s.metadata["sql"] == p["sql"] and s.metadata["pair_id"] == p["id"]
        assert s.categories == ["backtranslated"] and s.metadata["rows"] >= 1
    n = bt.to_pairs(tmp_path / "out", tmp_path / "pairs.jsonl")
    rows = _lines(tmp_path / "pairs.jsonl")
    assert n == len(PAIRS) and all(set(r) == {"id", "question", "sql", "evidence"} for r in rows)
    report = build_split(chinook_db(), tmp_path / "pairs.jsonl", tmp_path / "slot", BuildOptions(style="slot"))
    assert report["verified"] == len(PAIRS)


def test_the_prompt_shows_the_used_tables_with_descriptions(tmp_path):
    seen = []

    def capture(last, messages):
        seen.append(last)
        return human_question(last, messages)

    run(tmp_path, sql_rows()[:1], question=capture)
    assert "- tracks (Individual songs" in seen[0] and "milliseconds (INTEGER): Length of the track" in seen[0]
    assert "customers" not in seen[0] and "Evidence: longer than five minutes" in seen[0]


@pytest.mark.parametrize(
    "sql,code",
    [
        ("SELECT nope FROM tracks", "sql_error"),
        ("SELEC name FROM tracks", "sql_error"),
        ("DELETE FROM tracks", "sql_error"),
        ("SELECT name FROM tracks; SELECT name FROM albums", "sql_error"),
        ("SELECT name FROM tracks WHERE milliseconds < 0", "empty_result"),
    ],
)
def test_bad_sql_is_rejected_before_any_model_call(tmp_path, sql, code):
    summary, samples, pool, _ = run(tmp_path, [{"id": "x", "sql": sql}])
    assert not samples and summary["model_calls"] == 0
    assert pool[0]["rejected_by"]["where"] == "prepare" and pool[0]["rejected_by"]["code"] == code


def test_unconvertible_sql_is_rejected_unless_allowed(tmp_path):
    sql = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3) SELECT x FROM n"
    question = '{"question": "Count from 1 up to 3 for me, please."}'
    summary, _, pool, _ = run(tmp_path / "a", [{"id": "cte", "sql": sql}], question=question)
    assert pool[0]["rejected_by"]["code"] == "unconvertible" and summary["model_calls"] == 0
    summary, samples, _, _ = run(
        tmp_path / "b", [{"id": "cte", "sql": sql}], question=question, options={"require_conversion": False}
    )
    assert summary["samples"] == 1 and samples[0]["metadata"]["sql"] == sql


@pytest.mark.parametrize(
    "question,code",
    [
        ('{"question": "Give the first_name and last_name of the customers based in Brazil."}', "sql_leak"),
        ('{"question": "SELECT the customers WHERE the country is Brazil."}', "sql_leak"),
        ('{"question": "Give the names of the customers based in South America."}', "missing_literal"),
        ('{"question": "Customers?"}', "bad_length"),
        ('{"question": "How many authors were born in Chile?"}', "missing_literal"),
    ],
)
def test_pure_screen_rejects_bad_questions(tmp_path, question, code):
    rows = [{"id": "p", "sql": "SELECT first_name, last_name FROM customers WHERE country = 'Brazil'"}]
    summary, samples, pool, _ = run(tmp_path, rows, question=question)
    assert not samples and pool[0]["rejected_by"] == {**pool[0]["rejected_by"], "where": "screen", "code": code}
    assert summary["calls_by_node"] == {"question": 1}  # the verifier is not asked


def test_fewshot_copy_is_rejected(tmp_path):
    rows = [{"id": "p", "sql": "SELECT COUNT(*) FROM customers WHERE country = 'Chile'"}]
    _, _, pool, _ = run(tmp_path, rows, question='{"question": "How many authors were born in Chile?"}')
    assert pool[0]["rejected_by"]["code"] == "copied_fewshot"


def test_verifier_rejects_an_unfaithful_question(tmp_path):
    check = '{"faithful": false, "problem": "the question drops the filter on the country"}'
    _, samples, pool, _ = run(tmp_path, sql_rows()[1:2], check=check)
    assert not samples
    assert pool[0]["rejected_by"] == {
        "where": "check",
        "code": "unfaithful",
        "reason": "the question drops the filter on the country",
    }
    assert pool[0]["candidate"]["question"] == PAIRS[1]["question"]


@pytest.mark.parametrize(
    "node,question,check,code",
    [
        ("question", "Here you go: which customers?", FAITHFUL, "not_json"),
        ("check", human_question, '{"faithful": "yes"}', "bad_field"),
    ],
)
def test_unreadable_reply_goes_to_review(tmp_path, node, question, check, code):
    summary, samples, _, review = run(tmp_path, sql_rows()[1:2], question=question, check=check)
    assert summary["review"] == 1 and not samples
    assert node in review[0]["raw"] and review[0]["reasons"][0]["code"] == code


def test_rows_need_sql(tmp_path):
    with pytest.raises(UserError):
        run(tmp_path, [{"id": "a", "question": "What?"}])


def test_literals_and_tables():
    sql = (
        "SELECT t.name FROM tracks AS t JOIN albums AS a ON a.album_id = t.album_id "
        "WHERE a.title LIKE '%Rock%' AND t.unit_price BETWEEN 0.5 AND 1.5 AND t.milliseconds / 1000 > 200 "
        "ORDER BY t.name LIMIT 10"
    )
    assert sorted(lit["text"] for lit in bt.sql_literals(sql)) == ["0.5", "1.5", "10", "200", "Rock"]
    assert {lit["text"]: lit["string"] for lit in bt.sql_literals(sql)}["Rock"] is True
    assert bt.sql_tables(sql) == ["tracks", "albums"]


@pytest.mark.parametrize("case", _lines(FIXTURES / "backtranslate_checks.jsonl"), ids=lambda c: c["name"])
def test_check_fixtures(case):
    lits = bt.sql_literals(case["sql"])
    got = bt.screen_question(case["question"], case["sql"], lits, case["evidence"])
    assert (got[0] if got else None) == case["code"], got
