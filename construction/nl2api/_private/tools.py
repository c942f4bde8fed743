"""The SLOT tool universe: generic, executable data-operation tools.

Each tool registers by name with :func:`slot_tool`; its JSON-Schema parameters are what a
model sees, its implementation runs on :class:`Relation` values against a read-only
database. Column-name parameters are listed in ``column_params`` so that per-sample tool
specs can turn them into enums of the sample's columns.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from benchsmith.schemas import Registry

from .database import Database
from .database import quote_ident as q
from .relation import Relation, ToolError, base_relation, run_query

AGGREGATIONS = ("count", "count_distinct", "sum", "avg", "min", "max")
COMPARISONS = {
    "equal_to": "=",
    "not_equal_to": "!=",
    "greater_than": ">",
    "greater_than_or_equal_to": ">=",
    "less_than": "<",
    "less_than_or_equal_to": "<=",
}
PATTERN_OPS = (
    "contains",
    "not_contains",
    "starts_with",
    "not_starts_with",
    "ends_with",
    "not_ends_with",
    "like",
    "not_like",
)
SET_OPS = ("in", "not_in")
RANGE_OPS = ("between", "not_between")
NULL_OPS = ("is_null", "is_not_null")
OPERATORS = (*COMPARISONS, *PATTERN_OPS, *SET_OPS, *RANGE_OPS, *NULL_OPS)
ARITHMETIC = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "modulo": "%"}
NULLS_PLACES = ("first", "last", "default")
SET_OPERATIONS = {"union": "UNION", "union_all": "UNION ALL", "intersect": "INTERSECT", "except": "EXCEPT"}
RANKINGS = {"row_number": "ROW_NUMBER", "rank": "RANK", "dense_rank": "DENSE_RANK"}
CAST_TYPES = {"integer": "INTEGER", "real": "REAL", "text": "TEXT", "numeric": "NUMERIC"}
# function -> (number of extra arguments it takes: names, which are required)
TRANSFORMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "substr": (("start", "length"), ("start",)),
    "instr": (("substring",), ("substring",)),
    "strftime": (("format",), ("format",)),
    "cast": (("type",), ("type",)),
    "round": (("digits",), ()),
    "replace": (("old", "new"), ("old", "new")),
    "coalesce": (("default",), ("default",)),
    "upper": ((), ()),
    "lower": ((), ()),
    "length": ((), ()),
    "abs": ((), ()),
    "trim": ((), ()),
    "date": ((), ()),
    "julianday": ((), ()),
}


@dataclass
class ToolDef:
    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    hidden: bool = False
    # JSON paths (tuples of keys, "*" for array items) of parameters holding column names
    column_params: tuple[tuple[str, ...], ...] = ()
    output: str = "data"  # "data" (a relation) or "value"
    extra: dict[str, Any] = field(default_factory=dict)
    # "core": in every split's universe; "extended" (joining, combining and ranking derived data):
    # in the universe of a split only when one of its gold sequences needs them
    tier: str = "core"


SLOT_TOOLS: Registry[ToolDef] = Registry("SLOT tool")


def slot_tool(
    name: str,
    description: str,
    parameters: dict[str, Any],
    *,
    hidden: bool = False,
    column_params: tuple[tuple[str, ...], ...] = (),
    output: str = "data",
    tier: str = "core",
) -> Callable:
    """Register a SLOT tool implementation under ``name``."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        SLOT_TOOLS.add(name, ToolDef(name, description, parameters, fn, hidden, column_params, output, tier=tier))
        return fn

    return deco


# ---- JSON-Schema pieces -----------------------------------------------------------------
DATA = {"type": "string", "description": "The data to operate on: a label of an earlier output, written as $label$"}
COLUMN = {"type": "string", "description": "Name of a column of the data"}
SCALAR = {
    "description": "A value (string, number, boolean or null) or an earlier output as $label$",
    "type": ["string", "number", "integer", "boolean", "null"],
}
CONDITION_VALUE = {
    "description": (
        "Value to compare with: a single value; a list of values for in/not_in; "
        "[low, high] for between/not_between (inclusive); omit for is_null/is_not_null. "
        "May be an earlier output as $label$."
    ),
    "type": ["string", "number", "integer", "boolean", "null", "array"],
}
CONDITION = {
    "type": "object",
    "properties": {
        "key_name": COLUMN,
        "operator": {
            "type": "string",
            "enum": list(OPERATORS),
            "description": (
                "Comparison to apply. contains/starts_with/ends_with/like are "
                "case-insensitive for ASCII letters; like takes a pattern with % and _"
            ),
        },
        "value": CONDITION_VALUE,
        "value_key_name": {"type": "string", "description": "Compare with this other column instead of a value"},
    },
    "required": ["key_name", "operator"],
    "additionalProperties": False,
}
OPERAND = {
    "type": "object",
    "description": 'Either {"key_name": column} or {"value": value}',
    "properties": {"key_name": COLUMN, "value": SCALAR},
    "additionalProperties": False,
}


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


# ---- value binding ------------------------------------------------------------------------
INT64 = (-(2**63), 2**63 - 1)
# Caps on argument sizes, checked before any SQL runs: by the tools (a ToolError naming the
# argument) and by the REST server (a 422 for the query parameter). A value over a cap would
# otherwise fail inside SQLite mid-query ("LIKE or GLOB pattern too complex" past 50,000 bytes,
# "too many SQL variables") or only cost time.
MAX_TEXT_CHARS = 10_000  # the text of a pattern (contains, starts_with, like, ...); every REST string
MAX_LIST_ITEMS = 1_000  # the values of one in / not_in list (each is one bound SQL variable)


