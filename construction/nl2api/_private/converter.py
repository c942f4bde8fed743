"""SQL (SQLite dialect) -> SLOT tool-call sequence.

The converter walks sqlglot's AST and emits calls to the SLOT tools in ``tools.py``. It
never executes anything: verification (``verify.py``) runs both the SQL and the emitted
sequence and keeps the pair only if the results agree. Anything it cannot translate
faithfully raises :class:`Rejection` with a reason code from :data:`REASONS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp

from benchsmith.schemas import ToolCall

from .database import Database
from .reasons import REASONS, Rejection
from .rewrite import DECORRELATED, TableLookup, conjuncts, output_names, prepare

__all__ = ["REASONS", "Conversion", "Converter", "Rejection", "convert", "parse_select"]

MAX_CNF_CLAUSES = 16


@dataclass
class Conversion:
    setup: list[ToolCall]
    calls: list[ToolCall]
    final: str
    ordered: bool
    features: set[str] = field(default_factory=set)


@dataclass
class _Scope:
    # sql alias (lower) -> (prefix, table name)
    aliases: dict[str, tuple[str, str]]
    outer: "_Scope | None" = None
    merged: set[str] = field(default_factory=set)  # right-hand copies of JOIN ... USING columns
    # sql alias (lower) -> (prefix, output column names) of a subquery in FROM / JOIN
    derived: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    entries: list[str] = field(default_factory=list)  # aliases (lower) in FROM order
    qualified_only: set[str] = field(default_factory=set)  # derived aliases added by decorrelation

    def star(self, db: Database) -> list[str]:
        """The columns ``SELECT *`` gives, in FROM order."""
        out = []
        for alias in self.entries:
            if alias in self.qualified_only:
                continue
            if alias in self.derived:
                prefix, names = self.derived[alias]
                out += [f"{prefix}.{n}" for n in names]
            else:
                prefix, table = self.aliases[alias]
                out += [
                    f"{prefix}.{c.name}" for c in db.table(table).columns if f"{prefix}.{c.name}" not in self.merged
                ]
        return out


# an operand: ("col", name) or ("val", python value / "$label$")
Operand = tuple[str, Any]

_CAST_TYPES = {
    "INT": "integer",
    "INTEGER": "integer",
    "BIGINT": "integer",
    "SMALLINT": "integer",
    "TINYINT": "integer",
    "DOUBLE": "real",
    "FLOAT": "real",
    "REAL": "real",
    "DECIMAL": "numeric",
    "TEXT": "text",
    "VARCHAR": "text",
    "CHAR": "text",
    "NVARCHAR": "text",
    "NCHAR": "text",
}
_AGGS = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
_COMPARE = {
    exp.EQ: "equal_to",
    exp.NEQ: "not_equal_to",
    exp.GT: "greater_than",
    exp.GTE: "greater_than_or_equal_to",
    exp.LT: "less_than",
    exp.LTE: "less_than_or_equal_to",
}
_FLIP = {
    "equal_to": "equal_to",
    "not_equal_to": "not_equal_to",
    "greater_than": "less_than",
    "less_than": "greater_than",
    "greater_than_or_equal_to": "less_than_or_equal_to",
    "less_than_or_equal_to": "greater_than_or_equal_to",
}
_NEGATE = {
    "equal_to": "not_equal_to",
    "not_equal_to": "equal_to",
    "greater_than": "less_than_or_equal_to",
    "less_than_or_equal_to": "greater_than",
    "less_than": "greater_than_or_equal_to",
    "greater_than_or_equal_to": "less_than",
    "contains": "not_contains",
    "not_contains": "contains",
    "like": "not_like",
    "not_like": "like",
    "starts_with": "not_starts_with",
    "not_starts_with": "starts_with",
    "ends_with": "not_ends_with",
    "not_ends_with": "ends_with",
    "in": "not_in",
    "not_in": "in",
    "between": "not_between",
    "not_between": "between",
    "is_null": "is_not_null",
    "is_not_null": "is_null",
}
_ARITH = {
    exp.Add: "add",
    exp.Sub: "subtract",
    exp.Mul: "multiply",
    exp.Div: "divide",
    exp.Mod: "modulo",
    exp.DPipe: "concat",
}
_SIMPLE_TRANSFORMS = {exp.Upper: "upper", exp.Lower: "lower", exp.Length: "length", exp.Abs: "abs", exp.Trim: "trim"}


def parse_select(sql: str) -> exp.Select:
    """Parse one SQLite statement; reject what is not a single (non-compound) SELECT."""
    tree = parse_query(sql)
    if not isinstance(tree, exp.Select):
        raise Rejection("set_operation", type(tree).__name__.upper())
    return tree


_SET_OPS = (exp.Union, exp.Intersect, exp.Except)
_RANKINGS = {exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank"}


def parse_query(sql: str) -> exp.Expression:
    """Parse one SQLite statement: a SELECT or a compound SELECT (UNION / INTERSECT / EXCEPT)."""
    try:
        statements = [s for s in sqlglot.parse(sql, read="sqlite") if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise Rejection("parse_error", str(exc).splitlines()[0][:200]) from None
    if len(statements) != 1:
        raise Rejection("multiple_statements" if statements else "parse_error", f"{len(statements)} statements")
    tree = statements[0]
    if not isinstance(tree, (exp.Select, *_SET_OPS)):
        raise Rejection("not_select", f"{type(tree).__name__} statement")
    return tree


def _check_global(tree: exp.Expression) -> None:
    for node in tree.walk():
        if type(node).__name__ == "Rand" or (isinstance(node, exp.Anonymous) and str(node.this).lower() == "random"):
            raise Rejection("nondeterministic", "random()")
        if (
            isinstance(node, exp.Literal)
            and node.is_string
            and node.this.lower() == "now"
            and isinstance(node.parent, exp.Func)
        ):
            raise Rejection("nondeterministic", "'now'")
        if isinstance(node, (exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentTime)):
            raise Rejection("nondeterministic", "current date/time")


class Converter:
    """Convert one SELECT into setup calls (hidden initialisation) and gold calls."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.setup: list[ToolCall] = []
        self.calls: list[ToolCall] = []
        self.features: set[str] = set()
        self._n = 0
        self._names: set[str] = set()
        self.visible: dict[str, list[str]] = {}  # data label -> its visible columns

    # ---- emission ---------------------------------------------------------------------
    def _label(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}_{self._n}"

    def emit(self, name: str, args: dict[str, Any], prefix: str, *, hidden: bool = False) -> str:
        label = self._label(prefix)
        (self.setup if hidden else self.calls).append(ToolCall(name=name, arguments=args, label=label))
        return label

    def fresh_name(self, base: str) -> str:
        base = re.sub(r"[^0-9A-Za-z_]+", "_", base).strip("_").lower() or "value"
        name, k = base, 2
        while name in self._names:
            name, k = f"{base}_{k}", k + 1
        self._names.add(name)
        return name

    # ---- entry ------------------------------------------------------------------------
    def convert(self, sql: str) -> Conversion:
        tree = parse_query(sql)
        _check_global(tree)
        tree = prepare(tree, TableLookup(self.db))
        label, _ = self.select_any(tree, None)
        return Conversion(self.setup, self.calls, label, bool(tree.args.get("order")), self.features)

    def select_any(self, node: exp.Expression, outer: _Scope | None, *, as_data: bool = False) -> tuple[str, str]:
        """A SELECT or a compound SELECT; returns (label, kind) with kind "data" or "value"."""
        if isinstance(node, exp.Subquery):
            node = node.this
        if isinstance(node, exp.Select):
            return self.select(node, outer, as_data=as_data)
        if isinstance(node, _SET_OPS):
            return self._compound(node, outer)
        raise Rejection("not_select", f"{type(node).__name__} where a query was expected")

    def _compound(self, node: exp.Expression, outer: _Scope | None) -> tuple[str, str]:
        if node.args.get("with_") is not None:
            raise Rejection("cte", "WITH inside a compound SELECT")
        self.features.add("set_operation")
        left, _ = self.select_any(node.this, outer, as_data=True)
        right, _ = self.select_any(node.expression, outer, as_data=True)
        if isinstance(node, exp.Union):
            op = "union" if node.args.get("distinct", True) else "union_all"
        else:
            if node.args.get("distinct") is False:
                raise Rejection("set_operation", f"{type(node).__name__.upper()} ALL")
            op = "intersect" if isinstance(node, exp.Intersect) else "except"
        cols = self.visible[left]
        if len(cols) != len(self.visible[right]):
            raise Rejection("set_operation", f"{op.upper()} of {len(cols)} and {len(self.visible[right])} columns")
        if len({c.lower() for c in cols}) != len(cols):
            raise Rejection("set_operation", "the first SELECT of a compound lists a column twice")
        label = self.emit(
            "combine_data", {"data_source": f"${left}$", "other": f"${right}$", "operation": op}, "combined"
        )
        names = [n.lower() for n in output_names(node) or []]
        order = node.args.get("order")
        if order is not None:
            self.features.add("order")
            keys, asc, nulls = [], [], []
            for o in order.expressions:
                t = o.this
                if (
                    isinstance(t, exp.Literal)
                    and not t.is_string
                    and str(t.this).isdigit()
                    and 1 <= int(t.this) <= len(cols)
                ):
                    pos = int(t.this) - 1
                elif isinstance(t, exp.Column) and t.name.lower() in names:
                    pos = names.index(t.name.lower())
                else:
                    raise Rejection(
                        "set_operation", f"ORDER BY {t.sql(dialect='sqlite')[:40]} is no result column of the compound"
                    )
                desc = bool(o.args.get("desc"))
                keys.append(cols[pos])
                asc.append(not desc)
                nulls.append(_nulls_place(o, desc))
            label = self.emit("sort_data", _sort_args(label, keys, asc, nulls), "sorted")
        label = self._limit(node, label)
        self.visible[label] = list(cols)
        return label, "data"

    def _limit(self, node: exp.Expression, label: str) -> str:
        limit, offset = _int_clause(node.args.get("limit")), _int_clause(node.args.get("offset"))
        if limit is None and offset is None:
            return label
        self.features.add("limit")
        if limit is None or limit < 0:
            raise Rejection("unsupported_expression", "OFFSET without a non-negative LIMIT")
        args = {"data_source": f"${label}$", "n": limit}
        if offset:
            args["offset"] = offset
        return self.emit("limit_data", args, "limited")

    # ---- one SELECT -------------------------------------------------------------------
    def select(self, sel: exp.Select, outer: _Scope | None, *, as_data: bool = False) -> tuple[str, str]:
        """Returns (label, kind) with kind "data" or "value" (``as_data``: always data)."""
        if not sel.args.get("from_"):
            if as_data:
                raise Rejection("unsupported_scalar_select", "a SELECT without FROM used as data")
            return self._scalar_select(sel, outer)
        scope, data = self._from(sel, outer)
        state = _State(self, scope, data)
        where = sel.args.get("where")
        if where is not None:
            self.features.add("filter")
            state.apply_condition(where.this)
        items = list(sel.expressions)
        aliases = {i.alias.lower(): i.unalias() for i in items if isinstance(i, exp.Alias)}
        group = sel.args.get("group")
        having = sel.args.get("having")
        order = sel.args.get("order")
        has_agg = (
            any(_has_agg(i) for i in items)
            or (having is not None)
            or (order is not None and any(_has_agg(_resolve_alias(o.this, aliases)) for o in order.expressions))
        )
        distinct = bool(sel.args.get("distinct"))
        if distinct and sel.args["distinct"].args.get("on"):
            raise Rejection("unsupported_expression", "DISTINCT ON")

        if (
            not as_data
            and group is None
            and has_agg
            and having is None
            and order is None
            and not distinct
            and len(items) == 1
            and _plain_agg(items[0].unalias()) is not None
            and not sel.args.get("limit")
            and not sel.args.get("offset")
        ):
            agg, arg = _plain_agg(items[0].unalias())
            self.features.add("aggregate")
            args: dict[str, Any] = {"data_source": f"${state.data}$", "aggregation": agg}
            if arg is not None:
                args["key_name"] = state.column_of(arg)
            label = self.emit("aggregate_data", args, agg)
            return label, "value"

        if group is not None or has_agg:
            state.group(sel, items, aliases)
        # projection
        if len(items) == 1 and isinstance(items[0], exp.Star):
            proj = list(state.star_columns)
        else:
            proj = []
            for item in items:
                if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
                    raise Rejection("unsupported_expression", "* mixed with other columns")
                proj.append(state.column_of(item.unalias(), alias=item.alias or None))
        # ordering
        keys: list[tuple[str, bool, str]] = []
        if order is not None:
            self.features.add("order")
            for o in order.expressions:
                desc = bool(o.args.get("desc"))
                target = o.this
                if isinstance(target, exp.Literal) and not target.is_string:
                    pos = int(target.this)
                    if not 1 <= pos <= len(proj):
                        raise Rejection("sql_error", f"ORDER BY position {pos} out of range")
                    col = proj[pos - 1]
                else:
                    col = state.column_of(_resolve_alias(target, aliases))
                keys.append((col, not desc, _nulls_place(o, desc)))
        if distinct:
            self.features.add("distinct")
            if any(k not in proj for k, _, _ in keys):
                raise Rejection("distinct_order", "ORDER BY a column that is not selected with DISTINCT")
            if len(proj) == 1:
                state.data = self.emit(
                    "get_unique_values", {"data_source": f"${state.data}$", "key_name": proj[0]}, "unique"
                )
            else:
                state.data = self.emit(
                    "retrieve_data", {"data_source": f"${state.data}$", "key_names": proj, "distinct": True}, "distinct"
                )
        if keys:
            state.data = self.emit(
                "sort_data",
                _sort_args(state.data, [k for k, _, _ in keys], [a for _, a, _ in keys], [n for _, _, n in keys]),
                "sorted",
            )
        state.data = self._limit(sel, state.data)
        if not distinct:
            state.data = self.emit("retrieve_data", {"data_source": f"${state.data}$", "key_names": proj}, "result")
        self.visible[state.data] = list(proj)
        return state.data, "data"

    def _scalar_select(self, sel: exp.Select, outer: _Scope | None) -> tuple[str, str]:
        if len(sel.expressions) != 1 or any(sel.args.get(k) for k in ("where", "group", "having", "order", "limit")):
            raise Rejection("unsupported_scalar_select", "SELECT without FROM must be one expression")
        self.features.add("arithmetic")
        value = self._scalar_expr(sel.expressions[0].unalias(), outer)
        if isinstance(value, str) and value.startswith("$"):
            return value.strip("$"), "value"
        raise Rejection("unsupported_scalar_select", "SELECT of a constant")

    def _scalar_expr(self, node: exp.Expression, outer: _Scope | None) -> Any:
        if isinstance(node, exp.Paren):
            return self._scalar_expr(node.this, outer)
        if isinstance(node, exp.Subquery):
            return self.subquery(node, outer, first_row=True)
        if isinstance(node, exp.Literal):
            return _literal(node)
        if type(node) in _ARITH and type(node) is not exp.DPipe:
            left = self._scalar_expr(node.this, outer)
            right = self._scalar_expr(node.expression, outer)
            return (
                "$"
                + self.emit("calculate", {"operator": _ARITH[type(node)], "left": left, "right": right}, "calculated")
                + "$"
            )
        raise Rejection("unsupported_scalar_select", node.sql(dialect="sqlite")[:80])

    def subquery(self, node: exp.Expression, outer: _Scope | None, *, first_row: bool = False) -> str:
        """Convert a subquery; ``first_row`` for a scalar use, where SQLite takes its first row."""
        inner = node.this if isinstance(node, exp.Subquery) else node
        self.features.add("nested")
        label, kind = self.select_any(inner, outer)
        if first_row and kind == "data" and _int_clause(inner.args.get("limit")) != 1:
            label = self.emit("limit_data", {"data_source": f"${label}$", "n": 1}, "limited")
        return f"${label}$"

    # ---- FROM / JOIN ------------------------------------------------------------------
    def _from(self, sel: exp.Select, outer: _Scope | None) -> tuple[_Scope, str]:
        """Load FROM and its JOINs. A run of tables loads in one hidden ``initialize_active_data``
        call; a subquery in FROM / JOIN is converted on its own, named with ``alias_data`` and
        joined with ``join_data`` (as is each table after it)."""
        scope = _Scope({}, outer)
        used: dict[str, int] = {}
        items: list[tuple[exp.Expression, exp.Join | None]] = [(sel.args["from_"].this, None)]
        items += [(j.this, j) for j in sel.args.get("joins") or []]
        extra_conditions: list[exp.Expression] = []

        def add(table_node: exp.Expression) -> str:
            if not isinstance(table_node, exp.Table):
                raise Rejection("subquery_in_from", table_node.sql(dialect="sqlite")[:80])
            table = self.db.table(table_node.name)
            if table is None:
                raise Rejection("unknown_table", table_node.name)
            used[table.name] = used.get(table.name, 0) + 1
            prefix = table.name if used[table.name] == 1 else f"{table.name}_{used[table.name]}"
            alias = (table_node.alias or table_node.name).lower()
            if alias in scope.aliases or alias in scope.derived:
                raise Rejection("sql_error", f"alias {alias} used twice")
            scope.aliases[alias] = (prefix, table.name)
            scope.entries.append(alias)
            return prefix

        def join_kind(join: exp.Join) -> str:
            side = (join.args.get("side") or "").upper()
            kind = (join.args.get("kind") or "").upper()
            if side in ("RIGHT", "FULL") or kind in ("NATURAL",) or join.args.get("method"):
                raise Rejection("unsupported_join", join.sql(dialect="sqlite")[:80])
            return side

        n_tables = 0
        while n_tables < len(items) and isinstance(items[n_tables][0], exp.Table):
            n_tables += 1
        if n_tables:
            source = items[0][0]
            first = add(source)
            args: dict[str, Any] = {"source": self.db.table(source.name).name}
            if first != args["source"]:
                args["alias"] = first
            joins = []
            for node, join in items[1:n_tables]:
                side = join_kind(join)
                prefix = add(node)
                entry: dict[str, Any] = {"table": self.db.table(node.name).name}
                if prefix != entry["table"]:
                    entry["alias"] = prefix
                on, using = join.args.get("on"), join.args.get("using")
                pairs: list[list[str]] = []
                if using:
                    new_alias = (node.alias or node.name).lower()
                    for ident in using:
                        left = self._resolve_using(scope, ident.name, exclude=new_alias)
                        right = f"{prefix}.{self._col_name(node.name, ident.name)}"
                        pairs.append([left, right])
                        scope.merged.add(right)  # SELECT * and unqualified names see only the left copy
                elif on is not None:
                    for cond in conjuncts(on):
                        pair = self._equi_pair(cond, scope)
                        if pair is None:
                            if side == "LEFT":
                                raise Rejection("unsupported_join_condition", cond.sql(dialect="sqlite")[:80])
                            extra_conditions.append(cond)
                        else:
                            pairs.append(pair)
                entry["type"] = "left" if side == "LEFT" else ("cross" if not pairs else "inner")
                if pairs:
                    entry["on"] = pairs
                joins.append(entry)
                self.features.add("join")
            if joins:
                args["joins"] = joins
            label = self.emit("initialize_active_data", args, "data", hidden=True)
        else:
            label, _ = self._derived(items[0][0], scope)
            n_tables = 1
        for node, join in items[n_tables:]:
            side = join_kind(join)
            if join.args.get("using"):
                raise Rejection("subquery_in_from", "JOIN ... USING after a subquery in FROM")
            if isinstance(node, exp.Table):
                prefix = add(node)
                init: dict[str, Any] = {"source": self.db.table(node.name).name}
                if prefix != init["source"]:
                    init["alias"] = prefix
                other = self.emit("initialize_active_data", init, "data", hidden=True)
            else:
                other, prefix = self._derived(node, scope)
            pairs = []
            for cond in conjuncts(join.args["on"]) if join.args.get("on") is not None else []:
                pair = self._equi_pair(cond, scope)
                if pair is not None:
                    mine = [p.rsplit(".", 1)[0] == prefix for p in pair]
                    if mine[0] != mine[1]:
                        pairs.append(pair[::-1] if mine[0] else pair)
                        continue
                if side == "LEFT":
                    raise Rejection("unsupported_join_condition", cond.sql(dialect="sqlite")[:80])
                extra_conditions.append(cond)
            call: dict[str, Any] = {
                "data_source": f"${label}$",
                "other": f"${other}$",
                "type": "left" if side == "LEFT" else ("inner" if pairs else "cross"),
            }
            if pairs:
                call["on"] = pairs
            label = self.emit("join_data", call, "joined")
            self.features.add("join")
        if extra_conditions:
            # inner-join conditions that are not column equalities behave as WHERE filters
            cond = extra_conditions[0]
            for c in extra_conditions[1:]:
                cond = exp.And(this=cond, expression=c)
            sel.set(
                "where",
                exp.Where(
                    this=cond
                    if sel.args.get("where") is None
                    else exp.And(this=exp.Paren(this=cond), expression=exp.Paren(this=sel.args["where"].this))
                ),
            )
        return scope, label

    def _derived(self, node: exp.Expression, scope: _Scope) -> tuple[str, str]:
        """A subquery in FROM / JOIN: its own sequence, its columns named alias.<output name>."""
        if not isinstance(node, exp.Subquery):
            raise Rejection("subquery_in_from", node.sql(dialect="sqlite")[:80])
        alias = node.alias or self.fresh_name("subquery")
        if alias.lower() in scope.aliases or alias.lower() in scope.derived:
            raise Rejection("sql_error", f"alias {alias} used twice")
        self.features.add("nested")
        self.features.add("derived_table")
        label, _ = self.select_any(node.this, scope.outer, as_data=True)
        visible = self.visible[label]
        names = output_names(node.this) or [c.rsplit(".", 1)[-1] for c in visible]
        if len(names) != len(visible):
            raise Rejection("subquery_in_from", f"the subquery {alias} has {len(visible)} columns, named {names}")
        if len({n.lower() for n in names}) != len(names):
            raise Rejection("subquery_in_from", f"the subquery {alias} gives two columns the same name")
        args: dict[str, Any] = {"data_source": f"${label}$", "alias": alias}
        if names != [c.rsplit(".", 1)[-1] for c in visible]:
            args["column_names"] = names
        label = self.emit("alias_data", args, "named")
        scope.derived[alias.lower()] = (alias, names)
        scope.entries.append(alias.lower())
        if node.meta.get(DECORRELATED):
            scope.qualified_only.add(alias.lower())
        self.visible[label] = [f"{alias}.{n}" for n in names]
        return label, alias

    def _col_name(self, table: str, column: str) -> str:
        col = self.db.table(table).column(column)
        if col is None:
            raise Rejection("unknown_column", f"{table}.{column}")
        return col.name

    def _resolve_using(self, scope: _Scope, column: str, exclude: str) -> str:
        for alias, (prefix, table) in scope.aliases.items():
            if alias != exclude and self.db.table(table).column(column) is not None:
                return f"{prefix}.{self.db.table(table).column(column).name}"
        raise Rejection("unknown_column", column)

    def _equi_pair(self, cond: exp.Expression, scope: _Scope) -> list[str] | None:
        if isinstance(cond, exp.Paren):
            cond = cond.this
        if isinstance(cond, exp.EQ) and isinstance(cond.this, exp.Column) and isinstance(cond.expression, exp.Column):
            return [self.resolve_column(cond.this, scope), self.resolve_column(cond.expression, scope)]
        return None

    def resolve_column(self, col: exp.Column, scope: _Scope) -> str:
        name = col.name
        if col.table:
            key = col.table.lower()
            if key in scope.derived:
                prefix, names = scope.derived[key]
                found = [n for n in names if n.lower() == name.lower()]
                if not found:
                    raise Rejection("unknown_column", f"{col.table}.{name}")
                return f"{prefix}.{found[0]}"
            hit = scope.aliases.get(key)
            if hit is None:
                s = scope.outer
                while s is not None:
                    if key in s.aliases or key in s.derived:
                        raise Rejection("correlated_subquery", col.sql(dialect="sqlite"))
                    s = s.outer
                raise Rejection("unknown_table", col.table)
            prefix, table = hit
            return f"{prefix}.{self._col_name(table, name)}"
        hits = [
            f"{p}.{self.db.table(t).column(name).name}"
            for p, t in scope.aliases.values()
            if self.db.table(t).column(name) is not None
            and f"{p}.{self.db.table(t).column(name).name}" not in scope.merged
        ]
        hits += [
            f"{p}.{n}"
            for a, (p, names) in scope.derived.items()
            if a not in scope.qualified_only
            for n in names
            if n.lower() == name.lower()
        ]
        if len(hits) > 1:
            raise Rejection("ambiguous_column", name)
        if not hits:
            s = scope.outer
            while s is not None:
                if any(self.db.table(t).column(name) is not None for _, t in s.aliases.values()) or any(
                    n.lower() == name.lower() for _, names in s.derived.values() for n in names
                ):
                    raise Rejection("correlated_subquery", name)
                s = s.outer
            raise Rejection("unknown_column", name)
        return hits[0]


