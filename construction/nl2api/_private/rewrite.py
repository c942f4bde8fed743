"""Rewrites that bring analysts' SQL into the shapes the SLOT tools express, before conversion.

Each rewrite keeps the query's meaning under SQLite's semantics; none is trusted on its own:
verification still runs the *original* SQL and the converted sequence and keeps the pair only if
their results agree. What cannot be rewritten raises :class:`Rejection` naming the construct.

* :func:`inline_ctes` - a non-recursive ``WITH`` becomes subqueries in ``FROM``.
* :func:`fold_constants` - constant expressions (``DATE('1994-01-01', '+3 months')``,
  ``julianday('1995-02-01') - julianday('1995-01-01')``, ``0.06 - 0.01``) become literals,
  computed by SQLite itself on an in-memory connection, so the value is exactly the one the
  query would use.
* :func:`decorrelate` - ``EXISTS`` / ``NOT EXISTS``, a correlated ``IN`` and a correlated scalar
  subquery become a LEFT JOIN of the outer query with a derived table grouped (or made distinct)
  on the correlation keys: a semi/anti-join, or a per-group aggregate.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from typing import Any

from sqlglot import exp

from .reasons import Rejection

_SET_OPS = (exp.Union, exp.Intersect, exp.Except)
_FOLDABLE = (exp.Func, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.DPipe, exp.Paren, exp.Neg, exp.Cast)
_NOT_CONSTANT = (
    exp.Column,
    exp.Subquery,
    exp.Select,
    exp.Star,
    exp.AggFunc,
    exp.Window,
    exp.Placeholder,
    exp.Parameter,
    exp.Identifier,
)
_local = threading.local()
DECORRELATED = "benchsmith_decorrelated"


def prepare(tree: exp.Expression, tables: "TableLookup") -> exp.Expression:
    """All rewrites, in order, each only where the tree has what it rewrites (the tree is changed
    in place: pass a copy to keep the original)."""
    kinds: set[type] = set()
    foldable = False  # an operation on literals only: the innermost part of any constant expression
    for n in tree.walk():
        kinds.add(type(n))
        if not foldable and isinstance(n, _FOLDABLE) and not isinstance(n, (exp.AggFunc, exp.Paren, exp.Neg)):
            children = list(n.iter_expressions())
            foldable = bool(children) and all(isinstance(c, (exp.Literal, exp.Null, exp.DataType)) for c in children)
    if exp.With in kinds:
        tree = inline_ctes(tree)
    if foldable:
        tree = fold_constants(tree)
    if exp.Exists in kinds or exp.Subquery in kinds:
        tree = decorrelate(tree, tables)
    if exp.Join in kinds:
        tree = push_left_join_filters(tree, tables)
    return tree


# ---- LEFT JOIN conditions on the joined table alone -----------------------------------------------
def push_left_join_filters(tree: exp.Expression, tables: "TableLookup") -> exp.Expression:
    """``LEFT JOIN t ON a = t.b AND <condition on t alone>`` becomes ``LEFT JOIN (SELECT * FROM t
    WHERE <condition>) AS t ON a = t.b``: the condition decides which rows of t can match, which is
    what it means in the ON clause of a LEFT JOIN.

    >>> import sqlglot
    >>> class T:
    ...     def columns(self, name): return {"o": {"ck", "c"}, "c": {"k"}}[name]
    >>> q = "SELECT k FROM c LEFT JOIN o ON k = ck AND c NOT LIKE '%x%'"
    >>> push_left_join_filters(sqlglot.parse_one(q, read="sqlite"), T()).sql(dialect="sqlite")
    "SELECT k FROM c LEFT JOIN (SELECT * FROM o WHERE c NOT LIKE '%x%') AS o ON k = ck"
    """
    for sel in list(tree.find_all(exp.Select)):
        for join in sel.args.get("joins") or []:
            on, right = join.args.get("on"), join.this
            if (join.args.get("side") or "").upper() != "LEFT" or on is None or not isinstance(right, exp.Table):
                continue
            alias = (right.alias or right.name).lower()
            cols = tables.columns(right.name)
            if cols is None:
                continue
            others = {a: c for a, c in _scope_columns(sel, tables).items() if a != alias}
            keep, push = [], []
            for cond in conjuncts(on):
                refs = [c for c in cond.find_all(exp.Column) if not isinstance(c.this, exp.Star)]
                mine = [c for c in refs if (c.table.lower() == alias) if c.table] + [
                    c for c in refs if not c.table and c.name.lower() in cols and not _belongs(c, others)
                ]
                if (
                    refs
                    and len(mine) == len(refs)
                    and not any(isinstance(n, (exp.Subquery, exp.Select)) for n in cond.walk())
                ):
                    push.append(cond)
                else:
                    keep.append(cond)
            if not push or not keep:
                continue
            where = push[0].copy()
            for c in push[1:]:
                where = exp.and_(where, c.copy())
            table = exp.Table(this=right.this.copy())
            if right.alias:
                table.set("alias", exp.TableAlias(this=exp.to_identifier(right.alias)))
            inner = exp.Select(expressions=[exp.Star()]).from_(table, copy=False).where(where, copy=False)
            on_new = keep[0].copy()
            for c in keep[1:]:
                on_new = exp.and_(on_new, c.copy())
            join.set(
                "this",
                exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(right.alias or right.name))),
            )
            join.set("on", on_new)
    return tree


# ---- WITH -----------------------------------------------------------------------------------------
def inline_ctes(tree: exp.Expression) -> exp.Expression:
    """Replace each reference to a common table expression by the CTE's query as a subquery.

    >>> import sqlglot
    >>> inline_ctes(sqlglot.parse_one("WITH r AS (SELECT a FROM t) SELECT a FROM r", read="sqlite")).sql()
    'SELECT a FROM (SELECT a FROM t) AS r'
    """
    for node in list(tree.find_all(exp.With)):
        if node.args.get("recursive"):
            raise Rejection("cte", "WITH RECURSIVE")
        owner = node.parent
        ctes: list[tuple[str, exp.Expression]] = []
        for cte in node.expressions:
            body = cte.this
            columns = cte.args["alias"].columns if cte.args.get("alias") is not None else []
            if columns:  # WITH r (a, b) AS (SELECT x, y ...): the SELECT's columns take those names
                first = body
                while isinstance(first, _SET_OPS):
                    first = first.this
                if (
                    not isinstance(first, exp.Select)
                    or len(first.expressions) != len(columns)
                    or any(isinstance(i, exp.Star) for i in first.expressions)
                ):
                    raise Rejection("cte", f"the column list of {cte.alias} does not match its SELECT")
                first.set(
                    "expressions", [exp.alias_(i.unalias().copy(), c.name) for i, c in zip(first.expressions, columns)]
                )
            for name, query in ctes:  # a CTE may read the ones before it
                body = _replace_tables(body, name, query)
            ctes.append((cte.alias.lower(), body))
        owner.set("with_", None)
        for name, query in ctes:
            owner = _replace_tables(owner, name, query)
        if owner.parent is None and owner is not tree:
            tree = owner
    return tree


def _replace_tables(node: exp.Expression, name: str, query: exp.Expression) -> exp.Expression:
    def swap(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Table) and not n.args.get("db") and n.name.lower() == name:
            return exp.Subquery(this=query.copy(), alias=exp.TableAlias(this=exp.to_identifier(n.alias or n.name)))
        return n

    return node.transform(swap, copy=False)


# ---- constants ---------------------------------------------------------------------------------------
def _evaluator() -> sqlite3.Connection:
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 100_000)
        ops = [0]

        def budget() -> int:  # constant expressions are small: stop anything that runs long
            ops[0] += 1
            return 1 if ops[0] > 1000 else 0

        conn.set_progress_handler(budget, 1000)
        _local.conn, _local.ops = conn, ops
    _local.ops[0] = 0
    return conn


def _literal_of(value: Any) -> exp.Expression | None:
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Literal.number(int(value))
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, float):
        return None if math.isinf(value) or math.isnan(value) else exp.Literal.number(repr(value))
    if isinstance(value, str):
        return exp.Literal.string(value)
    return None  # blobs stay as they are


def fold_constants(tree: exp.Expression) -> exp.Expression:
    """Replace constant expressions by their value, computed by SQLite (so exactly the value the
    query compares with: ``0.06 + 0.01`` is the double just below 0.07).

    >>> import sqlglot
    >>> q = "SELECT a FROM t WHERE d >= DATE('1994-01-01', '+3 months') AND x < 0.06 + 0.01"
    >>> fold_constants(sqlglot.parse_one(q, read="sqlite")).sql(dialect="sqlite")
    "SELECT a FROM t WHERE d >= '1994-04-01' AND x < 0.06999999999999999"
    """
    # one post-order pass: which nodes are constant; then each maximal constant foldable node is folded
    constant: dict[int, bool] = {}

    def mark(node: exp.Expression) -> bool:
        ok = not _blocks_folding(node)
        for child in node.iter_expressions():
            ok = mark(child) and ok
        constant[id(node)] = ok
        return ok

    def fold(node: exp.Expression) -> None:
        if (
            constant.get(id(node))
            and isinstance(node, _FOLDABLE)
            and not (isinstance(node, exp.Paren) and isinstance(node.this, (exp.Literal, exp.Null)))
        ):
            lit = _value_of(node)
            if lit is not None:
                if node is tree:
                    raise _Whole(lit)
                node.replace(lit)
                return
        for child in list(node.iter_expressions()):
            fold(child)

    if not mark(tree) and not any(constant.values()):
        return tree
    try:
        fold(tree)
    except _Whole as whole:
        return whole.lit
    return tree


class _Whole(Exception):
    def __init__(self, lit: exp.Expression) -> None:
        self.lit = lit


def _blocks_folding(n: exp.Expression) -> bool:
    """A node whose value is not a constant (a column, a subquery, randomness, the clock)."""
    if isinstance(n, _NOT_CONSTANT) or isinstance(n, (exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentTime)):
        return True
    if type(n).__name__ == "Rand" or (isinstance(n, exp.Anonymous) and str(n.this).lower() in ("random", "randomblob")):
        return True
    return isinstance(n, exp.Literal) and n.is_string and n.this.lower() in ("now", "localtime", "utc")


def _value_of(node: exp.Expression) -> exp.Expression | None:
    """The literal SQLite computes for a constant expression (None: leave it as it is)."""
    try:
        value = _evaluator().execute("SELECT " + node.sql(dialect="sqlite")).fetchone()[0]
    except (sqlite3.Error, OverflowError):
        return None  # left for SQLite to report when the SQL runs
    lit = _literal_of(value)
    if isinstance(lit, exp.Literal) and not lit.is_string and lit.this.startswith("-"):
        return exp.Neg(this=exp.Literal.number(lit.this[1:]))
    return lit


# ---- correlated subqueries -------------------------------------------------------------------------
class TableLookup:
    """What decorrelation needs from the database: whether a table has a column."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def columns(self, table: str) -> set[str] | None:
        t = self.db.table(table)
        return None if t is None else {c.name.lower() for c in t.columns}


