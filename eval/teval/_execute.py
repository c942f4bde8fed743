"""Run calls against an NL2API split's own tools and database, for derived review cases.

Every response of a derived review case comes from a real execution (``benchsmith.construction.
nl2api``'s public runtime): the gold call on the split's database (a merged split's
``databases/<db_id>.sqlite`` named by the sample's ``metadata.db_id``; a REST endpoint's own) (success), the gold call on
a database whose connection has failed (internal error), a call with a realistic input mistake
that the tool rejects (input error), and a call whose condition no row of the data meets (the
tool answers with nothing: unable to accomplish).
"""

from __future__ import annotations

import copy
import hashlib
import math
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchsmith.construction.nl2api import (
    Database,
    QueryTimeout,
    Runtime,
    SplitTools,
    ToolError,
    json_value,
    observation,
    read_manifest,
    run_endpoint,
)
from benchsmith.schemas import Sample, Split, ToolCall, UnresolvedReference, UserError, resolve_references

FICTIONAL = ("Atlantis", "Zembla", "Ruritania", "Genovia", "Freedonia", "Latveria")
# plausible wrong spellings of argument values, as a model writes them
WRONG_WORDS = {
    "equal_to": "equals",
    "not_equal_to": "not_equals",
    "greater_than": "gt",
    "less_than": "lt",
    "greater_than_or_equal_to": "gte",
    "less_than_or_equal_to": "lte",
    "in": "one_of",
    "contains": "includes",
    "avg": "average",
    "sum": "total",
    "count": "count_rows",
    "count_distinct": "distinct_count",
    "max": "maximum",
    "min": "minimum",
    "strftime": "year",
    "substr": "substring",
    "round": "round_to",
    "divide": "div",
    "multiply": "times",
    "subtract": "minus",
    "add": "plus",
    "cast": "convert",
    "length": "len",
}
COLUMN_SYNONYMS = {
    "milliseconds": "duration",
    "name": "title",
    "title": "name",
    "total": "amount",
    "country": "nation",
    "unit_price": "price",
    "invoice_date": "date",
    "first_name": "firstname",
    "last_name": "surname",
    "composer": "author",
    "city": "town",
    "hire_date": "start_date",
    "birth_date": "birthday",
    "billing_country": "country",
    "bytes": "size",
    "quantity": "count",
}
_VALUE_OPS = (
    "equal_to",
    "in",
    "contains",
    "starts_with",
    "ends_with",
    "greater_than",
    "greater_than_or_equal_to",
    "between",
)


class Outcome:
    """One real execution: ``kind`` is ``ok``, ``input_error`` (the tool rejected the input) or
    ``internal_error`` (the tool or its database failed); ``response`` is what the tool returned."""

    def __init__(self, kind: str, response: Any, value: Any = None) -> None:
        self.kind, self.response, self.value = kind, response, value

    @property
    def empty(self) -> bool:
        r = self.response
        return r is None or (isinstance(r, Mapping) and r.get("rows") == [])


def _digest(*parts: Any) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _database_path(split: Path) -> Path | None:
    """The split's one database; None for a merged split without one (each sample names its own)."""
    local = split / "database.sqlite"
    if local.is_file():
        return local
    if Split(split).has_databases():
        return None
    manifest = split / "manifest.json"
    if manifest.is_file():  # the one manifest reader: a broken manifest is the user's to fix, not skipped
        db = read_manifest(manifest).provenance.params.get("db")
        if isinstance(db, str) and Path(db).is_file():
            return Path(db)
    raise UserError(
        f"{split} has no database.sqlite and its manifest names no database that exists",
        fix="build the split with its database (benchsmith nl2api build copies it by default)",
    )


