"""A REST endpoint's description: every step of its call template in words.

Each tool has a phrase builder in :data:`PHRASES` (a tool without one is named as such, so no step
is left out in silence). The builders follow the data by label from the set-up calls to the last
call: a data output is its source plus the clauses of the steps that made it (``where``, sorted
by, keeping the first n rows, grouped by, computed columns, ...), a value output (an aggregate,
a calculation) is a phrase over the data it was computed from. A REST parameter
(``{"__param__": name}``) reads as ``{name}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

PARAM = "__param__"

OPERATOR_WORDS = {
    "equal_to": "equals",
    "not_equal_to": "differs from",
    "greater_than": "is greater than",
    "greater_than_or_equal_to": "is at least",
    "less_than": "is less than",
    "less_than_or_equal_to": "is at most",
    "contains": "contains",
    "not_contains": "does not contain",
    "starts_with": "starts with",
    "not_starts_with": "does not start with",
    "ends_with": "ends with",
    "not_ends_with": "does not end with",
    "like": "matches the pattern",
    "not_like": "does not match the pattern",
    "in": "is one of",
    "not_in": "is none of",
    "between": "is between",
    "not_between": "is not between",
}
_AGGREGATES = {
    "count": "the count of",
    "count_distinct": "the count of distinct",
    "sum": "the sum of",
    "avg": "the average of",
    "min": "the minimum of",
    "max": "the maximum of",
}
_ARITHMETIC = {
    "add": "plus",
    "subtract": "minus",
    "multiply": "times",
    "divide": "divided by",
    "modulo": "modulo",
    "concat": "followed by",
}
_JOINS = {"inner": "joined with", "left": "left-joined with", "cross": "cross-joined with"}
_COMBINE = {
    "union": "combined (union, without duplicates) with",
    "union_all": "combined (union all) with",
    "intersect": "keeping only the rows also in",
    "except": "without the rows in",
}


@dataclass(frozen=True)
class Data:
    """What a data output holds, in words: its source, the steps' clauses, its columns when known."""

    source: str
    clauses: tuple[tuple[str, str], ...] = ()  # (kind, text): kind "where" clauses read as one
    columns: tuple[str, ...] | None = None  # None: every column of the source

    def then(self, kind: str, text: str, columns: tuple[str, ...] | None | bool = False) -> "Data":
        return replace(
            self, clauses=self.clauses + ((kind, text),), columns=self.columns if columns is False else columns
        )

    def text(self) -> str:
        out, last = self.source, None
        for kind, text in self.clauses:
            if kind == "where":
                out += " and " + text if last == "where" else ("," if last else "") + " where " + text
            else:
                out += ", " + text
            last = kind
        return out


class Describer:
    """Follows a call template's outputs by label; :meth:`describe` gives the sentence."""

    def __init__(self) -> None:
        self.outputs: dict[str, Data | str] = {}  # label -> data, or a value's phrase

    # ---- values and references -----------------------------------------------------------------
    def value(self, value: Any) -> str:
        """A literal, a parameter (``{name}``) or an earlier output (its phrase in parentheses)."""
        if isinstance(value, dict) and set(value) == {PARAM}:
            return "{" + str(value[PARAM]) + "}"
        if isinstance(value, str) and len(value) > 2 and value[0] == value[-1] == "$":
            ref = self.outputs.get(value[1:-1].split(".", 1)[0])
            if isinstance(ref, Data):
                return f"(the values of {self.nested(ref)})"
            if ref is not None:
                return f"({ref})"
        if isinstance(value, list):
            return "[" + ", ".join(self.value(v) for v in value) + "]"
        if isinstance(value, str):
            return "'" + value + "'"
        return json.dumps(value, ensure_ascii=False)

    def nested(self, data: Data) -> str:
        """Data used inside another step, with its columns."""
        return f"{_columns(data) if data.columns else 'every column'} from {data.text()}"

    def data(self, ref: Any) -> Data:
        found = self.outputs.get(ref[1:-1]) if isinstance(ref, str) and len(ref) > 2 else None
        return found if isinstance(found, Data) else Data(source="the data " + str(ref))

    def condition(self, cond: Mapping[str, Any]) -> str:
        col, op = cond.get("key_name"), cond.get("operator")
        if op == "is_null":
            return f"{col} is empty"
        if op == "is_not_null":
            return f"{col} is not empty"
        words = OPERATOR_WORDS.get(str(op), str(op))
        if "value_key_name" in cond:
            return f"{col} {words} {cond['value_key_name']}"
        value = cond.get("value")
        if op in ("between", "not_between") and isinstance(value, list) and len(value) == 2:
            return f"{col} {words} {self.value(value[0])} and {self.value(value[1])}"
        return f"{col} {words} {self.value(value)}"

    def operand(self, operand: Any) -> str:
        if isinstance(operand, dict) and "key_name" in operand:
            return str(operand["key_name"])
        return self.value(operand.get("value") if isinstance(operand, dict) else operand)

    # ---- the sentence --------------------------------------------------------------------------
    def setup(self, call: Mapping[str, Any]) -> None:
        args = call.get("arguments") or {}
        source = str(args.get("source"))
        joins = args.get("joins") or []
        kinds: list[tuple[str, list[str]]] = []
        if args.get("alias") and args["alias"] != source:
            source += f" as {args['alias']}"
        for join in joins:
            words = _JOINS.get(join.get("type"), "joined with")
            table = str(join.get("table"))
            if join.get("alias") and join["alias"] != table:
                table += f" as {join['alias']}"
            if kinds and kinds[-1][0] == words:
                kinds[-1][1].append(table)
            else:
                kinds.append((words, [table]))
        text = " ".join([source] + [f"{words} {', '.join(tables)}" for words, tables in kinds])
        if call.get("label"):
            self.outputs[call["label"]] = Data(source=text)

    def call(self, call: Mapping[str, Any]) -> Data | str:
        args = call.get("arguments") or {}
        builder = PHRASES.get(call.get("name", ""), _unknown)
        out = builder(self, call.get("name", ""), args)
        if call.get("label"):
            self.outputs[call["label"]] = out
        return out

    def describe(self, setup: list[Mapping[str, Any]], calls: list[Mapping[str, Any]]) -> str:
        for c in setup:
            self.setup(c)
        final: Data | str = Data(source="the data")
        for c in calls:
            final = self.call(c)
        return f"Returns {self.nested(final) if isinstance(final, Data) else final}."