def _sources(sel: exp.Select) -> list[exp.Expression]:
    out = []
    if sel.args.get("from_") is not None:
        out.append(sel.args["from_"].this)
    out += [j.this for j in sel.args.get("joins") or []]
    return out


def _scope_columns(sel: exp.Select, tables: TableLookup) -> dict[str, set[str] | None]:
    """alias (lower) -> its column names (lower); None when unknown (a derived table's * )."""
    scope: dict[str, set[str] | None] = {}
    for src in _sources(sel):
        alias = (src.alias or (src.name if isinstance(src, exp.Table) else "")).lower()
        if isinstance(src, exp.Table):
            scope[alias] = tables.columns(src.name)
        elif isinstance(src, exp.Subquery):
            names = output_names(src.this)
            scope[alias] = None if names is None else {n.lower() for n in names}
    return scope


def output_names(query: exp.Expression) -> list[str] | None:
    """The names SQLite gives a query's result columns (None when a ``*`` hides them)."""
    while isinstance(query, (*_SET_OPS, exp.Subquery)):
        query = query.this
    if not isinstance(query, exp.Select):
        return None
    names = []
    for item in query.expressions:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            return None
        names.append(item.alias or (item.name if isinstance(item, exp.Column) else item.sql(dialect="sqlite")))
    return names


