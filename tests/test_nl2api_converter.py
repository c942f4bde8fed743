"""NL2SQL -> NL2API converter against data fixtures.

``fixtures/nl2api/converter_supported.jsonl``: SQL with the exact SLOT sequence (hidden setup
plus gold calls) the converter must emit; every expected sequence must also reproduce the
SQL's result on Chinook. ``fixtures/nl2api/converter_rejected.jsonl``: SQL with the reason
code the build pipeline must reject it with.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sqlglot

from benchsmith.construction.nl2api import (
    REASONS,
    BuildOptions,
    Database,
    Rejection,
    build_split,
    chinook_db,
    convert,
    execute_sql,
    run_and_check,
)
from benchsmith.schemas import ToolCall

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures" / "nl2api"
REJECTION_TIMEOUT_S = 0.2

# Reason codes that a correct converter never produces from a SQL string alone: pairs-file
# problems, and failures of the emitted sequence itself (these need a faulty converter). Each
# is covered by the named test in tests/test_nl2api_build.py (or the file named).
COVERED_ELSEWHERE = {"unknown_database": ("test_nl2api_datasets.py", "test_database_folder_without_its_sqlite")}
COVERED_BY_BUILD_TESTS = {
    "invalid_row": "test_invalid_rows_are_reported_with_line_numbers",
    "duplicate_id": "test_duplicate_ids_are_rejected",
    "result_mismatch": "test_unverified_sequence_is_never_written",
    "tool_error": "test_unverified_sequence_is_never_written",
    "order_mismatch": "test_rows_in_wrong_order_are_rejected_as_order_mismatch",
    "binary_value": "test_answers_and_observations_json_cannot_carry_are_rejected_and_the_build_goes_on",
    "non_finite_value": "test_answers_and_observations_json_cannot_carry_are_rejected_and_the_build_goes_on",
}


def _load(name: str) -> list[dict]:
    path = FIXTURES / name
    cases = []
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if line.strip():
            case = json.loads(line)
            case["_line"] = n
            cases.append(case)
    return cases


SUPPORTED = _load("converter_supported.jsonl")
REJECTED = _load("converter_rejected.jsonl")


def _canonical(value: object) -> str:
    """JSON text that tells 1 from 1.0 and 1.99 from "1.99" (== on Python values does not)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _dump(calls: list[ToolCall]) -> list[dict]:
    return [c.model_dump(mode="json") for c in calls]


def _pipeline(db: Database, sql: str) -> None:
    """convert -> execute_sql -> non-empty check -> run_and_check, in build_split's order."""
    conv = convert(db, sql)
    expected = execute_sql(db, sql)
    if not expected:
        raise Rejection("empty_result", "the SQL returns no rows")
    run_and_check(db, conv.setup, conv.calls, expected, conv.ordered, observe=True, sql=sql)


@pytest.fixture(scope="module")
def db():
    database = Database(chinook_db())
    yield database
    database.close()


@pytest.fixture(scope="module")
def fast_db():
    database = Database(chinook_db(), timeout_s=REJECTION_TIMEOUT_S)
    yield database
    database.close()


# ---- fixture files are well formed ----------------------------------------------------------
def test_fixture_files_are_well_formed():
    assert len(SUPPORTED) >= 60 and len(REJECTED) >= 30
    for cases, keys in (
        (SUPPORTED, {"name", "feature", "sql", "expected_calls", "expected_setup"}),
        (REJECTED, {"name", "sql", "reason"}),
    ):
        names = [c["name"] for c in cases]
        assert len(names) == len(set(names)), "case names are test ids and must be unique"
        for case in cases:
            assert set(case) - {"_line"} == keys, f"line {case['_line']}: fields {sorted(case)}"
            assert re.fullmatch(r"[a-z0-9_]+", case["name"]), case["name"]
    for case in SUPPORTED:
        assert case["expected_calls"], case["name"]
        # every case loads its data in a hidden setup call the model never has to make
        assert case["expected_setup"] and all(c["name"] == "initialize_active_data" for c in case["expected_setup"])
    for case in REJECTED:
        assert case["reason"] in REASONS, f"{case['name']}: unknown reason {case['reason']!r}"
        assert case["reason"] not in COVERED_BY_BUILD_TESTS, (
            f"{case['name']}: {case['reason']} cannot come from a SQL string with a correct converter"
        )