def check_int(value: Any, what: str = "value") -> None:
    """Refuse an integer SQLite cannot hold (it would fail inside the driver)."""
    if isinstance(value, int) and not isinstance(value, bool) and not INT64[0] <= value <= INT64[1]:
        raise ToolError(f"{what} {str(value)[:30]}... is outside the 64-bit integer range SQLite stores")


def check_text(value: str, what: str = "value") -> None:
    """Refuse a text longer than :data:`MAX_TEXT_CHARS` or holding a NUL character (SQLite's text
    functions, LIKE among them, stop reading at a NUL, so the value would not mean what it says)."""
    if len(value) > MAX_TEXT_CHARS:
        raise ToolError(f"{what} is {len(value):,} characters long; the limit is {MAX_TEXT_CHARS:,}")
    if "\x00" in value:
        raise ToolError(f"{what} contains a NUL character, which a text value cannot hold")


def check_list(values: list[Any], what: str = "value") -> None:
    """Refuse a list of more than :data:`MAX_LIST_ITEMS` values."""
    if len(values) > MAX_LIST_ITEMS:
        raise ToolError(f"{what} lists {len(values):,} values; the limit is {MAX_LIST_ITEMS:,}")


def bind_scalar(value: Any, db: Database) -> tuple[str, tuple[Any, ...]]:
    """SQL fragment + params for one value. Data (a Relation) gives the first value of its one
    column, read now and bound like any value (empty data gives NULL)."""
    if isinstance(value, Relation):
        value.single_visible_column()
        rows = value.rows(db, limit=1)
        value = rows[0][0] if rows else None
    if isinstance(value, (list, dict, tuple)):
        raise ToolError(f"expected a single value, got {type(value).__name__}")
    if isinstance(value, bool):
        value = int(value)
    check_int(value)
    return "?", (value,)


def bind_values(rel: Relation, db: Database) -> tuple[str, tuple[Any, ...]]:
    """The values of data with one column as a subquery over ONE bound JSON array (the data is
    read now, at most ``db.max_rows`` rows): the data's SQL is never copied."""
    col = rel.single_visible_column()
    values = [r[0] for r in rel.rows(db)]
    if any(isinstance(v, bytes) for v in values):
        raise ToolError(f"column {col} holds binary values, which cannot be used as values to compare with")
    if any(isinstance(v, float) and math.isinf(v) for v in values):
        text = (
            "["
            + ",".join(
                ("9e999" if v > 0 else "-9e999")
                if isinstance(v, float) and math.isinf(v)
                else json.dumps(v, ensure_ascii=False)
                for v in values
            )
            + "]"
        )
    else:
        text = json.dumps(values, ensure_ascii=False)
    return "SELECT value FROM json_each(?)", (text,)


def _step_names(rel: Relation) -> set[str]:
    return {name for name, _, _ in rel.steps} | {rel.ref}


def _disjoint(value: Relation, *others: Relation) -> bool:
    """Whether ``value`` shares no step with ``others``: only then is it read by a subquery. A step
    read twice in one statement could be expanded twice, and a chain of such calls would double
    the statement at each call; shared data is read into a bound array instead."""
    mine = _step_names(value)
    return all(not (mine & _step_names(o)) for o in others)


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def condition_sql(
    db: Database, rel: Relation, cond: dict[str, Any], inputs: list[Relation] | None = None
) -> tuple[str, tuple[Any, ...]]:
    """SQL + params of one condition. With ``inputs``, data given as the values of in / not_in is
    read by a subquery over its own steps (appended to ``inputs``, which the caller's relation must
    merge); without, the data is read now and bound as one JSON array."""
    if not isinstance(cond, dict):
        raise ToolError("a condition must be an object with key_name, operator and value")
    unknown = set(cond) - {"key_name", "operator", "value", "value_key_name"}
    if unknown:
        raise ToolError(f"unknown condition fields: {sorted(unknown)}")
    col = q(rel.check_column(cond.get("key_name")))
    op = cond.get("operator")
    if op not in OPERATORS:
        raise ToolError(f"operator={op!r} is not one of {', '.join(OPERATORS)}", code="unknown_operator")
    has_value = "value" in cond
    if "value_key_name" in cond:
        if op not in COMPARISONS or has_value:
            raise ToolError("value_key_name works only with comparison operators and without value")
        other = q(rel.check_column(cond["value_key_name"], arg="value_key_name"))
        return f"{col} {COMPARISONS[op]} {other}", ()
    value = cond.get("value")
    if op in NULL_OPS:
        return f"{col} IS {'NOT ' if op == 'is_not_null' else ''}NULL", ()
    if not has_value:
        raise ToolError(f"operator {op} needs a value")
    if op in COMPARISONS:
        frag, params = bind_scalar(value, db)
        return f"{col} {COMPARISONS[op]} {frag}", params
    if op in PATTERN_OPS:
        if isinstance(value, Relation) or not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ToolError(f"operator {op} needs a text value")
        text = str(value)
        check_text(text, f"the value of {op}")
        base = op.removeprefix("not_")
        pattern = {
            "contains": f"%{_escape_like(text)}%",
            "starts_with": f"{_escape_like(text)}%",
            "ends_with": f"%{_escape_like(text)}",
            "like": text,
        }[base]
        if len(pattern.encode("utf-8", "surrogatepass")) > db.like_pattern_bytes:  # SQLite's own limit
            raise ToolError(
                f"the value of {op} makes a pattern longer than the database's limit of "
                f"{db.like_pattern_bytes:,} bytes; use a shorter text"
            )
        neg = "NOT " if op.startswith("not_") else ""
        esc = " ESCAPE '\\'" if op not in ("like", "not_like") else ""
        return f"{col} {neg}LIKE ?{esc}", (pattern,)
    if op in SET_OPS:
        neg = "NOT " if op == "not_in" else ""
        if isinstance(value, Relation):
            if inputs is not None and _disjoint(value, rel, *inputs):
                vcol = q(value.single_visible_column())
                inputs.append(value)
                return f"{col} {neg}IN (SELECT {vcol} FROM {value.ref})", ()
            sql, params = bind_values(value, db)
            return f"{col} {neg}IN ({sql})", params
        if not isinstance(value, list):
            value = [value]  # a single value (e.g. an aggregate's output) is a one-item list
        check_list(value, f"the value of {op}")
        frags, params = [], ()
        for v in value:
            f, p = bind_scalar(v, db)
            frags.append(f)
            params += p
        return f"{col} {neg}IN ({', '.join(frags)})", params
    # ranges
    if not isinstance(value, list) or len(value) != 2:
        raise ToolError(f"operator {op} needs [low, high]")
    lo, lp = bind_scalar(value[0], db)
    hi, hp = bind_scalar(value[1], db)
    neg = "NOT " if op == "not_between" else ""
    return f"{col} {neg}BETWEEN {lo} AND {hi}", lp + hp