def _belongs(col: exp.Column, scope: dict[str, set[str] | None]) -> bool:
    if col.table:
        return col.table.lower() in scope
    return any(cols is None or col.name.lower() in cols for cols in scope.values())


def _outer_refs(
    node: exp.Expression,
    inner: dict[str, set[str] | None],
    outer: dict[str, set[str] | None],
    tables: "TableLookup | None" = None,
) -> list[exp.Column]:
    """Columns of ``node`` that resolve to the outer scope: not to the inner one, nor to the scope
    of a SELECT nested inside ``node`` that encloses them."""
    out = []
    for c in node.find_all(exp.Column):
        if isinstance(c.this, exp.Star):
            continue
        if tables is not None:
            anc, own = c.parent, False
            while anc is not None and anc is not node:
                if isinstance(anc, exp.Select) and _belongs(c, _scope_columns(anc, tables)):
                    own = True
                    break
                anc = anc.parent
            if own:
                continue
        if not _belongs(c, inner) and _belongs(c, outer):
            out.append(c)
    return out


def decorrelate(tree: exp.Expression, tables: TableLookup) -> exp.Expression:
    """Rewrite correlated subqueries of every SELECT (innermost first) into LEFT JOINs with
    derived tables keyed on the correlation columns."""
    selects = [s for s in tree.find_all(exp.Select)]
    selects.sort(key=lambda s: -_depth(s))
    counter = [0]
    for sel in selects:
        _decorrelate_select(sel, tables, counter)
    return tree