def _literal(node: exp.Literal) -> Any:
    value = node.to_py()
    if isinstance(value, Decimal):  # sqlglot gives Decimal for 1.99; SQLite reads it as a REAL
        return float(value)
    return value


def _has_agg(node: exp.Expression) -> bool:
    return bool(_agg_nodes(node))


def _nulls_place(o: exp.Ordered, desc: bool) -> str:
    """ "first" / "last" when an ORDER BY term places NULLs other than SQLite's default, else "default"."""
    nulls_first = o.args.get("nulls_first")
    if nulls_first is None or bool(nulls_first) == (not desc):
        return "default"
    return "first" if nulls_first else "last"


def _sort_args(data: str, keys: list[str], ascending: list[bool], nulls: list[str]) -> dict[str, Any]:
    args: dict[str, Any] = {"data_source": f"${data}$", "key_names": keys, "ascending": ascending}
    if any(n != "default" for n in nulls):
        args["nulls"] = nulls
    return args


def _window_parts(node: exp.Window) -> list[exp.Expression]:
    order = node.args.get("order")
    return [*(node.args.get("partition_by") or []), *([o.this for o in order.expressions] if order is not None else [])]


def _plain_agg(node: exp.Expression) -> tuple[str, exp.Expression | None] | None:
    """(aggregation, argument or None) when node is a bare aggregate of a column or *."""
    agg = _agg_of(node)
    if agg is None:
        return None
    name, arg = agg
    if arg is not None and not isinstance(arg, exp.Column):
        return None
    return name, arg


