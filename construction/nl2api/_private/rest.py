"""REST style: one GET endpoint per verified question, and the FastAPI app that serves them.

Parameter values are literal: they are put into the call template after the template's own
``$label$`` references are resolved, so a value such as ``"$data_1$"`` is just text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Mapping

from benchsmith.schemas import RestBinding, Tool, ToolCall, UserError

from .converter import Conversion
from .database import Database, QueryTimeout
from .describe import OPERATOR_WORDS, PARAM, describe_endpoint
from .jsonvalues import json_value
from .relation import Relation, ToolError
from .runtime import Runtime
from .splitfiles import read_endpoints, read_manifest
from .tools import INT64, MAX_LIST_ITEMS, MAX_TEXT_CHARS, check_list, check_text

_SUFFIX = {
    "equal_to": "",
    "not_equal_to": "_not",
    "greater_than": "_above",
    "greater_than_or_equal_to": "_min",
    "less_than": "_below",
    "less_than_or_equal_to": "_max",
    "contains": "_contains",
    "not_contains": "_excludes",
    "starts_with": "_prefix",
    "not_starts_with": "_not_prefix",
    "ends_with": "_suffix",
    "not_ends_with": "_not_suffix",
    "like": "_pattern",
    "not_like": "_not_pattern",
    "in": "_in",
    "not_in": "_not_in",
}
BASE_PATH = "/v1"  # every endpoint is GET /v1/<name>
PATTERN_LIKE = (
    "contains",
    "not_contains",
    "starts_with",
    "not_starts_with",
    "ends_with",
    "not_ends_with",
    "like",
    "not_like",
)
_VERBS = {
    "count": "count",
    "count_distinct": "count_distinct",
    "sum": "total",
    "avg": "average",
    "min": "min",
    "max": "max",
}


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
        entries = [
            {"table": call.arguments["source"], "alias": call.arguments.get("alias")},
            *call.arguments.get("joins", []),
        ]
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


def make_endpoint(
    conv: Conversion, taken: set[str], column_types: Mapping[str, str] | None = None
) -> tuple[Tool, dict[str, Any], dict[str, Any]]:
    """(tool spec, endpoint definition with a parameterised call template, gold arguments).

    Parameter types follow the filtered column's declared type where the gold values fit it
    (a REAL column takes any number), else the gold values' own type."""
    column_types = column_types or {}
    calls = [c.model_dump(mode="json") for c in conv.calls]
    params: dict[str, dict[str, Any]] = {}
    gold: dict[str, Any] = {}

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
            cond["value"] = [
                new_param(
                    f"{base}_from",
                    value[0],
                    {"type": _param_type(ctype, [value[0]])},
                    f"Lower bound (inclusive) for {col}",
                ),
                new_param(
                    f"{base}_to",
                    value[1],
                    {"type": _param_type(ctype, [value[1]])},
                    f"Upper bound (inclusive) for {col}",
                ),
            ]
        elif op in ("in", "not_in") and isinstance(value, list) and value and all(_is_literal(v) for v in value):
            items = {"type": _param_type(ctype, value)}
            cond["value"] = new_param(
                base + _SUFFIX[op],
                value,
                {"type": "array", "items": items},
                f"Values of {col} to {'exclude' if op == 'not_in' else 'keep'}",
            )
        elif op in _SUFFIX and op not in ("in", "not_in") and _is_literal(value) and not isinstance(value, list):
            kind = _param_type(ctype, [value]) if op not in PATTERN_LIKE else "string"
            cond["value"] = new_param(
                base + _SUFFIX[op], value, {"type": kind}, f"Value that {col} {OPERATOR_WORDS[op]}"
            )

    for call in calls:
        if call["name"] == "filter_data":
            parametrise(call["arguments"])
        elif call["name"] == "filter_data_any":
            for cond in call["arguments"]["conditions"]:
                parametrise(cond)
    init = conv.setup[0].arguments
    entity = init["source"]
    last = conv.calls[-1]
    if last.name == "aggregate_data":
        verb = _VERBS[last.arguments["aggregation"]]
    elif last.name == "calculate":
        verb = "compute"
    else:
        verb = "list"
    base = f"{verb}_{entity}" + (f"_by_{'_'.join(list(params)[:3])}" if params else "")
    base = re.sub(r"[^0-9A-Za-z_]+", "_", base)[:100]
    name, k = base, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    setup = [c.model_dump(mode="json") for c in conv.setup]
    # every step in words (filters, sorts, limits, groups, aggregates, ...): what makes the answer right
    description = describe_endpoint(setup, calls) + " The response has 'columns' and 'rows'."
    tool = Tool(
        name=name,
        description=description,
        parameters={"type": "object", "properties": params, "required": list(params)},
        rest=RestBinding(method="GET", path=f"{BASE_PATH}/{name}"),
        category="rest",
        tags=["rest", entity],
    )
    endpoint = {"setup": setup, "calls": calls, "parameters": params}
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

    renamed = {
        "setup": endpoint["setup"],
        "calls": walk(endpoint["calls"]),
        "parameters": {names[k]: v for k, v in endpoint["parameters"].items()},
    }
    if endpoint.get("db_id") is not None:  # a merged split's endpoint keeps its database
        renamed["db_id"] = endpoint["db_id"]
    return renamed