def operand_sql(db: Database, rel: Relation, operand: Any) -> tuple[str, tuple[Any, ...]]:
    if not isinstance(operand, dict) or len(operand) != 1 or not ({"key_name", "value"} & set(operand)):
        raise ToolError('an operand must be {"key_name": column} or {"value": value}')
    if "key_name" in operand:
        return q(rel.check_column(operand["key_name"])), ()
    return bind_scalar(operand["value"], db)


def _need_relation(value: Any, arg: str = "data_source") -> Relation:
    if not isinstance(value, Relation):
        raise ToolError(
            f"{arg} must be data (an earlier output holding rows), got {type(value).__name__}", code="wrong_data_source"
        )
    return value


def _add_column(rel: Relation, name: str, expr: str, params: tuple[Any, ...], description: str) -> Relation:
    out = rel.new_column_name(name)
    return rel.then(
        f"SELECT *, {expr} AS {q(out)} FROM {rel.ref}",
        params,
        columns=rel.columns + (out,),
        visible=rel.visible + (out,),
        descriptions={**rel.descriptions, out: description},
    )


# ---- tools --------------------------------------------------------------------------------
@slot_tool(
    "initialize_active_data",
    "Load the data the question is about: one table, optionally joined with others. Run before "
    "the model starts; its output is the first data source.",
    _obj(
        {
            "source": {"type": "string", "description": "Table to load"},
            "alias": {
                "type": "string",
                "description": "Name used to prefix the table's columns (default: the table name)",
            },
            "joins": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "table": {"type": "string"},
                        "alias": {"type": "string"},
                        "type": {"type": "string", "enum": ["inner", "left", "cross"]},
                        "on": {
                            "type": "array",
                            "items": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
                            "description": "Pairs of equal columns [left, right], written alias.column",
                        },
                    },
                    "required": ["table", "type"],
                    "additionalProperties": False,
                },
            },
        },
        ["source"],
    ),
    hidden=True,
)
def initialize_active_data(
    rt: Any, source: str, alias: str | None = None, joins: list[dict[str, Any]] | None = None
) -> Relation:
    db: Database = rt.db
    entries = [{"table": source, "alias": alias, "type": None, "on": []}] + list(joins or [])
    aliases: dict[str, tuple[str, Any]] = {}  # alias -> (sql alias, table)
    select, names, descriptions = [], [], {}
    from_sql = ""
    for i, entry in enumerate(entries):
        table = db.table(str(entry.get("table")))
        if table is None:
            raise ToolError(f"unknown table {entry.get('table')!r}", code="unknown_table")
        name = entry.get("alias") or table.name
        if name in aliases:
            raise ToolError(f"alias {name!r} used twice; give each joined table its own alias")
        sql_alias = f"t{i}"
        aliases[name] = (sql_alias, table)
        for col in table.columns:
            out = f"{name}.{col.name}"
            select.append(f"{sql_alias}.{q(col.name)} AS {q(out)}")
            names.append(out)
            descriptions[out] = col.description
        if i == 0:
            from_sql = f"{q(table.name)} AS {sql_alias}"
            continue
        kind = entry.get("type")
        if kind not in ("inner", "left", "cross"):
            raise ToolError(f"join type {kind!r} is not inner, left or cross")
        pairs = entry.get("on") or []
        if kind == "cross":
            if pairs:
                raise ToolError("a cross join takes no 'on' pairs")
            from_sql += f" CROSS JOIN {q(table.name)} AS {sql_alias}"
            continue
        if not pairs:
            raise ToolError(f"{kind} join of {table.name} needs 'on' pairs")
        conds = []
        for pair in pairs:
            if not isinstance(pair, list) or len(pair) != 2:
                raise ToolError("each 'on' entry must be [left_column, right_column]")
            sides = []
            for ref in pair:
                a, _, c = str(ref).rpartition(".")
                if a not in aliases or aliases[a][1].column(c) is None:
                    raise ToolError(
                        f"join column {ref!r} is not alias.column of a table loaded so far", code="unknown_column"
                    )
                sides.append(f"{aliases[a][0]}.{q(aliases[a][1].column(c).name)}")
            conds.append(f"{sides[0]} = {sides[1]}")
        from_sql += (
            f" {'LEFT JOIN' if kind == 'left' else 'JOIN'} {q(table.name)} AS {sql_alias} ON {' AND '.join(conds)}"
        )
    sql = f"SELECT {', '.join(select)} FROM {from_sql}"
    return base_relation(sql, (), names, descriptions)