def _agg_of(node: exp.Expression) -> tuple[str, exp.Expression | None] | None:
    if type(node) not in _AGGS:
        if isinstance(node, exp.AggFunc):
            raise Rejection("unsupported_aggregate", node.sql(dialect="sqlite")[:80])
        return None
    name = _AGGS[type(node)]
    arg = node.this
    if isinstance(arg, exp.Distinct):
        if name != "count" or len(arg.expressions) != 1:
            raise Rejection("unsupported_aggregate", node.sql(dialect="sqlite")[:80])
        return "count_distinct", arg.expressions[0]
    if name == "count" and isinstance(arg, exp.Literal):  # COUNT(1): every row counts
        arg = None
    if isinstance(arg, exp.Star) or arg is None:
        if name != "count":
            raise Rejection("unsupported_aggregate", node.sql(dialect="sqlite")[:80])
        return "count", None
    if node.expressions:
        raise Rejection("unsupported_aggregate", f"{name} with several arguments")
    return name, arg


def _resolve_alias(node: exp.Expression, aliases: dict[str, exp.Expression]) -> exp.Expression:
    if isinstance(node, exp.Column) and not node.table and node.name.lower() in aliases:
        return aliases[node.name.lower()]
    return node


def _int_clause(node: exp.Expression | None) -> int | None:
    if node is None:
        return None
    value = node.args.get("expression") or node.this
    if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal):
        return -int(value.this.this)
    if not isinstance(value, exp.Literal) or value.is_string or not str(value.this).isdigit():
        raise Rejection("unsupported_expression", f"{node.key} must be a non-negative integer literal")
    return int(value.this)