def _columns(data: Data) -> str:
    cols = ", ".join(data.columns or ())
    return f"the column{'s' if len(data.columns or ()) != 1 else ''} {cols}"


# ---- one phrase builder per tool ---------------------------------------------------------------
Builder = Callable[[Describer, str, Mapping[str, Any]], "Data | str"]


def _filter(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    return d.data(args.get("data_source")).then("where", d.condition(args))


def _filter_any(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    conds = [d.condition(c) for c in args.get("conditions") or []]
    text = conds[0] if len(conds) == 1 else "(" + " or ".join(conds) + ")"
    return d.data(args.get("data_source")).then("where", text)


def _sort(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    return d.data(args.get("data_source")).then("sort", "sorted by " + _order(args))


def _order(args: Mapping[str, Any]) -> str:
    keys, asc, nulls = args.get("key_names") or [], args.get("ascending") or [], args.get("nulls") or []
    parts = []
    for i, key in enumerate(keys):
        text = f"{key} {'ascending' if i < len(asc) and asc[i] else 'descending'}"
        if i < len(nulls) and nulls[i] in ("first", "last"):
            text += f" (empty values {nulls[i]})"
        parts.append(text)
    return ", ".join(parts)


def _limit(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    n, offset = args.get("n"), args.get("offset") or 0
    rows = "the first row" if n == 1 else f"the first {d.value(n)} rows"
    if offset:
        rows = (
            "1 row" if n == 1 else f"{d.value(n)} rows"
        ) + f" after skipping {d.value(offset)} row{'' if offset == 1 else 's'}"
    return d.data(args.get("data_source")).then("limit", "keeping " + rows)


def _retrieve(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    data = d.data(args.get("data_source"))
    keys = tuple(str(k) for k in args.get("key_names") or [])
    if args.get("distinct"):
        return data.then("distinct", "without duplicate rows", keys)
    return replace(data, columns=keys)


def _unique(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    key = str(args.get("key_name"))
    return d.data(args.get("data_source")).then("distinct", f"keeping the distinct values of {key}", (key,))


def _aggregation(agg: Mapping[str, Any]) -> str:
    words = _AGGREGATES.get(str(agg.get("aggregation")), str(agg.get("aggregation")))
    return f"{words} {agg.get('key_name') or 'rows'}"


def _aggregate(d: Describer, _name: str, args: Mapping[str, Any]) -> str:
    return f"{_aggregation(args)} from {d.data(args.get('data_source')).text()}"


def _group(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    keys = [str(k) for k in args.get("key_names") or []]
    aggs = args.get("aggregations") or []
    computed = ", ".join(f"{a.get('output_name')} = {_aggregation(a)}" for a in aggs)
    text = f"grouped by {', '.join(keys)} with {computed} per group" if keys else f"with {computed} over all rows"
    columns = tuple(keys) + tuple(str(a.get("output_name")) for a in aggs)
    return d.data(args.get("data_source")).then("group", text, columns)


def _added(data: Data, out: Any) -> tuple[str, ...] | None:
    return data.columns + (str(out),) if data.columns is not None else None


def _transform(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    data = d.data(args.get("data_source"))
    extra = args.get("arguments") or {}
    text = f"with {args.get('output_name')} = {args.get('function')} of {args.get('key_name')}"
    if extra:
        text += (
            " ("
            + ", ".join(f"{k} {d.operand(v) if isinstance(v, dict) else d.value(v)}" for k, v in extra.items())
            + ")"
        )
    return data.then("column", text, _added(data, args.get("output_name")))


def _compute(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    data = d.data(args.get("data_source"))
    op = _ARITHMETIC.get(str(args.get("operator")), str(args.get("operator")))
    text = f"with {args.get('output_name')} = {d.operand(args.get('left'))} {op} {d.operand(args.get('right'))}"
    return data.then("column", text, _added(data, args.get("output_name")))


def _case(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    data = d.data(args.get("data_source"))
    cases = [
        f"{d.operand(c.get('result'))} when {' and '.join(d.condition(x) for x in c.get('conditions') or [])}"
        for c in args.get("cases") or []
    ]
    default = args.get("default")
    text = f"with {args.get('output_name')} = " + "; ".join(cases)
    text += f"; else {d.operand(default)}" if default is not None else "; else empty"
    return data.then("column", text, _added(data, args.get("output_name")))


def _calculate(d: Describer, _name: str, args: Mapping[str, Any]) -> str:
    op = _ARITHMETIC.get(str(args.get("operator")), str(args.get("operator")))
    return f"{d.value(args.get('left'))} {op} {d.value(args.get('right'))}"


def _alias(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    data = d.data(args.get("data_source"))
    alias = str(args.get("alias"))
    names = args.get("column_names")
    columns = (
        tuple(f"{alias}.{n}" for n in names)
        if isinstance(names, list)
        else tuple(f"{alias}.{c.rsplit('.', 1)[-1]}" for c in data.columns)
        if data.columns
        else None
    )
    return data.then("alias", f"named {alias}", columns)


def _join(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    left, right = d.data(args.get("data_source")), d.data(args.get("other"))
    pairs = " and ".join(f"{p[0]} = {p[1]}" for p in args.get("on") or [] if isinstance(p, list) and len(p) == 2)
    text = f"{_JOINS.get(args.get('type'), 'joined with')} ({d.nested(right)})" + (f" on {pairs}" if pairs else "")
    cols = left.columns + right.columns if left.columns is not None and right.columns is not None else None
    return left.then("join", text, cols)


def _combine(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    other = d.data(args.get("other"))
    text = f"{_COMBINE.get(args.get('operation'), str(args.get('operation')))} ({d.nested(other)})"
    return d.data(args.get("data_source")).then("combine", text)


def _rank(d: Describer, _name: str, args: Mapping[str, Any]) -> Data:
    data = d.data(args.get("data_source"))
    text = f"with {args.get('output_name')} = {args.get('function')} by {_order(args)}"
    if args.get("partition_by"):
        text += f" within each {', '.join(map(str, args['partition_by']))}"
    return data.then("column", text, _added(data, args.get("output_name")))


def _unknown(d: Describer, name: str, args: Mapping[str, Any]) -> Data:
    data = d.data(args.get("data_source"))
    rest = {k: v for k, v in args.items() if k != "data_source"}
    return data.then("step", f"then {name}({', '.join(f'{k}={d.value(v)}' for k, v in rest.items())})", None)


PHRASES: dict[str, Builder] = {
    "filter_data": _filter,
    "filter_data_any": _filter_any,
    "sort_data": _sort,
    "limit_data": _limit,
    "retrieve_data": _retrieve,
    "get_unique_values": _unique,
    "aggregate_data": _aggregate,
    "group_data_by": _group,
    "transform_data": _transform,
    "compute_column": _compute,
    "case_column": _case,
    "calculate": _calculate,
    "alias_data": _alias,
    "join_data": _join,
    "combine_data": _combine,
    "rank_rows": _rank,
}


def describe_endpoint(setup: list[Mapping[str, Any]], calls: list[Mapping[str, Any]]) -> str:
    """The endpoint's calls in words: its source, then every filter, sort, limit, grouping,
    aggregate, distinct and computed column in the order they apply."""
    return Describer().describe(setup, calls)