# ---- supported SQL ----------------------------------------------------------------------------
@pytest.mark.parametrize("case", SUPPORTED, ids=[c["name"] for c in SUPPORTED])
def test_supported_sql_converts_to_the_expected_verified_sequence(case, db):
    conv = convert(db, case["sql"])
    setup, calls = _dump(conv.setup), _dump(conv.calls)
    assert setup == case["expected_setup"]
    assert calls == case["expected_calls"]
    assert _canonical(setup) == _canonical(case["expected_setup"])
    assert _canonical(calls) == _canonical(case["expected_calls"])

    expected_rows = execute_sql(db, case["sql"])
    assert expected_rows, "a supported case must return rows, or the check proves nothing"
    # run the fixture's own sequence (equal to the emitted one, asserted above)
    run = run_and_check(
        db,
        [ToolCall.model_validate(c) for c in case["expected_setup"]],
        [ToolCall.model_validate(c) for c in case["expected_calls"]],
        expected_rows,
        conv.ordered,
        observe=True,
        sql=case["sql"],
    )
    assert len(run.rows) == len(expected_rows)
    assert len(run.observations) == len(case["expected_calls"])
    # the answer is ordered exactly when the outer query has ORDER BY (not one inside a subquery)
    outer_order = sqlglot.parse_one(case["sql"], read="sqlite").args.get("order")
    assert conv.ordered == (outer_order is not None)


def test_left_join_count_keeps_unmatched_rows_with_zero(db):
    case = next(c for c in SUPPORTED if c["name"] == "left_join_count_unmatched")
    conv = convert(db, case["sql"])
    rows = run_and_check(db, conv.setup, conv.calls, execute_sql(db, case["sql"]), conv.ordered, sql=case["sql"]).rows
    counts = [n for _, n in rows]
    assert 0 in counts and any(n > 0 for n in counts)


def test_double_quoted_unknown_identifier_is_the_string_literal(db):
    case = next(c for c in SUPPORTED if c["name"] == "double_quoted_string_literal")
    [flt] = [c for c in case["expected_calls"] if c["name"] == "filter_data"]
    assert flt["arguments"]["value"] == "Rock" and "value_key_name" not in flt["arguments"]
    assert execute_sql(db, case["sql"]) == [(1,)]


def test_supported_cases_build_into_verified_samples(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(
            json.dumps({"id": c["name"], "question": f"Q: {c['feature']}", "sql": c["sql"]}) + "\n" for c in SUPPORTED
        ),
        "utf-8",
    )
    report = build_split(chinook_db(), pairs, tmp_path / "out", BuildOptions(copy_db=False))
    assert report["rejections"] == []
    assert report["verified"] == report["total"] == len(SUPPORTED)


# ---- rejected SQL -----------------------------------------------------------------------------
@pytest.mark.parametrize("case", REJECTED, ids=[c["name"] for c in REJECTED])
def test_rejected_sql_is_rejected_with_its_reason(case, fast_db):
    with pytest.raises(Rejection) as info:
        _pipeline(fast_db, case["sql"])
    assert info.value.code == case["reason"], str(info.value)
    assert str(info.value).startswith(f"{case['reason']}: ")


def test_rejected_cases_get_the_same_codes_from_build_split(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "".join(json.dumps({"id": c["name"], "question": "?", "sql": c["sql"]}) + "\n" for c in REJECTED), "utf-8"
    )
    report = build_split(
        chinook_db(),
        pairs,
        tmp_path / "out",
        BuildOptions(copy_db=False, timeout_s=REJECTION_TIMEOUT_S, allow_empty=True),
    )
    assert report["verified"] == 0
    assert [(r["line"], r["id"], r["code"]) for r in report["rejections"]] == [
        (n, c["name"], c["reason"]) for n, c in enumerate(REJECTED, 1)
    ]
    assert (tmp_path / "out" / "samples.jsonl").read_text("utf-8") == ""


# ---- every reason code has a case ----------------------------------------------------------------
def test_every_reason_code_is_covered_by_a_fixture_or_an_explicit_test():
    from_fixtures = {c["reason"] for c in REJECTED}
    missing = set(REASONS) - from_fixtures - set(COVERED_BY_BUILD_TESTS) - set(COVERED_ELSEWHERE)
    assert not missing, f"reason codes without a test case: {sorted(missing)}"
    for code, (file, test) in COVERED_ELSEWHERE.items():
        text = (TESTS / file).read_text("utf-8")
        assert re.search(rf"^def {test}\(", text, re.M) and f'"{code}"' in text, f"{code}: {file}::{test}"
    assert set(COVERED_BY_BUILD_TESTS) <= set(REASONS), "a listed code no longer exists"
    build_tests = (TESTS / "test_nl2api_build.py").read_text("utf-8")
    for code, test in COVERED_BY_BUILD_TESTS.items():
        assert re.search(rf"^def {test}\(", build_tests, re.M), f"{code}: test {test} not found"
        assert f'"{code}"' in build_tests, f"{code} is never asserted in test_nl2api_build.py"