def _depth(node: exp.Expression) -> int:
    d = 0
    while node.parent is not None:
        node, d = node.parent, d + 1
    return d


def _candidates(sel: exp.Select) -> list[exp.Expression]:
    """EXISTS, IN (subquery) and scalar subqueries directly in this SELECT's WHERE / projection /
    HAVING (not inside a nested SELECT)."""
    out: list[exp.Expression] = []
    roots = [sel.args.get("where"), sel.args.get("having"), *sel.expressions]
    for root in roots:
        if root is None:
            continue
        stack = [root]
        while stack:
            n = stack.pop()
            if isinstance(n, exp.Exists):
                out.append(n)
                continue
            if isinstance(n, exp.In) and n.args.get("query") is not None:
                out.append(n)
                continue
            if isinstance(n, exp.Subquery):
                out.append(n)
                continue
            if isinstance(n, exp.Select):
                continue
            stack.extend(n.iter_expressions())
    return out


def _decorrelate_select(sel: exp.Select, tables: TableLookup, counter: list[int]) -> None:
    if sel.args.get("from_") is None:
        return
    outer = _scope_columns(sel, tables)
    for node in _candidates(sel):
        query = (
            node.this if isinstance(node, exp.Exists) else (node.args["query"] if isinstance(node, exp.In) else node)
        )
        inner_sel = query.this if isinstance(query, exp.Subquery) else query
        if not isinstance(inner_sel, exp.Select) or inner_sel.args.get("from_") is None:
            continue
        inner = _scope_columns(inner_sel, tables)
        refs = _outer_refs(inner_sel, inner, outer, tables)
        if not refs:
            if isinstance(node, exp.Exists):
                raise Rejection("exists_subquery", "EXISTS over a subquery that does not refer to the outer query")
            continue
        counter[0] += 1
        _rewrite(sel, node, inner_sel, inner, outer, counter[0], tables)


def _split_correlation(
    inner_sel: exp.Select, inner: dict, outer: dict, tables: TableLookup
) -> tuple[list[tuple[exp.Expression, exp.Column]], list[exp.Expression]]:
    where = inner_sel.args.get("where")
    pairs: list[tuple[exp.Expression, exp.Column]] = []
    rest: list[exp.Expression] = []
    for cond in conjuncts(where.this) if where is not None else []:
        refs = _outer_refs(cond, inner, outer, tables)
        if not refs:
            rest.append(cond)
            continue
        if isinstance(cond, exp.EQ):
            left, right = cond.this, cond.expression
            l_out = isinstance(left, exp.Column) and bool(_outer_refs(left, inner, outer))
            r_out = isinstance(right, exp.Column) and bool(_outer_refs(right, inner, outer))
            if l_out != r_out:
                outer_col, inner_expr = (left, right) if l_out else (right, left)
                if not _outer_refs(inner_expr, inner, outer, tables) and not any(
                    isinstance(n, (exp.Subquery, exp.Select)) for n in inner_expr.walk()
                ):
                    pairs.append((inner_expr, outer_col))
                    continue
        raise Rejection(
            "correlated_subquery",
            f"a correlation that is not an equality of an inner and an outer column: {cond.sql(dialect='sqlite')[:80]}",
        )
    for part in ("joins", "group", "having", "order", "limit"):
        value = inner_sel.args.get(part)
        for v in value if isinstance(value, list) else [value] if value is not None else []:
            if _outer_refs(v, inner, outer, tables):
                raise Rejection(
                    "correlated_subquery", f"the outer query is referred to in the subquery's {part.upper()}"
                )
    for item in inner_sel.expressions:
        if _outer_refs(item, inner, outer, tables):
            raise Rejection("correlated_subquery", "the outer query is referred to in the subquery's SELECT list")
    return pairs, rest


def _fresh(name: str, taken: set[str]) -> str:
    out, k = name, 2
    while out.lower() in taken:
        out, k = f"{name}_{k}", k + 1
    return out


def conjuncts(node: exp.Expression) -> list[exp.Expression]:
    """The AND-ed parts of a condition, parentheses removed."""
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]


