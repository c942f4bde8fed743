"""REST style: one GET endpoint per verified question, and the FastAPI app that serves them.

Parameter values are literal: they are put into the call template after the template's own
``$label$`` references are resolved, so a value such as ``"$data_1$"`` is just text.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from benchsmith.schemas import RestBinding, Tool, ToolCall

from .converter import Conversion
from .database import Database, QueryTimeout
from .relation import Relation, ToolError
from .runtime import Runtime
from .splitfiles import read_endpoints, read_manifest
from .tools import INT64

PARAM = "__param__"
_SUFFIX = {"equal_to": "", "not_equal_to": "_not", "greater_than": "_above", "greater_than_or_equal_to": "_min",
           "less_than": "_below", "less_than_or_equal_to": "_max", "contains": "_contains",
           "not_contains": "_excludes", "starts_with": "_prefix", "not_starts_with": "_not_prefix",
           "ends_with": "_suffix", "not_ends_with": "_not_suffix", "like": "_pattern", "not_like": "_not_pattern",
           "in": "_in", "not_in": "_not_in"}
_WORDS = {"equal_to": "equals", "not_equal_to": "differs from", "greater_than": "is greater than",
          "greater_than_or_equal_to": "is at least", "less_than": "is less than",
          "less_than_or_equal_to": "is at most", "contains": "contains", "not_contains": "does not contain",
          "starts_with": "starts with", "not_starts_with": "does not start with", "ends_with": "ends with",
          "not_ends_with": "does not end with", "like": "matches the pattern", "not_like": "does not match the pattern",
          "in": "is one of", "not_in": "is none of", "between": "is between", "not_between": "is not between"}
PATTERN_LIKE = ("contains", "not_contains", "starts_with", "not_starts_with", "ends_with", "not_ends_with",
                "like", "not_like")
_VERBS = {"count": "count", "count_distinct": "count_distinct", "sum": "total", "avg": "average", "min": "min", "max": "max"}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _is_literal(value: Any) -> bool:
    return value is not None and not (isinstance(value, str) and value.startswith("$") and value.endswith("$"))


def _affinity_type(declared: str) -> str | None:
    """JSON type of a column from its declared SQLite type (affinity rules), None if unclear."""
    t = declared.upper()
    if "INT" in t:
        return "integer"
    if any(k in t for k in ("CHAR", "CLOB", "TEXT")):
        return "string"
    if any(k in t for k in ("REAL", "FLOA", "DOUB", "NUMERIC", "DECIMAL")):
        return "number"
    return None


def column_json_types(db: Database, setup: list[ToolCall]) -> dict[str, str]:
    """``alias.column -> JSON type`` for the base columns loaded by the set-up calls."""
    out: dict[str, str] = {}
    for call in setup:
        entries = [{"table": call.arguments["source"], "alias": call.arguments.get("alias")},
                   *call.arguments.get("joins", [])]
        for entry in entries:
            table = db.table(entry["table"])
            for col in table.columns if table else []:
                kind = _affinity_type(col.type)
                if kind:
                    out[f"{entry.get('alias') or table.name}.{col.name}"] = kind
    return out


def _param_type(column_type: str | None, values: list[Any]) -> str:
    kinds = {_json_type(v) for v in values}
    if column_type == "number" and kinds <= {"integer", "number"}:
        return "number"
    if column_type == "integer" and kinds == {"integer"}:
        return "integer"
    if column_type == "string" and kinds == {"string"}:
        return "string"
    if kinds <= {"integer", "number"}:
        return "number" if "number" in kinds else "integer"
    return "string" if kinds == {"string"} else next(iter(sorted(kinds)))


def make_endpoint(conv: Conversion, taken: set[str],
                  column_types: Mapping[str, str] | None = None) -> tuple[Tool, dict[str, Any], dict[str, Any]]:
    """(tool spec, endpoint definition with a parameterised call template, gold arguments).

    Parameter types follow the filtered column's declared type where the gold values fit it
    (a REAL column takes any number), else the gold values' own type."""
    column_types = column_types or {}
    calls = [c.model_dump(mode="json") for c in conv.calls]
    params: dict[str, dict[str, Any]] = {}
    gold: dict[str, Any] = {}
    phrases: list[str] = []

    def new_param(base: str, value: Any, schema: dict[str, Any], description: str) -> dict[str, str]:
        name, k = base, 2
        while name in params:
            name, k = f"{base}_{k}", k + 1
        params[name] = {**schema, "description": description}
        gold[name] = value
        return {PARAM: name}

    def parametrise(cond: dict[str, Any]) -> None:
        op, value = cond["operator"], cond.get("value")
        col = cond["key_name"]
        base = re.sub(r"[^0-9a-z]+", "_", col.rsplit(".", 1)[-1].lower())
        ctype = column_types.get(col)
        if op in ("between", "not_between") and isinstance(value, list) and all(_is_literal(v) for v in value):
            cond["value"] = [new_param(f"{base}_from", value[0], {"type": _param_type(ctype, [value[0]])}, f"Lower bound (inclusive) for {col}"),
                             new_param(f"{base}_to", value[1], {"type": _param_type(ctype, [value[1]])}, f"Upper bound (inclusive) for {col}")]
            phrases.append(f"{col} {_WORDS[op]} {{{base}_from}} and {{{base}_to}}")
        elif op in ("in", "not_in") and isinstance(value, list) and value and all(_is_literal(v) for v in value):
            items = {"type": _param_type(ctype, value)}
            cond["value"] = new_param(base + _SUFFIX[op], value, {"type": "array", "items": items},
                                      f"Values of {col} to {'exclude' if op == 'not_in' else 'keep'}")
            phrases.append(f"{col} {_WORDS[op]} {{{cond['value'][PARAM]}}}")
        elif op in _SUFFIX and op not in ("in", "not_in") and _is_literal(value) and not isinstance(value, list):
            kind = _param_type(ctype, [value]) if op not in PATTERN_LIKE else "string"
            cond["value"] = new_param(base + _SUFFIX[op], value, {"type": kind}, f"Value that {col} {_WORDS[op]}")
            phrases.append(f"{col} {_WORDS[op]} {{{cond['value'][PARAM]}}}")

    for call in calls:
        if call["name"] == "filter_data":
            parametrise(call["arguments"])
        elif call["name"] == "filter_data_any":
            before = len(phrases)
            for cond in call["arguments"]["conditions"]:
                parametrise(cond)
            if len(phrases) - before > 1:  # one OR clause reads as one phrase
                phrases[before:] = ["(" + " or ".join(phrases[before:]) + ")"]
    init = conv.setup[0].arguments
    entity = init["source"]
    joined = [j["table"] for j in init.get("joins", [])]
    last = conv.calls[-1]
    if last.name == "aggregate_data":
        verb = _VERBS[last.arguments["aggregation"]]
        what = f"the {last.arguments['aggregation']} of {last.arguments.get('key_name', 'rows')}"
    elif last.name == "calculate":
        verb, what = "compute", f"a {last.arguments['operator']} of two figures"
    else:
        verb = "list"
        what = "the columns " + ", ".join(last.arguments.get("key_names") or [last.arguments.get("key_name", "")])
    base = f"{verb}_{entity}" + (f"_by_{'_'.join(list(params)[:3])}" if params else "")
    base = re.sub(r"[^0-9A-Za-z_]+", "_", base)[:100]
    name, k = base, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    description = f"Returns {what} from {entity}" + (f" joined with {', '.join(joined)}" if joined else "")
    if phrases:
        description += " where " + " and ".join(phrases)
    description += ". The response has 'columns' and 'rows'."
    tool = Tool(name=name, description=description,
                parameters={"type": "object", "properties": params, "required": list(params)},
                rest=RestBinding(method="GET", path=f"/v1/{name}"), category="rest", tags=["rest", entity])
    endpoint = {"setup": [c.model_dump(mode="json") for c in conv.setup], "calls": calls, "parameters": params}
    return tool, endpoint, gold