class SplitRunner:
    """The split's tools over its database (read-only), plus a copy whose connection has failed.

    In a merged split (``databases/<db_id>.sqlite``) :meth:`start` switches to the database of the
    sample it starts (its ``metadata.db_id``), and a REST endpoint runs on the one its entry names."""

    def __init__(self, split: str | Path) -> None:
        root = Path(split)
        path = _database_path(root)
        self._tools = SplitTools(root, database=path)
        self.bindings, self.endpoints = self._tools.bindings, self._tools.endpoints
        self._broken: dict[Path, Database] = {}
        self.db: Any = None
        self.broken: Any = None
        if path is not None:
            self._use(self._tools.db)

    def _broken_copy(self, db: Database) -> Database:
        if db.path not in self._broken:
            broken = self._broken[db.path] = Database(db.path)
            broken.close()  # every query on it fails inside the tool: the internal-error case
        return self._broken[db.path]

    def _use(self, db: Database) -> None:
        if db is not self.db:
            self.db, self.broken = db, self._broken_copy(db)

    def close(self) -> None:
        self._tools.close()

    # ---- state ----------------------------------------------------------------------------
    def start(self, sample: Sample) -> dict[str, Any]:
        """The outputs of the sample's hidden set-up calls (labels -> values), on the sample's
        database (a db_id without a database is a ``UserError``)."""
        db_id = sample.metadata.get("db_id")
        self._use(self._tools.db_for(db_id if isinstance(db_id, str) else None))
        if self.endpoints:
            return {}
        rt = Runtime(self.db, self.bindings)
        rt.setup(sample.setup)
        return dict(rt.outputs)

    def advance(self, outputs: dict[str, Any], call: ToolCall) -> Outcome:
        """Run a gold call, keeping its output under its label in ``outputs``."""
        out = self.run(outputs, call)
        if out.kind == "ok" and call.label:
            outputs[call.label] = out.value
        return out

    # ---- running ----------------------------------------------------------------------------
    def run(self, outputs: Mapping[str, Any], call: ToolCall, *, broken: bool = False) -> Outcome:
        db = self.broken if broken else self.db
        try:
            if call.name in self.endpoints:
                endpoint = self.endpoints[call.name]
                if endpoint.get("db_id"):  # a merged split's endpoint runs on its own database
                    own = self._tools.db_for(endpoint["db_id"])
                    db = self._broken_copy(own) if broken else own
                args = resolve_references(call.arguments, outputs)
                result = run_endpoint(db, endpoint, args)
                return Outcome("ok", json_value(result), result)  # shown as the server sends it (tagged bytes, inf)
            rt = Runtime(db, self.bindings)
            rt.outputs = dict(outputs)
            value = rt.call(call)
            return Outcome("ok", observation(value, db), value)
        except (ToolError, UnresolvedReference, ValueError, TypeError) as exc:
            return Outcome("input_error", {"error": f"{call.name}: {exc}"})
        except (sqlite3.Error, QueryTimeout, UserError) as exc:  # UserError: the endpoint's database is missing
            return Outcome(
                "internal_error", {"error": f"{call.name} failed inside the service: {type(exc).__name__}: {exc}"}
            )

    def internal_error(self, outputs: Mapping[str, Any], call: ToolCall) -> Outcome | None:
        out = self.run(outputs, call, broken=True)
        return out if out.kind == "internal_error" else None

    # ---- input mistakes ---------------------------------------------------------------------
    def _slot_name(self, tool: str, arg: str) -> str:
        binding = (self.bindings or {}).get(tool)
        return binding.rename.get(arg, arg) if binding is not None else arg

    def mistakes(self, call: ToolCall) -> list[tuple[str, dict[str, Any]]]:
        """Realistic wrong inputs for ``call``: (what is wrong, arguments), most telling first."""
        args = call.arguments
        found: list[tuple[str, dict[str, Any]]] = []
        for key, value in args.items():
            slot = self._slot_name(call.name, key)
            if slot in ("key_name", "value_key_name") and isinstance(value, str) and "." in value:
                table, _, col = value.rpartition(".")
                found.append(
                    (
                        f"{key} names a column the data does not have",
                        {**args, key: f"{table}.{COLUMN_SYNONYMS.get(col, col + '_value')}"},
                    )
                )
            elif slot == "key_names" and isinstance(value, list) and value and isinstance(value[0], str):
                table, _, col = value[0].rpartition(".")
                wrong = f"{table}.{COLUMN_SYNONYMS.get(col, col + '_value')}" if table else f"{col}_value"
                found.append((f"{key} names a column the data does not have", {**args, key: [wrong, *value[1:]]}))
            elif slot in ("operator", "aggregation", "function") and isinstance(value, str) and value in WRONG_WORDS:
                found.append((f"{key} is not one the tool accepts", {**args, key: WRONG_WORDS[value]}))
        required = [k for k in args if k != "data_source"]
        if self.endpoints and call.name in self.endpoints:
            required = list(self.endpoints[call.name].get("parameters") or {})
        if required:
            drop = required[0]
            found.append((f"the required argument {drop} is missing", {k: v for k, v in args.items() if k != drop}))
        for key, value in args.items():
            if (
                self._slot_name(call.name, key) == "data_source"
                and isinstance(value, str)
                and re.fullmatch(r"\$[A-Za-z]+_\d+\$", value)
            ):
                found.append(
                    (
                        f"{key} refers to an output no earlier step produced",
                        {**args, key: re.sub(r"_\d+\$$", "$", value)},
                    )
                )
        return found

    def input_error(
        self, outputs: Mapping[str, Any], call: ToolCall, salt: Any
    ) -> tuple[str, ToolCall, Outcome] | None:
        """A realistic wrong input that the tool really rejects (the choice rotates with ``salt``)."""
        options = self.mistakes(call)
        if not options:
            return None
        start = _digest("mistake", salt) % len(options)
        for k in range(len(options)):
            why, args = options[(start + k) % len(options)]
            wrong = ToolCall(name=call.name, arguments=args, label=call.label)
            out = self.run(outputs, wrong)
            if out.kind == "input_error":
                return why, wrong, out
        return None

    # ---- nothing to find --------------------------------------------------------------------
    def _filter_slot(self, call: ToolCall) -> tuple[str, str, Any] | None:
        """(visible argument holding a filter value, operator, the data source) of a filter call."""
        if call.name in self.endpoints:
            endpoint = self.endpoints[call.name]
            for inner in endpoint.get("calls") or []:
                a = inner.get("arguments") or {}
                v = a.get("value")
                if (
                    inner.get("name") == "filter_data"
                    and isinstance(v, dict)
                    and set(v) == {"__param__"}
                    and a.get("operator") in ("equal_to", "in", "contains", "starts_with", "ends_with")
                ):
                    return str(v["__param__"]), str(a["operator"]), None
            return None
        binding = (self.bindings or {}).get(call.name)
        tool = binding.tool if binding is not None else call.name
        if tool != "filter_data":
            return None
        slot = {self._slot_name(call.name, k): k for k in call.arguments}
        operator = (binding.fixed.get("operator") if binding is not None else None) or call.arguments.get(
            slot.get("operator", "operator")
        )
        if "value" not in slot or operator not in _VALUE_OPS:
            return None
        value = call.arguments[slot["value"]]
        if isinstance(value, str) and value.startswith("$") and value.endswith("$"):
            return None
        key = call.arguments.get(slot.get("key_name", "key_name"))
        return slot["value"], str(operator), (call.arguments.get(slot.get("data_source", "data_source")), key)

    def _largest(self, outputs: Mapping[str, Any], source: Any) -> Any:
        data, column = source
        rt = Runtime(self.db)
        rt.outputs = dict(outputs)
        try:
            return rt.call(
                ToolCall(
                    name="aggregate_data", arguments={"data_source": data, "aggregation": "max", "key_name": column}
                )
            )
        except (ToolError, sqlite3.Error, QueryTimeout, TypeError, ValueError):
            return None

    def unable(self, outputs: Mapping[str, Any], call: ToolCall, salt: Any) -> tuple[ToolCall, Outcome] | None:
        """The call asking for something no row of its data has: a value that does not occur (an
        unknown name, a number above the largest), run for real; None unless the result is empty."""
        found = self._filter_slot(call)
        if found is None:
            return None
        key, operator, source = found
        value = call.arguments.get(key)
        candidates: list[Any] = []
        numeric = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            or (
                isinstance(value, list)
                and value
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
            )
        )
        if numeric:
            if source is None:
                return None
            top = self._largest(outputs, source)
            if not isinstance(top, (int, float)) or isinstance(top, bool):
                return None
            above = 10 ** (math.floor(math.log10(abs(top))) + 1) if top else 10
            if isinstance(value, list):
                candidates = [[above, above * 2] if operator == "between" else [above, above + 1]]
            else:
                candidates = [above]
        elif (
            operator == "between"
            and isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, str) and re.match(r"\d{4}-", v) for v in value)
        ):
            candidates = [[re.sub(r"^\d{4}", "2099", v) for v in value]]  # a period the data does not reach
        elif isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
            start = _digest("unable", salt) % len(FICTIONAL)
            names = [FICTIONAL[(start + k) % len(FICTIONAL)] for k in range(len(FICTIONAL))]
            candidates = [[n] if isinstance(value, list) else n for n in names]
        for candidate in candidates:
            asked = ToolCall(
                name=call.name, arguments={**copy.deepcopy(call.arguments), key: candidate}, label=call.label
            )
            out = self.run(outputs, asked)
            if out.kind == "ok" and out.empty:
                return asked, out
        return None


__all__ = ["FICTIONAL", "Outcome", "SplitRunner"]