class _State:
    """The data label being transformed while one SELECT is converted."""

    def __init__(self, conv: Converter, scope: _Scope, data: str) -> None:
        self.conv = conv
        self.scope = scope
        self.data = data
        self.star_columns = scope.star(conv.db)
        # expression SQL -> column name already computed on the current data
        self.computed: dict[Any, str] = {}
        self.grouped = False

    def emit_on_data(self, tool: str, args: dict[str, Any], prefix: str) -> None:
        self.data = self.conv.emit(tool, {"data_source": f"${self.data}$", **args}, prefix)

    # ---- expressions ------------------------------------------------------------------
    def column_of(self, node: exp.Expression, *, alias: str | None = None) -> str:
        op = self.operand(node, alias=alias)
        if op[0] == "col":
            return op[1]
        raise Rejection("unsupported_expression", f"constant in a column position: {node.sql(dialect='sqlite')[:60]}")

    def operand(self, node: exp.Expression, *, alias: str | None = None) -> Operand:
        key = node  # sqlglot expressions hash and compare by structure
        if key in self.computed:
            return ("col", self.computed[key])
        if isinstance(node, exp.Paren):
            return self.operand(node.this, alias=alias)
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                raise Rejection("unsupported_expression", "table.* selection")
            try:
                name = self.conv.resolve_column(node, self.scope)
                if self.grouped and name not in self.star_columns:
                    raise Rejection("bare_column", node.sql(dialect="sqlite"))
                return ("col", name)
            except Rejection as rej:
                if rej.code == "unknown_column" and node.this.args.get("quoted") and not node.table:
                    return ("val", node.name)  # SQLite reads an unknown "x" as the string 'x'
                raise
        if isinstance(node, exp.Literal):
            return ("val", _literal(node))
        if isinstance(node, exp.Null):
            return ("val", None)
        if isinstance(node, exp.Boolean):
            return ("val", 1 if node.this else 0)
        if isinstance(node, exp.Neg):
            inner = self.operand(node.this)
            if inner[0] == "val" and isinstance(inner[1], (int, float)):
                return ("val", -inner[1])
            return self._compute("subtract", ("val", 0), inner, alias or "negated")
        if isinstance(node, exp.Subquery):  # a scalar use: SQLite takes the first row
            return ("val", self.conv.subquery(node, self.scope, first_row=True))
        if isinstance(node, exp.Window):
            return self._remember(key, self._window(node, alias))
        if isinstance(node, exp.AggFunc):
            raise Rejection("unsupported_expression", f"aggregate in this position: {node.sql(dialect='sqlite')[:60]}")
        if type(node) in _ARITH:
            left, right = self.operand(node.this), self.operand(node.expression)
            self.conv.features.add("arithmetic")
            return self._remember(key, self._compute(_ARITH[type(node)], left, right, alias))
        if isinstance(node, exp.Cast):
            type_name = node.to.this.name if hasattr(node.to.this, "name") else str(node.to.this)
            target = _CAST_TYPES.get(type_name.upper())
            if target is None:
                raise Rejection("unsupported_expression", f"CAST to {type_name}")
            return self._remember(key, self._transform(node.this, "cast", {"type": target}, alias))
        if isinstance(node, exp.Substring):
            if node.args.get("start") is None:
                raise Rejection("sql_error", "SUBSTR needs a start position")
            args = {"start": self._const(node.args.get("start"))}
            if node.args.get("length") is not None:
                args["length"] = self._const(node.args["length"])
            return self._remember(key, self._transform(node.this, "substr", args, alias))
        if isinstance(node, exp.StrPosition):
            if node.args.get("position") is not None:
                raise Rejection("unsupported_expression", node.sql(dialect="sqlite")[:60])
            return self._remember(
                key, self._transform(node.this, "instr", {"substring": self._const(node.args["substr"])}, alias)
            )
        if isinstance(node, exp.TimeToStr):
            inner = node.this.this if isinstance(node.this, exp.TsOrDsToTimestamp) else node.this
            fmt = node.args.get("format")
            if not isinstance(fmt, exp.Literal) or node.args.get("zone") is not None:
                raise Rejection("unsupported_expression", node.sql(dialect="sqlite")[:60])
            return self._remember(key, self._transform(inner, "strftime", {"format": fmt.to_py()}, alias))
        if isinstance(node, exp.Round):
            args = {"digits": self._const(node.args["decimals"])} if node.args.get("decimals") is not None else {}
            return self._remember(key, self._transform(node.this, "round", args, alias))
        if isinstance(node, exp.Coalesce) and len(node.expressions) == 1:
            return self._remember(
                key, self._transform(node.this, "coalesce", {"default": self._const(node.expressions[0])}, alias)
            )
        if (
            isinstance(node, exp.Anonymous)
            and str(node.this).lower() in ("julianday", "date")
            and len(node.expressions) == 1
        ):
            return self._remember(key, self._transform(node.expressions[0], str(node.this).lower(), {}, alias))
        if isinstance(node, exp.Date) and not node.expressions and node.args.get("zone") is None:
            return self._remember(key, self._transform(node.this, "date", {}, alias))
        if type(node) in _SIMPLE_TRANSFORMS:
            if isinstance(node, exp.Trim) and (node.args.get("expression") is not None or node.args.get("position")):
                raise Rejection("unsupported_expression", node.sql(dialect="sqlite")[:60])
            return self._remember(key, self._transform(node.this, _SIMPLE_TRANSFORMS[type(node)], {}, alias))
        if isinstance(node, exp.Replace):
            if node.args.get("expression") is None or node.args.get("replacement") is None:
                raise Rejection("sql_error", "REPLACE needs three arguments")
            args = {"old": self._const(node.args["expression"]), "new": self._const(node.args["replacement"])}
            return self._remember(key, self._transform(node.this, "replace", args, alias))
        if isinstance(node, (exp.Case, exp.If)):
            return self._remember(key, self._case(node, alias))
        raise Rejection("unsupported_expression", node.sql(dialect="sqlite")[:80])

    def _remember(self, key: str, op: Operand) -> Operand:
        if op[0] == "col":
            self.computed[key] = op[1]
        return op

    def _const(self, node: exp.Expression) -> Any:
        """A function argument: a constant, or {"key_name": column} for a computed one."""
        op = self.operand(node)
        return op[1] if op[0] == "val" else {"key_name": op[1]}

    def _compute(self, operator: str, left: Operand, right: Operand, alias: str | None) -> Operand:
        out = self.conv.fresh_name(alias or f"{operator}_result")
        spec = {
            "left": {"key_name" if left[0] == "col" else "value": left[1]},
            "right": {"key_name" if right[0] == "col" else "value": right[1]},
        }
        self.emit_on_data("compute_column", {"operator": operator, **spec, "output_name": out}, "computed")
        return ("col", out)

    def _transform(self, node: exp.Expression, function: str, args: dict[str, Any], alias: str | None) -> Operand:
        src = self.operand(node)
        if src[0] != "col":
            raise Rejection("unsupported_expression", f"{function} of a constant")
        self.conv.features.add("function")
        out = self.conv.fresh_name(alias or f"{function}_{src[1].rsplit('.', 1)[-1]}")
        call = {"key_name": src[1], "function": function, "output_name": out}
        if args:
            call["arguments"] = args
        self.emit_on_data("transform_data", call, "transformed")
        return ("col", out)

    def _window(self, node: exp.Window, alias: str | None) -> Operand:
        function = _RANKINGS.get(type(node.this))
        if function is None:
            raise Rejection(
                "window_function",
                f"{node.this.sql(dialect='sqlite')[:40]} OVER (...): only row_number, rank and dense_rank have a tool",
            )
        if node.args.get("spec") is not None:
            raise Rejection("window_function", "a window frame (ROWS / RANGE)")
        order = node.args.get("order")
        if order is None:
            raise Rejection("window_function", f"{function} without ORDER BY numbers rows in no fixed order")
        keys, asc, nulls = [], [], []
        for o in order.expressions:
            desc = bool(o.args.get("desc"))
            keys.append(self.column_of(o.this))
            asc.append(not desc)
            nulls.append(_nulls_place(o, desc))
        call: dict[str, Any] = {"function": function, "key_names": keys, "ascending": asc}
        if any(n != "default" for n in nulls):
            call["nulls"] = nulls
        partition = [self.column_of(p) for p in node.args.get("partition_by") or []]
        if partition:
            call["partition_by"] = partition
        out = self.conv.fresh_name(alias or function)
        self.conv.features.add("window")
        self.emit_on_data("rank_rows", {**call, "output_name": out}, "ranked")
        return ("col", out)

    def _case(self, node: exp.Expression, alias: str | None) -> Operand:
        self.conv.features.add("case")
        cases = []
        if isinstance(node, exp.If):
            branches = [(node.this, node.args.get("true"))]
            default = node.args.get("false")
        else:
            branches = [
                (w.this if node.this is None else exp.EQ(this=node.this.copy(), expression=w.this), w.args.get("true"))
                for w in node.args.get("ifs") or []
            ]
            default = node.args.get("default")
        for cond, result in branches:
            res = self.operand(result)
            # WHEN (a OR b) THEN r is WHEN a THEN r WHEN b THEN r: a disjunction holds when one of its terms does
            for conds in _dnf(self.literals(cond, negate=False)):
                cases.append({"conditions": conds, "result": {"key_name" if res[0] == "col" else "value": res[1]}})
        call: dict[str, Any] = {"cases": cases}
        if default is not None:
            d = self.operand(default)
            if not (d[0] == "val" and d[1] is None):
                call["default"] = {"key_name" if d[0] == "col" else "value": d[1]}
        out = self.conv.fresh_name(alias or "case_result")
        self.emit_on_data("case_column", {**call, "output_name": out}, "cased")
        return ("col", out)

    # ---- conditions -------------------------------------------------------------------
    def literals(self, node: exp.Expression, *, negate: bool) -> tuple:
        """Boolean structure: ("and", [..]) / ("or", [..]) / ("lit", condition dict)."""
        if isinstance(node, exp.Paren):
            return self.literals(node.this, negate=negate)
        if isinstance(node, exp.Not):
            return self.literals(node.this, negate=not negate)
        if isinstance(node, (exp.And, exp.Or)):
            kind = "and" if isinstance(node, exp.And) else "or"
            if negate:
                kind = "or" if kind == "and" else "and"
            return (kind, [self.literals(node.this, negate=negate), self.literals(node.expression, negate=negate)])
        cond = self._atomic(node)
        if negate:
            cond = {**cond, "operator": _NEGATE[cond["operator"]]}
        return ("lit", cond)

    def _atomic(self, node: exp.Expression) -> dict[str, Any]:
        if type(node) in _COMPARE:
            op = _COMPARE[type(node)]
            left, right = self.operand(node.this), self.operand(node.expression)
            if left[0] == "val" and right[0] == "val":
                raise Rejection("constant_condition", node.sql(dialect="sqlite")[:80])
            if left[0] == "val":
                left, right, op = right, left, _FLIP[op]
            if right[0] == "col":
                return {"key_name": left[1], "operator": op, "value_key_name": right[1]}
            return {"key_name": left[1], "operator": op, "value": right[1]}
        if isinstance(node, exp.Like):
            if node.args.get("escape") is not None:
                raise Rejection("unsupported_like", "ESCAPE")
            col = self.column_of(node.this)
            pat = self.operand(node.expression)
            if pat[0] != "val" or not isinstance(pat[1], str):
                raise Rejection("unsupported_like", node.sql(dialect="sqlite")[:80])
            op, value = _like_operator(pat[1])
            cond = {"key_name": col, "operator": op, "value": value}
            if node.args.get("negate"):
                cond["operator"] = _NEGATE[op]
            return cond
        if isinstance(node, exp.Escape):
            raise Rejection("unsupported_like", "ESCAPE")
        if isinstance(node, exp.In):
            col = self.column_of(node.this)
            if node.args.get("query") is not None:
                return {"key_name": col, "operator": "in", "value": self.conv.subquery(node.args["query"], self.scope)}
            values = []
            for v in node.expressions:
                op = self.operand(v)
                if op[0] != "val":
                    raise Rejection("unsupported_expression", "IN list with a column")
                values.append(op[1])
            return {"key_name": col, "operator": "in", "value": values}
        if isinstance(node, exp.Between):
            col = self.column_of(node.this)
            lo, hi = self.operand(node.args["low"]), self.operand(node.args["high"])
            if lo[0] != "val" or hi[0] != "val":
                raise Rejection("unsupported_expression", "BETWEEN with column bounds")
            return {"key_name": col, "operator": "between", "value": [lo[1], hi[1]]}
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise Rejection("unsupported_expression", node.sql(dialect="sqlite")[:80])
            return {"key_name": self.column_of(node.this), "operator": "is_null"}
        raise Rejection("unsupported_expression", f"condition {node.sql(dialect='sqlite')[:80]}")

    def apply_condition(self, node: exp.Expression) -> None:
        tree = self.literals(node, negate=False)
        try:
            clauses = _cnf(tree)
        except Rejection:
            # an OR of ANDs too large as AND-ed ORs: mark the rows where one AND-group holds, keep those
            groups = _dnf(tree)
            self.conv.features.add("or")
            out = self.conv.fresh_name("condition_holds")
            self.emit_on_data(
                "case_column",
                {
                    "cases": [{"conditions": g, "result": {"value": 1}} for g in groups],
                    "default": {"value": 0},
                    "output_name": out,
                },
                "cased",
            )
            self.emit_on_data("filter_data", {"key_name": out, "operator": "equal_to", "value": 1}, "filtered")
            return
        for clause in clauses:
            if len(clause) == 1:
                self.emit_on_data("filter_data", clause[0], "filtered")
            else:
                self.conv.features.add("or")
                self.emit_on_data("filter_data_any", {"conditions": clause}, "filtered")

    # ---- grouping ---------------------------------------------------------------------
    def _is_column(self, node: exp.Expression) -> bool:
        if not isinstance(node, exp.Column):
            return False
        try:
            self.conv.resolve_column(node, self.scope)
            return True
        except Rejection:
            return False

    def _is_single_pk(self, column: str) -> bool:
        prefix, _, name = column.rpartition(".")
        for p, t in self.scope.aliases.values():
            if p == prefix:
                table = self.conv.db.table(t)
                pks = [c for c in table.columns if c.primary_key]
                return len(pks) == 1 and pks[0].name == name
        return False

    def group(self, sel: exp.Select, items: list[exp.Expression], aliases: dict[str, exp.Expression]) -> None:
        group = sel.args.get("group")
        having = sel.args.get("having")
        order = sel.args.get("order")
        self.conv.features.add("group" if group is not None else "aggregate")
        keys: list[str] = []
        key_exprs: dict[str, str] = {}
        for g in group.expressions if group is not None else []:
            if isinstance(g, exp.Literal) and not g.is_string:
                if not str(g.this).isdigit() or not 1 <= int(g.this) <= len(items):
                    raise Rejection("sql_error", f"GROUP BY position {g.this} out of range")
                g = items[int(g.this) - 1].unalias()
            elif not self._is_column(g):
                g = _resolve_alias(g, aliases)
            col = self.column_of(g)
            if col not in keys:
                keys.append(col)
            key_exprs[g] = col
        # columns of a table whose primary key is grouped are determined by it: group by them too
        grouped_pks = {k.rsplit(".", 1)[0] for k in keys if self._is_single_pk(k)}
        for e in (
            [i.unalias() for i in items]
            + ([having.this] if having is not None else [])
            + [_resolve_alias(o.this, aliases) for o in (order.expressions if order is not None else [])]
        ):
            for node in _plain_columns(e):
                try:
                    name = self.conv.resolve_column(node, self.scope)
                except Rejection:
                    continue
                if name not in keys and name.rsplit(".", 1)[0] in grouped_pks:
                    keys.append(name)
        # collect aggregates used after grouping
        exprs = [i.unalias() for i in items]
        if having is not None:
            exprs.append(having.this)
        for o in order.expressions if order is not None else []:
            exprs.append(_resolve_alias(o.this, aliases))
        aggs: dict[str, dict[str, Any]] = {}
        names: dict[str, str] = {}
        item_alias = {i.unalias(): i.alias for i in items if i.alias}
        for e in exprs:
            for node in _agg_nodes(e):
                key = node
                if key in aggs:
                    continue
                agg = _agg_of(node)
                assert agg is not None
                name, arg = agg
                spec: dict[str, Any] = {"aggregation": name}
                if arg is not None:
                    spec["key_name"] = self.column_of(arg)
                base = item_alias.get(key) or (
                    f"{name}_{spec['key_name'].rsplit('.', 1)[-1]}" if arg is not None else "count_rows"
                )
                spec["output_name"] = names[key] = self.conv.fresh_name(base)
                aggs[key] = spec
        self.emit_on_data("group_data_by", {"key_names": keys, "aggregations": list(aggs.values())}, "grouped")
        # after grouping only keys and aggregates are columns
        self.computed = {**key_exprs, **names}
        for k in keys:
            self.computed.setdefault(k, k)
        self.grouped = True
        self.star_columns = keys
        if having is not None:
            # SQLite lets HAVING name an output alias when no column has that name
            self.apply_condition(
                having.this.transform(
                    lambda n: (
                        aliases[n.name.lower()].copy()
                        if isinstance(n, exp.Column)
                        and not n.table
                        and n.name.lower() in aliases
                        and not self._is_column(n)
                        else n
                    )
                )
            )