@slot_tool(
    "filter_data",
    "Keep the rows of the data that satisfy one condition on a column.",
    _obj({"data_source": DATA, **CONDITION["properties"]}, ["data_source", "key_name", "operator"]),
    column_params=(("key_name",), ("value_key_name",)),
)
def filter_data(rt: Any, data_source: Any, **cond: Any) -> Relation:
    rel = _need_relation(data_source)
    inputs: list[Relation] = []
    where, params = condition_sql(rt.db, rel, cond, inputs)
    return _filtered(rel, where, params, inputs)


def _filtered(rel: Relation, where: str, params: tuple[Any, ...], inputs: list[Relation]) -> Relation:
    body = f"SELECT * FROM {rel.ref} WHERE {where}"
    return rel.with_inputs(tuple(inputs), body, params) if inputs else rel.then(body, params)


@slot_tool(
    "filter_data_any",
    "Keep the rows of the data that satisfy at least one of several conditions (OR).",
    _obj(
        {
            "data_source": DATA,
            "conditions": {
                "type": "array",
                "items": CONDITION,
                "minItems": 1,
                "description": "Conditions; a row is kept when any of them holds",
            },
        },
        ["data_source", "conditions"],
    ),
    column_params=(("conditions", "*", "key_name"), ("conditions", "*", "value_key_name")),
)
def filter_data_any(rt: Any, data_source: Any, conditions: list[dict[str, Any]]) -> Relation:
    rel = _need_relation(data_source)
    if not isinstance(conditions, list) or not conditions:
        raise ToolError("conditions must be a non-empty list")
    parts, params = [], ()
    inputs: list[Relation] = []
    for cond in conditions:
        s, p = condition_sql(rt.db, rel, cond, inputs)
        parts.append(f"({s})")
        params += p
    return _filtered(rel, " OR ".join(parts), params, inputs)


@slot_tool(
    "sort_data",
    "Sort the rows of the data by one or more columns (empty values come first when ascending, last "
    "when descending, unless nulls says otherwise).",
    _obj(
        {
            "data_source": DATA,
            "key_names": {
                "type": "array",
                "items": COLUMN,
                "minItems": 1,
                "description": "Columns to sort by, most important first",
            },
            "ascending": {
                "type": "array",
                "items": {"type": "boolean"},
                "description": "For each column in key_names: true for ascending, false for descending",
            },
            "nulls": {
                "type": "array",
                "items": {"type": "string", "enum": list(NULLS_PLACES)},
                "description": "For each column in key_names: where empty values go (first, last or default)",
            },
        },
        ["data_source", "key_names", "ascending"],
    ),
    column_params=(("key_names", "*"),),
)
def sort_data(
    rt: Any, data_source: Any, key_names: list[str], ascending: list[bool], nulls: list[str] | None = None
) -> Relation:
    rel = _need_relation(data_source)
    return rel.same_rows(order=_order(rel, key_names, ascending, nulls))


def _order(rel: Relation, key_names: Any, ascending: Any, nulls: Any) -> tuple[tuple[Any, ...], ...]:
    if not isinstance(key_names, list) or not key_names:
        raise ToolError("key_names must be a non-empty list of columns")
    if (
        not isinstance(ascending, list)
        or len(ascending) != len(key_names)
        or not all(isinstance(a, bool) for a in ascending)
    ):
        raise ToolError("ascending must be a list of booleans, one per column in key_names")
    if nulls is None:
        return tuple((rel.check_column(k), a) for k, a in zip(key_names, ascending))
    if not isinstance(nulls, list) or len(nulls) != len(key_names) or any(n not in NULLS_PLACES for n in nulls):
        raise ToolError(f"nulls must be a list with one of {', '.join(NULLS_PLACES)} per column in key_names")
    return tuple(
        (rel.check_column(k), a) + ((n,) if n != "default" else ()) for k, a, n in zip(key_names, ascending, nulls)
    )