def _substitute(value: Any, args: Mapping[str, Any]) -> Any:
    if isinstance(value, dict):
        if set(value) == {PARAM}:
            return args[value[PARAM]]
        return {k: _substitute(v, args) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, args) for v in value]
    return value


def rename_endpoint_params(endpoint: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """The endpoint with its parameters renamed (obfuscated splits)."""
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {PARAM}:
                return {PARAM: names[value[PARAM]]}
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value
    renamed = {"setup": endpoint["setup"], "calls": walk(endpoint["calls"]),
               "parameters": {names[k]: v for k, v in endpoint["parameters"].items()}}
    if endpoint.get("db_id") is not None:  # a merged split's endpoint keeps its database
        renamed["db_id"] = endpoint["db_id"]
    return renamed


def run_endpoint(db: Database, endpoint: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """Execute an endpoint's call template with ``args``; returns ``{"columns", "rows"}``."""
    missing = set(endpoint["parameters"]) - set(args)
    if missing:
        raise ValueError(f"missing parameters: {sorted(missing)}")
    rt = Runtime(db)
    final: Any = None
    rt.setup(ToolCall.model_validate(call) for call in endpoint["setup"])
    for call in endpoint["calls"]:
        # parameters go in after the template's references are resolved: their values stay literal
        final = rt.call(ToolCall.model_validate(call), fill=lambda a: _substitute(a, args))
    if isinstance(final, Relation):
        return {"columns": list(final.visible), "rows": [list(r) for r in final.rows(db)]}
    return {"columns": ["value"], "rows": [[final]]}


def create_app(split_dir: str) -> Any:
    """A FastAPI app serving every endpoint of a REST split (GET, typed query parameters).

    Each endpoint runs on ``database.sqlite``, or, in a merged split, on the database its
    ``endpoints.json`` entry names (``databases/<db_id>.sqlite``); every database is opened and
    checked before the app is made."""
    from pathlib import Path
    from typing import Annotated

    from fastapi import FastAPI, HTTPException, Query
    from pydantic import Field, create_model

    from benchsmith.schemas import Split, Tool, UserError, read_json

    root = Path(split_dir)
    manifest = read_manifest(root / "manifest.json")
    if manifest.style != "rest":
        raise UserError(f"{root} is not a REST split (style {manifest.style!r})",
                        fix="build one with benchsmith nl2api build --style rest")
    endpoints = read_endpoints(root / "endpoints.json")
    tools = {t.name: t for t in read_json(root / "tools.json", list[Tool], fix="rebuild the split")}
    without = sorted(n for n in endpoints if n not in tools or tools[n].rest is None)
    if without:
        raise UserError(f"{root / 'tools.json'} has no REST tool {without[0]!r} for its endpoint in endpoints.json",
                        fix="rebuild the split with benchsmith nl2api build --style rest")
    split = Split(root)
    opened: dict[Path, Database] = {}

    def database(name: str, endpoint: Mapping[str, Any]) -> Database:
        db_id = endpoint.get("db_id")
        if db_id is None and not split.has(Split.DATABASE) and split.has_databases():
            raise UserError(f"{root / 'endpoints.json'}: endpoint {name!r} names no db_id, and this split has "
                            f"several databases ({', '.join(split.db_ids())}) but no database.sqlite",
                            fix="rebuild the split with benchsmith nl2api build --style rest")
        path = split.database_for(db_id)
        if path not in opened:
            opened[path] = Database(path, check=True)
        return opened[path]

    if split.has(Split.DATABASE) or not split.has_databases():
        database("", {})  # the split's own database, opened and checked first (a missing one is a UserError)
    dbs = {name: database(name, endpoint) for name, endpoint in endpoints.items()}
    app = FastAPI(title=f"benchsmith REST split {manifest.name}", version=manifest.version)
    # integers SQLite can hold: a larger one is the caller's mistake (422), not a server error
    pytypes: dict[str, Any] = {"integer": Annotated[int, Field(ge=INT64[0], le=INT64[1])], "number": float,
                               "string": str, "boolean": bool}

    def answer(db: Database, ep: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return run_endpoint(db, ep, args)
        except (ToolError, ValueError, OverflowError) as exc:  # the caller's bad input
            raise HTTPException(status_code=400, detail=str(exc)) from None
        except QueryTimeout as exc:
            raise HTTPException(status_code=504, detail=f"the query took too long: {exc}") from None

    for name, endpoint in endpoints.items():
        fields: dict[str, Any] = {}
        for pname, spec in endpoint["parameters"].items():
            if spec["type"] == "array":
                item_type = pytypes[spec["items"]["type"]]
                fields[pname] = (list[item_type], ...)
            else:
                fields[pname] = (pytypes[spec["type"]], ...)
        model = create_model(f"Params_{name}", **fields) if fields else None

        def handler_factory(db: Database, ep: Mapping[str, Any], model: Any) -> Any:
            if model is None:
                def handler() -> dict[str, Any]:
                    return answer(db, ep, {})
                return handler

            def handler(params):  # type: ignore[no-untyped-def]
                return answer(db, ep, params.model_dump())
            # real objects, not strings: the model is local to this function
            handler.__annotations__ = {"params": Annotated[model, Query()], "return": dict}
            return handler

        app.add_api_route(tools[name].rest.path, handler_factory(dbs[name], endpoint, model), methods=["GET"],
                          name=name, summary=tools[name].description, operation_id=name)
    return app