def _rewrite(
    sel: exp.Select, node: exp.Expression, inner_sel: exp.Select, inner: dict, outer: dict, n: int, tables: TableLookup
) -> None:
    pairs, rest = _split_correlation(inner_sel, inner, outer, tables)
    if not pairs:
        raise Rejection("correlated_subquery", "the subquery refers to the outer query outside its WHERE")
    if inner_sel.args.get("limit") is not None or inner_sel.args.get("offset") is not None:
        raise Rejection("correlated_subquery", "a correlated subquery with LIMIT/OFFSET (a top-k per outer row)")
    derived = inner_sel.copy()
    derived.set("where", None)
    if rest:
        cond = rest[0].copy()
        for c in rest[1:]:
            cond = exp.and_(cond, c.copy())
        derived.set("where", exp.Where(this=cond))
    derived.set("order", None)
    # readable names: the model sees them in the gold calls (e.g. tracks_matches.genre_id)
    first = _sources(inner_sel)[0]
    base = (first.name if isinstance(first, exp.Table) else (first.alias or "subquery")).lower()
    taken = set(_scope_columns(sel, tables))
    names: list[str] = []

    def name_of(e: exp.Expression, fallback: str) -> str:
        name = e.name if isinstance(e, exp.Column) and e.name else fallback
        out, k = name, 2
        while out.lower() in {x.lower() for x in names}:
            out, k = f"{name}_{k}", k + 1
        names.append(out)
        return out

    keys = [exp.alias_(inner_expr.copy(), name_of(inner_expr, "key")) for inner_expr, _ in pairs]
    on = [(k.alias, outer_col) for k, (_, outer_col) in zip(keys, pairs)]
    grouped = bool(derived.args.get("group")) or derived.args.get("having") is not None
    if isinstance(node, (exp.Exists, exp.In)):
        suffix = "matches"
        if grouped or any(isinstance(x, exp.AggFunc) for i in inner_sel.expressions for x in i.walk()):
            raise Rejection("correlated_subquery", "EXISTS / IN over a grouped or aggregated correlated subquery")
        if isinstance(node, exp.In):
            if len(inner_sel.expressions) != 1 or not isinstance(node.this, exp.Column):
                raise Rejection("correlated_subquery", "a correlated IN whose tested value is not a column")
            tested = inner_sel.expressions[0].unalias()
            keys.append(exp.alias_(tested.copy(), name_of(tested, "value")))
            on.append((keys[-1].alias, node.this))
        derived.set("expressions", keys)
        derived.set("distinct", exp.Distinct())
        alias = _fresh(f"{base}_{suffix}", taken)
        replacement: exp.Expression = exp.Not(
            this=exp.Is(this=exp.column(keys[0].alias, table=alias), expression=exp.Null())
        )
    else:  # a scalar subquery
        if grouped:
            raise Rejection("correlated_subquery", "a correlated scalar subquery with its own GROUP BY / HAVING")
        if len(inner_sel.expressions) != 1:
            raise Rejection("correlated_subquery", "a scalar subquery with more than one column")
        value = inner_sel.expressions[0].unalias()
        aggs = [x for x in value.walk() if isinstance(x, exp.AggFunc)]
        agg_name = (
            f"{type(aggs[0]).__name__.lower()}_{aggs[0].this.name}"
            if len(aggs) == 1 and isinstance(aggs[0].this, exp.Column)
            else "count_rows"
            if len(aggs) == 1 and isinstance(aggs[0], exp.Count)
            else "value"
        )
        value_name = name_of(exp.Column(), inner_sel.expressions[0].alias or agg_name)
        derived.set("distinct", None)
        derived.set("expressions", keys + [exp.alias_(value.copy(), value_name)])
        alias = _fresh(f"{base}_{'totals' if aggs else 'lookup'}", taken)
        replacement = exp.column(value_name, table=alias)
        if aggs:
            derived.set("group", exp.Group(expressions=[k.unalias().copy() for k in keys]))
            if isinstance(value, exp.Count):
                replacement = exp.Coalesce(this=replacement, expressions=[exp.Literal.number(0)])
            elif any(isinstance(x, (exp.Count, exp.Coalesce, exp.Case, exp.If)) for x in value.walk()):
                raise Rejection(
                    "correlated_subquery",
                    "a correlated aggregate whose value over no rows is not empty (COUNT/COALESCE inside an expression)",
                )
    condition = None
    for key, outer_col in on:
        eq = exp.EQ(this=exp.column(key, table=alias), expression=outer_col.copy())
        condition = eq if condition is None else exp.and_(condition, eq)
    table = exp.Subquery(this=derived, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    table.meta[DECORRELATED] = True  # the original query names none of its columns unqualified
    join = exp.Join(this=table, side="LEFT", on=condition)
    sel.append("joins", join)
    node.replace(replacement)