@slot_tool(
    "limit_data",
    "Keep only the first n rows of the data (after skipping offset rows), in its current order.",
    _obj(
        {
            "data_source": DATA,
            "n": {"type": "integer", "minimum": 0, "description": "Number of rows to keep"},
            "offset": {"type": "integer", "minimum": 0, "description": "Rows to skip first (default 0)"},
        },
        ["data_source", "n"],
    ),
)
def limit_data(rt: Any, data_source: Any, n: int, offset: int = 0) -> Relation:
    rel = _need_relation(data_source)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0 or not isinstance(offset, int) or offset < 0:
        raise ToolError("n and offset must be non-negative integers")
    check_int(n, "n")
    check_int(offset, "offset")
    return rel.then(
        f"SELECT * FROM {rel.ref}{rel.order_sql()} LIMIT ? OFFSET ?", (n, offset), limited_from=(rel, n, offset)
    )


@slot_tool(
    "retrieve_data",
    "Keep only the given columns of the data (optionally without duplicate rows).",
    _obj(
        {
            "data_source": DATA,
            "key_names": {
                "type": "array",
                "items": COLUMN,
                "minItems": 1,
                "description": "Columns to keep, in this order",
            },
            "distinct": {"type": "boolean", "description": "Drop duplicate rows (default false)"},
        },
        ["data_source", "key_names"],
    ),
    column_params=(("key_names", "*"),),
)
def retrieve_data(rt: Any, data_source: Any, key_names: list[str], distinct: bool = False) -> Relation:
    rel = _need_relation(data_source)
    if not isinstance(key_names, list) or not key_names:
        raise ToolError("key_names must be a non-empty list of columns")
    keys = tuple(rel.check_column(k) for k in key_names)  # a column may be listed twice, as SQL allows
    if not distinct:
        return rel.same_rows(visible=keys)
    return _distinct(rel, keys)


def _distinct(rel: Relation, keys: tuple[str, ...]) -> Relation:
    sql = f"SELECT DISTINCT {', '.join(q(k) for k in keys)} FROM {rel.ref}"
    order = rel.order if all(o[0] in keys for o in rel.order) else ()
    return rel.then(sql, (), columns=keys, visible=keys, order=order)


@slot_tool(
    "get_unique_values",
    "The distinct values of one column of the data.",
    _obj({"data_source": DATA, "key_name": COLUMN}, ["data_source", "key_name"]),
    column_params=(("key_name",),),
)
def get_unique_values(rt: Any, data_source: Any, key_name: str) -> Relation:
    rel = _need_relation(data_source)
    return _distinct(rel, (rel.check_column(key_name),))


def _aggregate_sql(rel: Relation, aggregation: Any, key_name: Any) -> str:
    if aggregation not in AGGREGATIONS:
        raise ToolError(f"aggregation={aggregation!r} is not one of {', '.join(AGGREGATIONS)}", code="unknown_operator")
    if key_name is None:
        if aggregation != "count":
            raise ToolError(f"aggregation {aggregation} needs key_name")
        return "COUNT(*)"
    col = q(rel.check_column(key_name))
    if aggregation == "count_distinct":
        return f"COUNT(DISTINCT {col})"
    return f"{aggregation.upper()}({col})"


@slot_tool(
    "aggregate_data",
    "Compute one aggregate over the data: count (of rows, or of non-empty values of key_name), "
    "count_distinct, sum, avg, min or max of a column. Empty values are skipped.",
    _obj(
        {
            "data_source": DATA,
            "aggregation": {"type": "string", "enum": list(AGGREGATIONS)},
            "key_name": {**COLUMN, "description": "Column to aggregate; omit with count to count rows"},
        },
        ["data_source", "aggregation"],
    ),
    column_params=(("key_name",),),
    output="value",
)
def aggregate_data(rt: Any, data_source: Any, aggregation: str, key_name: str | None = None) -> Any:
    rel = _need_relation(data_source)
    expr = _aggregate_sql(rel, aggregation, key_name)
    return run_query(rt.db, *rel.query(f"SELECT {expr} FROM {rel.ref}"))[0][0]


@slot_tool(
    "group_data_by",
    "Group the rows of the data by the given columns and compute aggregates per group. With no "
    "key_names the whole data is one group. The result has the key columns and one column per "
    "aggregation, named by its output_name.",
    _obj(
        {
            "data_source": DATA,
            "key_names": {"type": "array", "items": COLUMN, "description": "Columns to group by (may be empty)"},
            "aggregations": {
                "type": "array",
                "minItems": 1,
                "description": "Aggregates to compute per group",
                "items": {
                    "type": "object",
                    "properties": {
                        "aggregation": {"type": "string", "enum": list(AGGREGATIONS)},
                        "key_name": {**COLUMN, "description": "Column to aggregate; omit with count to count rows"},
                        "output_name": {"type": "string", "description": "Name of the new column"},
                    },
                    "required": ["aggregation", "output_name"],
                    "additionalProperties": False,
                },
            },
        },
        ["data_source", "key_names", "aggregations"],
    ),
    column_params=(("key_names", "*"), ("aggregations", "*", "key_name")),
)
def group_data_by(rt: Any, data_source: Any, key_names: list[str], aggregations: list[dict[str, Any]]) -> Relation:
    rel = _need_relation(data_source)
    if not isinstance(key_names, list):
        raise ToolError("key_names must be a list of columns")
    if not isinstance(aggregations, list) or not aggregations:
        raise ToolError("aggregations must be a non-empty list")
    keys = tuple(rel.check_column(k) for k in key_names)
    select = [q(k) for k in keys]
    outs: list[str] = []
    descriptions = {k: rel.descriptions.get(k, k) for k in keys}
    for agg in aggregations:
        if not isinstance(agg, dict) or set(agg) - {"aggregation", "key_name", "output_name"}:
            raise ToolError("each aggregation is {aggregation, key_name?, output_name}")
        out = agg.get("output_name")
        if not isinstance(out, str) or not out or out in keys or out in outs:
            raise ToolError(f"output_name={out!r} must be a new, unique column name")
        select.append(f"{_aggregate_sql(rel, agg.get('aggregation'), agg.get('key_name'))} AS {q(out)}")
        outs.append(out)
        descriptions[out] = f"{agg.get('aggregation')} of {agg.get('key_name') or 'rows'} per group"
    group = f" GROUP BY {', '.join(q(k) for k in keys)}" if keys else ""
    sql = f"SELECT {', '.join(select)} FROM {rel.ref}{group}"
    cols = keys + tuple(outs)
    return rel.then(sql, (), columns=cols, visible=cols, order=(), descriptions=descriptions)


