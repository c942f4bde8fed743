"""What a gold step is for, in words: the thought of derived T-Eval records.

A step's thought says what the step does to the data it works on, in terms of the request: the
question it serves (first step), which rows or values it keeps, orders, groups or computes, and
that the last step gives the answer. It is written from the step's meaning (the NL2API tool
behind the call, its condition, columns and values, and what the earlier steps produced), not
from the call's text: ``filter_data(data_source=$data_1$, key_name=tracks.milliseconds,
operator=greater_than, value=300000)`` on the question "How many tracks run longer than five
minutes?" becomes "The question asks "How many tracks run longer than five minutes?". First I
keep only the tracks whose milliseconds is greater than 300000."

Calls of SEL and obfuscated splits are read through the split's bindings (the NL2API tool, fixed
and renamed arguments), calls of REST splits through their endpoint's call template.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_REF = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)(?:\.([^$]*))?\$$")

_OPS = {
    "equal_to": "is {v}",
    "not_equal_to": "is not {v}",
    "greater_than": "is greater than {v}",
    "greater_than_or_equal_to": "is at least {v}",
    "less_than": "is less than {v}",
    "less_than_or_equal_to": "is at most {v}",
    "contains": "contains {v}",
    "not_contains": "does not contain {v}",
    "starts_with": "starts with {v}",
    "not_starts_with": "does not start with {v}",
    "ends_with": "ends with {v}",
    "not_ends_with": "does not end with {v}",
    "like": "matches the pattern {v}",
    "not_like": "does not match the pattern {v}",
    "in": "is one of {v}",
    "not_in": "is none of {v}",
    "between": "is between {v}",
    "not_between": "is not between {v}",
    "is_null": "is empty",
    "is_not_null": "is not empty",
}
_AGG_VALUE = {
    "count": "number of {n}",
    "count_distinct": "number of distinct {c}",
    "sum": "total {c}",
    "avg": "average {c}",
    "min": "smallest {c}",
    "max": "largest {c}",
}
_ARITH = {
    "add": ("the sum of {l} and {r}", "plus"),
    "subtract": ("{l} minus {r}", "minus"),
    "multiply": ("{l} times {r}", "times"),
    "divide": ("{l} divided by {r}", "divided by"),
    "modulo": ("the remainder of {l} divided by {r}", "modulo"),
    "concat": ("{l} followed by {r}", "followed by"),
}


def _words(name: str) -> str:
    return name.replace("_", " ").strip()


def singular(noun: str) -> str:
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    if noun.endswith("s") and not noun.endswith("ss"):
        return noun[:-1]
    return noun


@dataclass
class Data:
    """What a label holds: rows of ``noun`` (a phrase such as "the remaining tracks") or a value."""

    kind: str  # "rows" | "value"
    noun: str  # plural noun of a row ("tracks", "groups") or what the value is ("number of tracks")
    phrase: str  # how a later step names it ("the remaining tracks", "the number of tracks")
    table: str = ""  # the main table of the rows, to name columns of other tables
    step: int | None = None  # 1-based visible step that produced it (None: the data loaded up front)
    ref: str = ""  # how a later step names it as a value (rows whose values are used, e.g. in a filter)


class Describer:
    """Writes step intents for one sample: call :meth:`setup` with the hidden set-up calls, then
    :meth:`step` for each visible call in order."""

    def __init__(self, bindings: Mapping[str, Any] | None = None, endpoints: Mapping[str, Any] | None = None) -> None:
        self.bindings = dict(bindings or {})
        self.endpoints = dict(endpoints or {})
        self.labels: dict[str, Data] = {}
        self.last: str | None = None
        self.current = 0  # the 1-based visible step being described
        self.what = ""  # the last step's action alone, as a sentence (a review's goal)

    # ---- reading calls ------------------------------------------------------------------
    def expand(
        self, name: str, arguments: Mapping[str, Any]
    ) -> tuple[list[tuple[str, dict[str, Any], str | None]], list[tuple[str, dict[str, Any], str | None]]]:
        """(set-up calls, calls) of the NL2API tools behind one visible call."""
        endpoint = self.endpoints.get(name)
        if isinstance(endpoint, Mapping):

            def subst(value: Any) -> Any:
                if isinstance(value, dict) and set(value) == {"__param__"}:
                    return arguments.get(value["__param__"])
                if isinstance(value, dict):
                    return {k: subst(v) for k, v in value.items()}
                if isinstance(value, list):
                    return [subst(v) for v in value]
                return value

            setup = [(c["name"], dict(c.get("arguments") or {}), c.get("label")) for c in endpoint.get("setup", [])]
            calls = [
                (c["name"], subst(dict(c.get("arguments") or {})), c.get("label")) for c in endpoint.get("calls", [])
            ]
            return setup, calls
        binding = self.bindings.get(name)
        if binding is not None:
            rename = dict(getattr(binding, "rename", {}) or {})
            args = {rename.get(k, k): v for k, v in arguments.items()}
            args.update(dict(getattr(binding, "fixed", {}) or {}))
            return [], [(str(getattr(binding, "tool", name)), args, None)]
        return [], [(name, dict(arguments), None)]

    # ---- naming things ------------------------------------------------------------------
    def column(self, name: Any, table: str) -> str:
        if not isinstance(name, str):
            return "the value"
        owner, _, col = name.rpartition(".")
        if owner and owner != table:
            return f"{_words(singular(owner))} {_words(col)}"
        return _words(col or name)

    def arithmetic(self, args: Mapping[str, Any], table: str) -> str:
        """``left <operator> right`` of a compute_column / calculate call, in words."""
        op = str(args.get("operator", "add"))
        left, right = self.value(args.get("left"), table), self.value(args.get("right"), table)
        return _ARITH.get(op, ("{l} " + op + " {r}", op))[0].format(l=left, r=right)

    def value(self, value: Any, table: str = "") -> str:
        if isinstance(value, str):
            m = _REF.match(value)
            if m:
                data = self.labels.get(m.group(1))
                key = m.group(2)
                where = f" from step {data.step}" if data and data.step and data.step != self.current else ""
                if key:
                    return f"the {_words(key)}{where}"
                if data is None:
                    return "the earlier result"
                if data.kind == "value":
                    return f"{data.phrase}{where}"
                return f"{data.ref or 'the ' + data.noun}{where}"
            return f'"{value}"'
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            return "empty"
        if isinstance(value, dict) and set(value) == {"key_name"}:
            return f"the {self.column(value['key_name'], table)}"
        if isinstance(value, dict) and set(value) == {"value"}:
            return self.value(value["value"], table)
        if isinstance(value, list):
            parts = [self.value(v, table) for v in value]
            if len(parts) <= 1:
                return parts[0] if parts else "nothing"
            return ", ".join(parts[:-1]) + " or " + parts[-1]
        return json.dumps(value, ensure_ascii=False) if not isinstance(value, (int, float)) else str(value)

    def source(self, ref: Any) -> Data:
        m = _REF.match(ref) if isinstance(ref, str) else None
        data = self.labels.get(m.group(1)) if m else None
        return data or Data("rows", "rows", "the data", "")

    def source_phrase(self, data: Data, label: Any) -> str:
        m = _REF.match(label) if isinstance(label, str) else None
        if m and self.last is not None and m.group(1) == self.last:
            return data.phrase
        if data.step and data.step != self.current:
            return f"the {data.noun} from step {data.step}"
        return data.phrase

    def condition(self, cond: Mapping[str, Any], table: str) -> str:
        op = str(cond.get("operator", "equal_to"))
        col = self.column(cond.get("key_name"), table)
        if "value_key_name" in cond:
            other = self.column(cond.get("value_key_name"), table)
            return f"{col} {_OPS.get(op, op).format(v=f'their {other}')}"
        value = cond.get("value")
        if op in ("between", "not_between") and isinstance(value, list) and len(value) == 2:
            shown = f"{self.value(value[0], table)} and {self.value(value[1], table)}"
        else:
            shown = self.value(value, table)
        return f"{col} {_OPS.get(op, op + ' {v}').format(v=shown)}"

    # ---- steps ----------------------------------------------------------------------------
    def setup(self, calls: Sequence[tuple[str, Mapping[str, Any], str | None]]) -> None:
        for name, args, label in calls:
            if name == "initialize_active_data":
                table = str(args.get("source", "data"))
                joined = [str(j.get("table")) for j in args.get("joins") or [] if isinstance(j, Mapping)]
                noun = _words(table)
                names = [_words(t) for t in joined]
                listing = ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + (names[-1] if names else "")
                phrase = f"the {noun}" + (f" (joined with their {listing})" if joined else "")
                if label:
                    self.labels[label] = Data("rows", noun, phrase, table)

    def _one(self, name: str, args: Mapping[str, Any], label: str | None, step: int) -> tuple[str, Data]:
        ds_label = args.get("data_source")
        src = self.source(ds_label)
        table, noun = src.table, src.noun
        on = self.source_phrase(src, ds_label)
        out = Data("rows", noun, f"the {noun}", table, step)
        if name == "filter_data":
            text = f"keep only {on} whose {self.condition(args, table)}"
            out.phrase = f"the remaining {noun}"
        elif name == "filter_data_any":
            conds = [self.condition(c, table) for c in args.get("conditions") or [] if isinstance(c, Mapping)]
            text = f"keep only {on} whose " + ", or whose ".join(conds or ["condition holds"])
            out.phrase = f"the remaining {noun}"
        elif name == "sort_data":
            keys = args.get("key_names") or []
            asc = args.get("ascending") or []
            parts = [
                f"{self.column(k, table)} ({'smallest' if (asc[i] if i < len(asc) else True) else 'largest'} first)"
                for i, k in enumerate(keys)
            ]
            text = f"sort {on} by " + (", then by ".join(parts) or "their values")
            out.phrase = f"the sorted {noun}"
        elif name == "limit_data":
            n, offset = args.get("n"), args.get("offset") or 0
            skip = f", after skipping the first {offset}" if offset else ""
            text = f"keep the first {n} of {on}{skip}"
            out.phrase = f"the top {singular(noun)}" if n == 1 and not offset else f"those {n} {noun}"
        elif name == "retrieve_data":
            cols = [self.column(k, table) for k in args.get("key_names") or []]
            what = ", ".join(cols[:-1]) + (" and " if len(cols) > 1 else "") + (cols[-1] if cols else "columns")
            text = f"take the {what} of {on}" + (", without duplicates" if args.get("distinct") else "")
            out.phrase = f"the {what} of the {noun}"
            out.ref = f"the {what} values of the {noun}"
        elif name == "get_unique_values":
            col = self.column(args.get("key_name"), table)
            text = f"list the distinct {col} values of {on}"
            out = Data("rows", f"{col} values", f"the distinct {col} values", table, step, f"the distinct {col} values")
        elif name == "aggregate_data":
            agg = str(args.get("aggregation", "count"))
            key = args.get("key_name")
            col = self.column(key, table) if key else ""
            if agg == "count" and not key:
                text = f"count {on}"
                what = f"number of {noun}"
            elif agg == "count":
                text = f"count the {col} values of {on} that are not empty"
                what = f"number of {col} values"
            else:
                verb = {
                    "count_distinct": "count the distinct {c} values of {o}",
                    "sum": "add up the {c} of {o}",
                    "avg": "take the average {c} of {o}",
                    "min": "find the smallest {c} of {o}",
                    "max": "find the largest {c} of {o}",
                }.get(agg, agg + " the {c} of {o}")
                text = verb.format(c=col, o=on)
                what = _AGG_VALUE.get(agg, agg + " {c}").format(c=col, n=noun)
            out = Data("value", what, f"the {what}", table, step)
        elif name == "group_data_by":
            keys = [self.column(k, table) for k in args.get("key_names") or []]
            aggs = []
            for a in args.get("aggregations") or []:
                if not isinstance(a, Mapping):
                    continue
                agg, key = str(a.get("aggregation", "count")), a.get("key_name")
                col = self.column(key, table) if key else ""
                what = (
                    f"number of {noun}"
                    if agg == "count" and not key
                    else f"number of {col} values"
                    if agg == "count"
                    else _AGG_VALUE.get(agg, agg + " {c}").format(c=col, n=noun)
                )
                aggs.append(f"the {what} as {a.get('output_name')}")
            listing = ", ".join(aggs[:-1]) + (" and " if len(aggs) > 1 else "") + (aggs[-1] if aggs else "")
            if keys:
                text = f"group {on} by {' and '.join(keys)} and compute for each group {listing}"
                out = Data("rows", "groups", f"the {noun} per {' and '.join(keys)}", table, step)
            else:
                text = f"compute over all {on} {listing}"
                out = Data("rows", "totals", f"the totals of the {noun}", table, step)
        elif name == "transform_data":
            col = self.column(args.get("key_name"), table)
            fn = str(args.get("function", ""))
            given = args.get("arguments")
            fa = given if isinstance(given, Mapping) else {}
            shown = {k: self.value(v, table) for k, v in fa.items()}
            how = {
                "substr": f"the part of the {col} that starts at character {shown.get('start', '1')}"
                + (f" and is {shown['length']} characters long" if "length" in shown else ""),
                "instr": f"the position of {shown.get('substring', 'the text')} in the {col}",
                "strftime": f"the {shown.get('format', 'date part')} part of the {col}",
                "cast": f"the {col} read as {fa.get('type', 'another type')}",
                "round": f"the {col} rounded to {shown.get('digits', '0')} decimals",
                "replace": f"the {col} with {shown.get('old', 'a text')} replaced by {shown.get('new', 'another')}",
                "coalesce": f"the {col}, or {shown.get('default', 'a default')} where it is empty",
            }.get(fn, f"the {_words(fn)} of the {col}")
            text = f"add to {on} a column {args.get('output_name')} holding {how}"
            out.phrase = f"the {noun}"
        elif name == "compute_column":
            how = self.arithmetic(args, table)
            text = f"add to {on} a column {args.get('output_name')} holding {how}"
            out.phrase = f"the {noun}"
        elif name == "case_column":
            cases = []
            for c in args.get("cases") or []:
                if not isinstance(c, Mapping):
                    continue
                when = " and ".join(
                    self.condition(x, table) for x in c.get("conditions") or [] if isinstance(x, Mapping)
                )
                cases.append(f"{self.value(c.get('result'), table)} when the {when}")
            default = f", else {self.value(args.get('default'), table)}" if args.get("default") is not None else ""
            text = f"add to {on} a column {args.get('output_name')} that is " + "; ".join(cases) + default
            out.phrase = f"the {noun}"
        elif name == "calculate":
            how = self.arithmetic(args, table)
            text = f"compute {how}"
            out = Data("value", "result", f"the result ({how})", table, step)
        else:
            listing = ", ".join(f"{_words(k)} {self.value(v, table)}" for k, v in args.items() if k != "data_source")
            text = f"use {_words(name)} on {on}" + (f" with {listing}" if listing else "")
        if label:
            self.labels[label] = out
        return text, out

    def step(
        self, name: str, arguments: Mapping[str, Any], label: str | None, index: int, total: int, query: str
    ) -> str:
        """The thought of visible step ``index`` (0-based) of ``total``; records its output under ``label``."""
        setup, calls = self.expand(name, arguments)
        self.current = index + 1
        saved = dict(self.labels)
        self.setup(setup)
        parts = []
        out: Data | None = None
        for n, (inner, args, inner_label) in enumerate(calls):
            text, out = self._one(inner, args, inner_label or f"__inner{n}", index + 1)
            parts.append(text)
            self.last = inner_label or f"__inner{n}"
        self.labels = saved  # labels inside an endpoint's template are its own
        if label and out is not None:
            self.labels[label] = out
        self.last = label
        what = ", then ".join(parts) if parts else f"use {_words(name)}"
        self.what = what[:1].upper() + what[1:] + "."
        q = " ".join(query.split())
        if total == 1:
            return f'To answer the question "{q}", I {what}.'
        if index == 0:
            return f'The question asks "{q}". First I {what}.'
        if index == total - 1:
            return f"Finally I {what}; this gives the answer to the question."
        return f"Next I {what}."


__all__ = ["Data", "Describer", "singular"]