def check_endpoint_args(args: Mapping[str, Any]) -> None:
    """The argument caps (:data:`MAX_TEXT_CHARS`, :data:`MAX_LIST_ITEMS`, no NUL in text) on a REST
    call's arguments, before any SQL: a ``ToolError`` naming the parameter."""
    for name, value in args.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                check_text(item, f"parameter {name}")
        if isinstance(value, list):
            check_list(value, f"parameter {name}")


def run_endpoint(db: Database, endpoint: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """Execute an endpoint's call template with ``args``; returns ``{"columns", "rows"}``.

    Arguments over the caps are a ``ToolError`` before any SQL runs; a query SQLite refuses is a
    ``ToolError`` too (code ``sql_error``)."""
    missing = set(endpoint["parameters"]) - set(args)
    if missing:
        raise ValueError(f"missing parameters: {sorted(missing)}")
    check_endpoint_args(args)
    rt = Runtime(db)
    final: Any = None
    rt.setup(ToolCall.model_validate(call) for call in endpoint["setup"])
    for call in endpoint["calls"]:
        # parameters go in after the template's references are resolved: their values stay literal
        final = rt.call(ToolCall.model_validate(call), fill=lambda a: _substitute(a, args))
    if isinstance(final, Relation):
        return {"columns": list(final.visible), "rows": [list(r) for r in final.rows(db)]}
    return {"columns": ["value"], "rows": [[final]]}


# ---- the server ---------------------------------------------------------------------------------
# The longest request head (request line and headers) the HTTP layer reads. It holds the longest
# arguments the caps allow (a MAX_TEXT_CHARS text of 4-byte characters is 120 KB percent-encoded);
# a longer head is refused by uvicorn itself (a plain-text 400, the connection closed).
MAX_REQUEST_HEAD_BYTES = 1 << 20
_CLIP = 200  # characters of a refused value a 422 quotes back


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("text may not contain a NUL character")
    return value


def _clip(value: Any) -> Any:
    """A refused input as a 422 quotes it: long texts and lists cut short."""
    if isinstance(value, str) and len(value) > _CLIP:
        return value[:_CLIP] + f"... ({len(value):,} characters)"
    if isinstance(value, list) and len(value) > 20:
        return [_clip(v) for v in value[:20]] + [f"... ({len(value):,} values)"]
    if isinstance(value, list):
        return [_clip(v) for v in value]
    return value


def _bad_query_string(raw: bytes) -> str | None:
    """Why a raw query string cannot be read as UTF-8 after percent-decoding, or None. (Starlette
    would replace such bytes with U+FFFD, so a caller's mistake would run as another value.)"""
    from urllib.parse import unquote_to_bytes

    for part in raw.split(b"&"):
        for piece in part.split(b"=", 1):
            try:
                unquote_to_bytes(piece.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError as exc:
                name = part.split(b"=", 1)[0][:100].decode("latin-1")
                return (
                    f"query parameter {name!r} is not valid UTF-8 after percent-decoding "
                    f"({exc.reason} at byte {exc.start}); percent-encode the UTF-8 bytes of the text"
                )
    return None


class _Utf8Query:
    """ASGI middleware: a query string that is not UTF-8 is a 400 with a JSON detail."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            why = _bad_query_string(scope.get("query_string", b""))
            if why:
                from starlette.responses import JSONResponse

                await JSONResponse({"detail": why}, status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(split_dir: str) -> Any:
    """A FastAPI app serving every endpoint of a REST split (GET, typed query parameters).

    Each endpoint runs on ``database.sqlite``, or, in a merged split, on the database its
    ``endpoints.json`` entry names (``databases/<db_id>.sqlite``); every database is opened and
    checked before the app is made. ``GET /`` lists the endpoints; ``/docs`` (Swagger UI) and
    ``/redoc`` load their scripts and styles from this server, not a CDN.

    No request gets a 500: arguments over the caps are a 422 before any SQL, a query SQLite refuses
    a 400, a query over the time limit a 504, a failing database file a 503, each with a JSON
    ``detail``; the connection stays open for the next request. Row values JSON cannot carry are
    tagged (:func:`json_value`)."""
    import sqlite3
    from typing import Annotated

    from fastapi import HTTPException, Query, Request
    from fastapi.encoders import jsonable_encoder
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from fastapi_offline import FastAPIOffline
    from pydantic import AfterValidator, Field, create_model

    from benchsmith.schemas import Split, read_json

    root = Path(split_dir)
    manifest = read_manifest(root / "manifest.json")
    if manifest.style != "rest":
        raise UserError(
            f"{root} is not a REST split (style {manifest.style!r})",
            fix="build one with benchsmith nl2api build --style rest",
        )
    endpoints = read_endpoints(root / "endpoints.json")
    tools = {t.name: t for t in read_json(root / "tools.json", list[Tool], fix="rebuild the split")}
    without = sorted(n for n in endpoints if n not in tools or tools[n].rest is None)
    if without:
        raise UserError(
            f"{root / 'tools.json'} has no REST tool {without[0]!r} for its endpoint in endpoints.json",
            fix="rebuild the split with benchsmith nl2api build --style rest",
        )
    split = Split(root)
    opened: dict[Path, Database] = {}

    def database(name: str, endpoint: Mapping[str, Any]) -> Database:
        db_id = endpoint.get("db_id")
        if db_id is None and not split.has(Split.DATABASE) and split.has_databases():
            raise UserError(
                f"{root / 'endpoints.json'}: endpoint {name!r} names no db_id, and this split has "
                f"several databases ({', '.join(split.db_ids())}) but no database.sqlite",
                fix="rebuild the split with benchsmith nl2api build --style rest",
            )
        path = split.database_for(db_id)
        if path not in opened:
            opened[path] = Database(path, check=True)
        return opened[path]

    if split.has(Split.DATABASE) or not split.has_databases():
        database("", {})  # the split's own database, opened and checked first (a missing one is a UserError)
    dbs = {name: database(name, endpoint) for name, endpoint in endpoints.items()}
    # the docs pages' scripts and styles come from fastapi-offline's copies, served by this app
    app = FastAPIOffline(
        title=f"benchsmith REST split {manifest.name}",
        version=manifest.version,
        swagger_ui_parameters={"validatorUrl": None},
    )  # no badge fetched from the validator
    app.add_middleware(_Utf8Query)

    @app.exception_handler(RequestValidationError)
    async def refused(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = []
        for err in exc.errors():
            err = {**err, "input": _clip(err.get("input"))} if "input" in err else dict(err)
            if isinstance(err.get("ctx"), dict) and "error" in err["ctx"]:  # an exception: its message
                err["ctx"] = {**err["ctx"], "error": str(err["ctx"]["error"])}
            errors.append(err)
        return JSONResponse({"detail": jsonable_encoder(errors)}, status_code=422)

    text = Annotated[str, Field(max_length=MAX_TEXT_CHARS), AfterValidator(_no_nul)]
    # integers SQLite can hold and finite numbers: anything else is the caller's mistake (422)
    pytypes: dict[str, Any] = {
        "integer": Annotated[int, Field(ge=INT64[0], le=INT64[1])],
        "number": Annotated[float, Field(allow_inf_nan=False)],
        "string": text,
        "boolean": bool,
    }

    def answer(db: Database, ep: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
        try:
            # values JSON has no word for are tagged: UTF-8 bytes as text, other bytes as
            # {"$bytes": base64}, inf and NaN as {"$float": ...} (the encoders would fail: a 500)
            return json_value(run_endpoint(db, ep, args))
        except (ToolError, ValueError, OverflowError) as exc:  # the caller's bad input (and queries SQLite refuses)
            raise HTTPException(status_code=400, detail=str(exc)) from None
        except QueryTimeout as exc:
            raise HTTPException(status_code=504, detail=f"the query took too long: {exc}") from None
        except sqlite3.Error as exc:  # the database file itself failing: not the caller's doing
            raise HTTPException(status_code=503, detail=f"the database failed: {exc}") from None

    paths: list[str] = []
    for name, endpoint in endpoints.items():
        fields: dict[str, Any] = {}
        for pname, spec in endpoint["parameters"].items():
            if spec["type"] == "array":
                item_type = pytypes[spec["items"]["type"]]
                fields[pname] = (Annotated[list[item_type], Field(max_length=MAX_LIST_ITEMS)], ...)
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

        path = tools[name].rest.path
        paths.append(path)
        app.add_api_route(
            path,
            handler_factory(dbs[name], endpoint, model),
            methods=["GET"],
            name=name,
            summary=tools[name].description,
            operation_id=name,
        )

    index = {
        "title": app.title,
        "base": BASE_PATH + "/",
        "endpoints": paths,
        "docs": app.docs_url or "/docs",
        "redoc": "/redoc",
        "openapi": app.openapi_url,
    }

    @app.get("/", include_in_schema=False)
    def home() -> dict[str, Any]:
        return index

    app.state.endpoint_paths = paths
    return app


def _example(root: Path, paths: list[str]) -> str:
    """One endpoint path with its query: the first sample's gold call, else the first path."""
    from urllib.parse import urlencode

    from benchsmith.schemas import Sample, scan_jsonl

    try:
        for _, sample in scan_jsonl(root / "samples.jsonl", Sample):
            call = sample.gold[0].call if isinstance(sample, Sample) and sample.gold else None
            path = f"{BASE_PATH}/{call.name}" if call else None
            if path in paths:
                return path + ("?" + urlencode(call.arguments, doseq=True) if call.arguments else "")
            break
    except UserError:
        pass
    return paths[0] if paths else BASE_PATH + "/"


def serve_split(
    split_dir: str | Path, *, host: str = "127.0.0.1", port: int = 8765, echo: Callable[[str], Any] = print
) -> None:
    """Serve a REST split with uvicorn until stopped; first ``echo`` where: the endpoints' base URL
    and number, an example request, the index and the docs."""
    import uvicorn

    root = Path(split_dir)
    app = create_app(str(root))
    paths: list[str] = app.state.endpoint_paths
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    echo(f"Serving {len(paths)} endpoint{'s' if len(paths) != 1 else ''} of {root} under {url}{BASE_PATH}/")
    echo(f"  example: curl '{url}{_example(root, paths)}'")
    echo(f"  index: {url}/  docs: {url}/docs (Swagger UI)  {url}/redoc  {url}/openapi.json")
    uvicorn.run(app, host=host, port=port, log_level="info", h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES)