@slot_tool(
    "transform_data",
    "Add a column computed from one column with a function: substr(start, length), instr(substring), "
    "strftime(format, e.g. %Y), cast(type: integer|real|text|numeric), round(digits), replace(old, new), "
    "coalesce(default), upper, lower, length, abs, trim, date, julianday.",
    _obj(
        {
            "data_source": DATA,
            "key_name": COLUMN,
            "function": {"type": "string", "enum": list(TRANSFORMS)},
            "arguments": {
                "type": "object",
                "description": (
                    'The function\'s extra arguments by name, e.g. {"format": "%Y"}; '
                    'an argument may be {"key_name": column} to take it from a column'
                ),
            },
            "output_name": {"type": "string", "description": "Name of the new column"},
        },
        ["data_source", "key_name", "function", "output_name"],
    ),
    column_params=(("key_name",),),
)
def transform_data(
    rt: Any, data_source: Any, key_name: str, function: str, output_name: str, arguments: dict[str, Any] | None = None
) -> Relation:
    rel = _need_relation(data_source)
    col = q(rel.check_column(key_name))
    if function not in TRANSFORMS:
        raise ToolError(f"function={function!r} is not one of {', '.join(TRANSFORMS)}", code="unknown_operator")
    args = dict(arguments or {})
    allowed, required = TRANSFORMS[function]
    if set(args) - set(allowed) or set(required) - set(args):
        raise ToolError(
            f"function {function} takes arguments {list(allowed)} (required {list(required)}), got {sorted(args)}"
        )
    params: tuple[Any, ...] = ()

    def bind(name: str) -> str:
        nonlocal params
        value = args[name]
        if isinstance(value, dict) and set(value) == {"key_name"}:  # an argument taken from another column
            return q(rel.check_column(value["key_name"], arg=f"arguments.{name}.key_name"))
        frag, p = bind_scalar(value, rt.db)
        params += p
        return frag

    if function == "substr":
        expr = f"substr({col}, {bind('start')}" + (f", {bind('length')})" if "length" in args else ")")
    elif function == "instr":
        expr = f"instr({col}, {bind('substring')})"
    elif function == "strftime":
        expr = f"strftime({bind('format')}, {col})"
    elif function == "cast":
        if args["type"] not in CAST_TYPES:
            raise ToolError(f"cast type must be one of {', '.join(CAST_TYPES)}")
        expr = f"CAST({col} AS {CAST_TYPES[args['type']]})"
    elif function == "round":
        expr = f"round({col}, {bind('digits')})" if "digits" in args else f"round({col})"
    elif function == "replace":
        expr = f"replace({col}, {bind('old')}, {bind('new')})"
    elif function == "coalesce":
        expr = f"coalesce({col}, {bind('default')})"
    else:
        expr = f"{function}({col})"
    return _add_column(rel, output_name, expr, params, f"{function} of {key_name}")


@slot_tool(
    "compute_column",
    "Add a column computed by arithmetic (add, subtract, multiply, divide, modulo) or concatenation "
    "of two operands, each a column or a value. Dividing two integers gives an integer.",
    _obj(
        {
            "data_source": DATA,
            "operator": {"type": "string", "enum": [*ARITHMETIC, "concat"]},
            "left": OPERAND,
            "right": OPERAND,
            "output_name": {"type": "string", "description": "Name of the new column"},
        },
        ["data_source", "operator", "left", "right", "output_name"],
    ),
    column_params=(("left", "key_name"), ("right", "key_name")),
)
def compute_column(rt: Any, data_source: Any, operator: str, left: Any, right: Any, output_name: str) -> Relation:
    rel = _need_relation(data_source)
    if operator not in ARITHMETIC and operator != "concat":
        raise ToolError(
            f"operator={operator!r} is not one of {', '.join([*ARITHMETIC, 'concat'])}", code="unknown_operator"
        )
    ls, lp = operand_sql(rt.db, rel, left)
    rs, rp = operand_sql(rt.db, rel, right)
    sym = "||" if operator == "concat" else ARITHMETIC[operator]
    return _add_column(rel, output_name, f"({ls} {sym} {rs})", lp + rp, f"{operator} result")


