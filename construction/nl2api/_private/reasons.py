"""Why a pair cannot become a sample: the rejection reason codes, shared by every stage of a build."""

from __future__ import annotations

from benchsmith.schemas import BenchsmithError

REASONS: dict[str, str] = {
    "invalid_row": "the pairs file row is not valid JSON or lacks question/sql",
    "duplicate_id": "another pair already used this id",
    "unknown_database": "the entry's db_id names no database file of the dataset (or the file cannot be opened)",
    "parse_error": "the SQL does not parse as SQLite",
    "not_select": "the statement is not a SELECT query",
    "multiple_statements": "more than one SQL statement",
    "unknown_table": "the SQL names a table the database does not have",
    "unknown_column": "the SQL names a column the database does not have",
    "ambiguous_column": "an unqualified column exists in more than one joined table",
    "sql_error": "SQLite could not execute the SQL",
    "sql_timeout": "the SQL ran longer than the time limit and was interrupted",
    "empty_result": "the SQL returns no rows, so the answer cannot be checked",
    "set_operation": "a UNION / INTERSECT / EXCEPT the tools cannot express (column counts differ, ORDER BY an expression)",
    "cte": "a WITH the tools cannot express (RECURSIVE, or a column list on the table expression)",
    "window_function": "a window function other than row_number / rank / dense_rank over an ORDER BY (aggregates OVER, frames)",
    "subquery_in_from": "a subquery in FROM or JOIN the tools cannot express (duplicate output names, USING)",
    "correlated_subquery": "a correlated subquery that is no equality-keyed semi-join, anti-join or per-group aggregate",
    "exists_subquery": "EXISTS over a subquery that does not refer to the outer query",
    "unsupported_join": "RIGHT / FULL / NATURAL joins are not translated",
    "unsupported_join_condition": "a LEFT JOIN condition that is not an equality of columns",
    "unsupported_expression": "an expression or function without a tool equivalent",
    "unsupported_aggregate": "an aggregate function without a tool equivalent",
    "bare_column": "a column that is neither grouped nor aggregated next to an aggregate",
    "distinct_order": "DISTINCT with ORDER BY on a column that is not selected",
    "nondeterministic": "the result depends on randomness or the current time",
    "condition_too_complex": "the WHERE/HAVING condition expands to too many clauses",
    "constant_condition": "a condition that compares two constants",
    "unsupported_like": "LIKE with an ESCAPE clause or a non-text pattern",
    "unsupported_scalar_select": "a SELECT without FROM that is not arithmetic on subqueries",
    "unordered_limit": "LIMIT/OFFSET without ORDER BY picks arbitrary rows",
    "ambiguous_limit_ties": "rows tied on the ORDER BY keys straddle the LIMIT, so the answer is ambiguous",
    "tool_error": "executing the converted tool sequence failed",
    "result_mismatch": "the tool sequence's result differs from the SQL's",
    "order_mismatch": "the tool sequence returns the right rows in an order the SQL does not allow",
    "binary_value": "the answer (or step N's observation) holds binary data that is not text: samples carry JSON",
    "non_finite_value": "the answer (or step N's observation) holds an infinite or NaN number, which JSON cannot "
    "carry: samples carry JSON",
}


class Rejection(BenchsmithError):
    """A pair that cannot become a sample, with a reason code from :data:`REASONS`."""

    def __init__(self, code: str, message: str) -> None:
        assert code in REASONS, code
        self.code = code
        super().__init__(f"{code}: {message}")