def _plain_columns(node: exp.Expression) -> list[exp.Column]:
    """Columns outside aggregates and subqueries."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Window):
            stack.extend(_window_parts(n))
            continue
        if isinstance(n, (exp.Subquery, exp.AggFunc)):
            continue
        if isinstance(n, exp.Column):
            out.append(n)
            continue
        stack.extend(n.iter_expressions())
    return out


def _agg_nodes(node: exp.Expression) -> list[exp.Expression]:
    """Aggregates outside subqueries (a window function is none; the aggregates it orders by are)."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (exp.Subquery, exp.Select)):
            continue
        if isinstance(n, exp.Window):
            stack.extend(reversed(_window_parts(n)))
            continue
        if isinstance(n, exp.AggFunc):
            out.append(n)
            continue
        stack.extend(reversed(list(n.iter_expressions())))
    return out


def _like_operator(pattern: str) -> tuple[str, str]:
    body = pattern
    if "_" in body.replace("%", ""):
        return "like", pattern
    starts, ends = body.startswith("%"), body.endswith("%") and len(body) > 1
    core = body[1 if starts else 0 : len(body) - (1 if ends else 0)]
    if "%" in core or not core:
        return "like", pattern
    if starts and ends:
        return "contains", core
    if ends:
        return "starts_with", core
    if starts:
        return "ends_with", core
    return "like", pattern