@slot_tool(
    "case_column",
    "Add a column whose value is the result of the first case whose conditions all hold, "
    "or the default when none holds.",
    _obj(
        {
            "data_source": DATA,
            "cases": {
                "type": "array",
                "minItems": 1,
                "description": "Cases tried in order; the first that holds gives the value",
                "items": {
                    "type": "object",
                    "properties": {
                        "conditions": {"type": "array", "items": CONDITION, "minItems": 1},
                        "result": OPERAND,
                    },
                    "required": ["conditions", "result"],
                    "additionalProperties": False,
                },
            },
            "default": {**OPERAND, "description": "Result when no case holds (omit for empty)"},
            "output_name": {"type": "string", "description": "Name of the new column"},
        },
        ["data_source", "cases", "output_name"],
    ),
    column_params=(
        ("cases", "*", "conditions", "*", "key_name"),
        ("cases", "*", "conditions", "*", "value_key_name"),
        ("cases", "*", "result", "key_name"),
        ("default", "key_name"),
    ),
)
def case_column(
    rt: Any, data_source: Any, cases: list[dict[str, Any]], output_name: str, default: Any = None
) -> Relation:
    rel = _need_relation(data_source)
    if not isinstance(cases, list) or not cases:
        raise ToolError("cases must be a non-empty list")
    parts, params = ["CASE"], ()
    for case in cases:
        if not isinstance(case, dict) or set(case) != {"conditions", "result"}:
            raise ToolError("each case is {conditions, result}")
        conds = case["conditions"]
        if not isinstance(conds, list) or not conds:
            raise ToolError("a case needs a non-empty list of conditions")
        sqls = []
        for cond in conds:
            s, p = condition_sql(rt.db, rel, cond)
            sqls.append(f"({s})")
            params += p
        r, rp = operand_sql(rt.db, rel, case["result"])
        params += rp
        parts.append(f"WHEN {' AND '.join(sqls)} THEN {r}")
    if default is not None:
        d, dp = operand_sql(rt.db, rel, default)
        params += dp
        parts.append(f"ELSE {d}")
    parts.append("END")
    return _add_column(rel, output_name, " ".join(parts), params, "case result")


@slot_tool(
    "calculate",
    "Arithmetic on two values (numbers or earlier outputs): add, subtract, multiply, divide, modulo. "
    "Dividing two integers gives an integer.",
    _obj(
        {"operator": {"type": "string", "enum": list(ARITHMETIC)}, "left": SCALAR, "right": SCALAR},
        ["operator", "left", "right"],
    ),
    output="value",
)
def calculate(rt: Any, operator: str, left: Any, right: Any) -> Any:
    if operator not in ARITHMETIC:
        raise ToolError(f"operator={operator!r} is not one of {', '.join(ARITHMETIC)}", code="unknown_operator")
    ls, lp = bind_scalar(left, rt.db)
    rs, rp = bind_scalar(right, rt.db)
    return run_query(rt.db, f"SELECT {ls} {ARITHMETIC[operator]} {rs}", lp + rp)[0][0]


# ---- extended tier: derived data as a table, joins, set operations, ranking ----------------------
@slot_tool(
    "alias_data",
    "Use the data like a table named alias: its columns are renamed alias.<name> (by default the part "
    "of each column's name after the last dot), so it can be joined with other data.",
    _obj(
        {
            "data_source": DATA,
            "alias": {"type": "string", "description": "The name to prefix the columns with"},
            "column_names": {
                "type": "array",
                "items": {"type": "string"},
                "description": "New names for the data's columns, in order (optional)",
            },
        },
        ["data_source", "alias"],
    ),
    tier="extended",
)
def alias_data(rt: Any, data_source: Any, alias: str, column_names: list[str] | None = None) -> Relation:
    rel = _need_relation(data_source)
    if not isinstance(alias, str) or not alias.strip() or "." in alias:
        raise ToolError("alias must be a non-empty name without dots")
    names = column_names if column_names is not None else [c.rsplit(".", 1)[-1] for c in rel.visible]
    if (
        not isinstance(names, list)
        or len(names) != len(rel.visible)
        or not all(isinstance(n, str) and n for n in names)
    ):
        raise ToolError(f"column_names must list {len(rel.visible)} names, one per column: {', '.join(rel.visible)}")
    new = tuple(f"{alias}.{n}" for n in names)
    if len(set(c.lower() for c in new)) != len(new):
        raise ToolError(f"the new column names are not unique: {', '.join(new)}; pass column_names")
    select = ", ".join(f"{q(c)} AS {q(n)}" for c, n in zip(rel.visible, new))
    descriptions = {n: rel.descriptions.get(c, c) for c, n in zip(rel.visible, new)}
    return rel.then(
        f"SELECT {select} FROM {rel.ref}", (), columns=new, visible=new, order=(), descriptions=descriptions
    )


