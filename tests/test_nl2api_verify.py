"""Order verification follows the SQL's own ORDER BY keys: ties may swap, nothing else may."""

from __future__ import annotations

import pytest

from benchsmith.construction.nl2api import Database, Rejection, chinook_db, execute_sql, run_and_check
from benchsmith.schemas import ToolCall

SQL = "SELECT name FROM genres ORDER BY length(name)"
SETUP = [ToolCall(name="initialize_active_data", arguments={"source": "genres"}, label="data_1")]


def _chain(sort_keys: list[str], ascending: list[bool]) -> list[ToolCall]:
    return [
        ToolCall(
            name="transform_data",
            label="t_2",
            arguments={
                "data_source": "$data_1$",
                "key_name": "genres.name",
                "function": "length",
                "output_name": "name_length",
            },
        ),
        ToolCall(
            name="sort_data",
            label="s_3",
            arguments={"data_source": "$t_2$", "key_names": sort_keys, "ascending": ascending},
        ),
        ToolCall(name="retrieve_data", label="r_4", arguments={"data_source": "$s_3$", "key_names": ["genres.name"]}),
    ]


@pytest.fixture(scope="module")
def db() -> Database:
    return Database(chinook_db())


def test_rows_tied_on_the_sql_keys_may_come_in_another_order(db):
    expected = execute_sql(db, SQL)
    chain = _chain(["name_length", "genres.name"], [True, False])  # ties broken differently than SQLite does
    run = run_and_check(db, SETUP, chain, expected, True, sql=SQL)
    assert run.rows != expected, "the case must exercise a tie permutation to prove anything"
    assert sorted(run.rows) == sorted(expected)


def test_an_order_the_sql_keys_do_not_allow_is_rejected(db):
    expected = execute_sql(db, SQL)
    chain = _chain(["genres.name"], [True])  # same rows, sorted by the wrong key
    with pytest.raises(Rejection) as err:
        run_and_check(db, SETUP, chain, expected, True, sql=SQL)
    assert err.value.code == "order_mismatch"


def test_without_the_sql_any_order_difference_is_rejected(db):
    expected = execute_sql(db, SQL)
    chain = _chain(["name_length", "genres.name"], [True, False])
    with pytest.raises(Rejection) as err:
        run_and_check(db, SETUP, chain, expected, True)
    assert err.value.code == "order_mismatch"


# ---- float noise in ORDER BY keys --------------------------------------------------------------
@pytest.fixture()
def noisy(tmp_path):
    """Group sums that differ only by float noise: 0.1 + 0.2 (0.30000000000000004) against 0.3."""
    import sqlite3

    from benchsmith.construction.nl2api import Database

    path = tmp_path / "noisy.sqlite"
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, g TEXT, x REAL);"
        "INSERT INTO t (g, x) VALUES ('a', 0.1), ('a', 0.2), ('b', 0.3), ('c', 0.05);"
    )
    con.commit()
    con.close()
    db = Database(path)
    yield db
    db.close()


def test_float_noise_ties_straddling_a_limit_are_ambiguous(noisy):
    from benchsmith.construction.nl2api import Rejection, convert, execute_sql, run_and_check

    sql = "SELECT g, SUM(x) AS s FROM t GROUP BY g ORDER BY s DESC LIMIT 1"
    rows = execute_sql(noisy, sql)
    assert rows[0][1] == 0.1 + 0.2 and rows[0][1] != 0.3  # the noise is real
    conv = convert(noisy, sql)
    with pytest.raises(Rejection) as err:
        run_and_check(noisy, conv.setup, conv.calls, rows, conv.ordered, sql=sql)
    assert err.value.code == "ambiguous_limit_ties"


def test_float_noise_in_order_keys_counts_as_a_tie_without_a_limit(noisy):
    from benchsmith.construction.nl2api._private.compare import tie_aware_equal

    sql_rows = [(("a",), (0.30000000000000004,)), (("b",), (0.3,)), (("c",), (0.05,))]
    assert tie_aware_equal(sql_rows, [("b",), ("a",), ("c",)])  # a and b tie within the tolerance
    assert not tie_aware_equal(sql_rows, [("c",), ("a",), ("b",)])