def _cnf(tree: tuple) -> list[list[dict[str, Any]]]:
    kind = tree[0]
    if kind == "lit":
        return [[tree[1]]]
    parts = [_cnf(t) for t in tree[1]]
    if kind == "and":
        return [c for p in parts for c in p]
    result = parts[0]
    for p in parts[1:]:
        result = [a + b for a in result for b in p]
        if len(result) > MAX_CNF_CLAUSES:
            raise Rejection("condition_too_complex", f"more than {MAX_CNF_CLAUSES} clauses")
    return result


def _dnf(tree: tuple) -> list[list[dict[str, Any]]]:
    """The condition as an OR of AND-groups (at most ``MAX_CNF_CLAUSES`` groups)."""
    kind = tree[0]
    if kind == "lit":
        return [[tree[1]]]
    parts = [_dnf(t) for t in tree[1]]
    if kind == "or":
        result = [g for p in parts for g in p]
    else:
        result = parts[0]
        for p in parts[1:]:
            result = [a + b for a in result for b in p]
            if len(result) > MAX_CNF_CLAUSES:
                break
    if len(result) > MAX_CNF_CLAUSES:
        raise Rejection(
            "condition_too_complex", f"more than {MAX_CNF_CLAUSES} clauses, as AND-ed ORs and as OR-ed ANDs"
        )
    return result


def convert(db: Database, sql: str) -> Conversion:
    """Convert one SQL query to a SLOT tool-call sequence (raises :class:`Rejection`)."""
    return Converter(db).convert(sql)