@slot_tool(
    "join_data",
    "Join two data: every row of data_source with the matching rows of other (inner: only rows with a "
    "match; left: also rows of data_source without one, with empty values; cross: all pairs). "
    "Their column names must differ (use alias_data first).",
    _obj(
        {
            "data_source": DATA,
            "other": {**DATA, "description": "The data to join with, as $label$"},
            "type": {"type": "string", "enum": ["inner", "left", "cross"]},
            "on": {
                "type": "array",
                "items": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
                "description": "Pairs of equal columns [column of data_source, column of other]",
            },
        },
        ["data_source", "other", "type"],
    ),
    tier="extended",
)
def join_data(rt: Any, data_source: Any, other: Any, type: str, on: list[list[str]] | None = None) -> Relation:
    left, right = _need_relation(data_source), _need_relation(other, "other")
    clash = {c.lower() for c in left.columns} & {c.lower() for c in right.columns}
    if clash:
        raise ToolError(
            f"both data have the column(s) {', '.join(sorted(clash))}; rename one side with alias_data first"
        )
    if type not in ("inner", "left", "cross"):
        raise ToolError(f"type {type!r} is not inner, left or cross")
    pairs = on or []
    if (type == "cross") != (not pairs):
        raise ToolError("a cross join takes no 'on' pairs; inner and left joins need them")
    conds = []
    for pair in pairs:
        if not isinstance(pair, list) or len(pair) != 2:
            raise ToolError("each 'on' entry must be [column of data_source, column of other]")
        conds.append(f"l.{q(left.check_column(pair[0], arg='on'))} = r.{q(right.check_column(pair[1], arg='on'))}")
    select = ", ".join([f"l.{q(c)} AS {q(c)}" for c in left.columns] + [f"r.{q(c)} AS {q(c)}" for c in right.columns])
    how = {"inner": "JOIN", "left": "LEFT JOIN", "cross": "CROSS JOIN"}[type]
    body = f"SELECT {select} FROM {left.ref} AS l {how} {right.ref} AS r" + (
        f" ON {' AND '.join(conds)}" if conds else ""
    )
    return left.with_inputs(
        (right,),
        body,
        (),
        columns=left.columns + right.columns,
        visible=left.columns + right.columns,
        order=(),
        descriptions={**left.descriptions, **right.descriptions},
    )


@slot_tool(
    "combine_data",
    "Combine the rows of two data with the same number of columns: union (without duplicates), union_all, "
    "intersect (rows in both) or except (rows of data_source not in other). Columns keep data_source's names.",
    _obj(
        {
            "data_source": DATA,
            "other": {**DATA, "description": "The second data, as $label$"},
            "operation": {"type": "string", "enum": list(SET_OPERATIONS)},
        },
        ["data_source", "other", "operation"],
    ),
    tier="extended",
)
def combine_data(rt: Any, data_source: Any, other: Any, operation: str) -> Relation:
    left, right = _need_relation(data_source), _need_relation(other, "other")
    if operation not in SET_OPERATIONS:
        raise ToolError(f"operation={operation!r} is not one of {', '.join(SET_OPERATIONS)}", code="unknown_operator")
    if len(left.visible) != len(right.visible):
        raise ToolError(
            f"data_source has {len(left.visible)} columns and other {len(right.visible)}; "
            "retrieve the same number of columns from both first"
        )
    names = left.visible
    if len({n.lower() for n in names}) != len(names):
        raise ToolError(f"data_source lists a column twice ({', '.join(names)}); retrieve each column once")
    lsel = ", ".join(q(c) for c in names)
    rsel = ", ".join(f"{q(c)} AS {q(n)}" for c, n in zip(right.visible, names))
    body = f"SELECT {lsel} FROM {left.ref} {SET_OPERATIONS[operation]} SELECT {rsel} FROM {right.ref}"
    return left.with_inputs(
        (right,),
        body,
        (),
        columns=names,
        visible=names,
        order=(),
        descriptions={n: left.descriptions.get(n, n) for n in names},
    )


@slot_tool(
    "rank_rows",
    "Add a column numbering or ranking the rows by some columns, separately within each group of partition_by "
    "columns: row_number (1, 2, 3, ...), rank (ties share a rank, gaps follow) or dense_rank (no gaps).",
    _obj(
        {
            "data_source": DATA,
            "function": {"type": "string", "enum": list(RANKINGS)},
            "key_names": {"type": "array", "items": COLUMN, "minItems": 1, "description": "Columns to order by"},
            "ascending": {"type": "array", "items": {"type": "boolean"}, "description": "One per column in key_names"},
            "nulls": {
                "type": "array",
                "items": {"type": "string", "enum": list(NULLS_PLACES)},
                "description": "For each column in key_names: where empty values go (optional)",
            },
            "partition_by": {
                "type": "array",
                "items": COLUMN,
                "description": "Rank within groups of these columns (optional)",
            },
            "output_name": {"type": "string", "description": "Name of the new column"},
        },
        ["data_source", "function", "key_names", "ascending", "output_name"],
    ),
    column_params=(("key_names", "*"), ("partition_by", "*")),
    tier="extended",
)
def rank_rows(
    rt: Any,
    data_source: Any,
    function: str,
    key_names: list[str],
    ascending: list[bool],
    output_name: str,
    partition_by: list[str] | None = None,
    nulls: list[str] | None = None,
) -> Relation:
    rel = _need_relation(data_source)
    if function not in RANKINGS:
        raise ToolError(f"function={function!r} is not one of {', '.join(RANKINGS)}", code="unknown_operator")
    order = _order(rel, key_names, ascending, nulls)
    if partition_by is not None and not isinstance(partition_by, list):
        raise ToolError("partition_by must be a list of columns")
    part = [q(rel.check_column(c, arg="partition_by")) for c in partition_by or []]
    window = (f"PARTITION BY {', '.join(part)} " if part else "") + rel.same_rows(order=order).order_sql().strip()
    return _add_column(
        rel, output_name, f"{RANKINGS[function]}() OVER ({window})", (), f"{function} by {', '.join(key_names)}"
    )
