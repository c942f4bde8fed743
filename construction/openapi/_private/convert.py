"""An OpenAPI 3.0/3.1 document as benchsmith tools, and a tool call as an HTTP request (pure
functions, no I/O).

One tool per operation, named by its ``operationId`` (else ``<method>_<path>``), described by its
summary and description. Its arguments are the operation's path, query, header and cookie
parameters (the path item's too) and its request body: a JSON or form body whose schema is an
object gives its fields as arguments, any other body is one argument ``body``. An argument
whose name two places share is suffixed with where it goes (``id_path``, ``id_query``). Every
``$ref`` is inlined. The success response's JSON schema becomes the tool's ``returns``; the
method gives the hints (GET and HEAD read only; DELETE destructive; PUT and DELETE idempotent).
Security schemes become :class:`~benchsmith.schemas.OpenApiAuth` entries (API keys, bearer
tokens, HTTP basic; OAuth2 and OpenID Connect send a bearer token), never tool arguments.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import quote

from pydantic import ValidationError

from benchsmith.schemas import (
    TOOL_NAME_PATTERN,
    OpenApiArg,
    OpenApiAuth,
    OpenApiOperation,
    OpenApiService,
    RestBinding,
    Tool,
    ToolError,
    ToolHints,
    UserError,
    first_problem,
    inline_refs,
    typed,
)

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
_BODY_TYPES = ("application/json", "application/x-www-form-urlencoded")
_REST_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


class HttpRequest(NamedTuple):
    """A request to send: the method, the path (parameters filled in, relative to the base URL)
    and what goes with it."""

    method: str
    path: str
    params: dict[str, Any]
    headers: dict[str, str]
    cookies: dict[str, str]
    json: Any = None
    data: dict[str, Any] | None = None


def env_name(scheme: str) -> str:
    """The environment variable a security scheme's secret is read from unless the user names one:
    ``BENCHSMITH_OPENAPI_<SCHEME>`` (``apiKey`` -> ``BENCHSMITH_OPENAPI_APIKEY``)."""
    return "BENCHSMITH_OPENAPI_" + re.sub(r"[^A-Za-z0-9]+", "_", scheme).strip("_").upper()


def tools_from_openapi(
    doc: Mapping[str, Any],
    *,
    name: str,
    base_url: str,
    document: str = "",
    auth_env: Mapping[str, str] | None = None,
) -> tuple[list[Tool], OpenApiService]:
    """The tools of a (validated) OpenAPI document and the service that calls them. ``auth_env``
    names the environment variable of a security scheme (default: :func:`env_name`)."""
    where = document or "the OpenAPI document"
    auth = _auth_of(doc, where, auth_env or {})
    tools: list[Tool] = []
    operations: list[OpenApiOperation] = []
    for path, item in (doc.get("paths") or {}).items():
        item = inline_refs(item, doc, where=where)
        for method in METHODS:
            op = item.get(method)
            if isinstance(op, dict):
                tool, operation = _operation(doc, where, name, path, method, item, op, auth)
                tools.append(tool)
                operations.append(operation)
    if not tools:
        raise UserError(f"{where} has no operations", fix="give a document whose paths hold operations")
    used = {s for op in operations for s in op.security}
    try:
        service = OpenApiService(
            name=name,
            base_url=base_url,
            document=document,
            operations=operations,
            auth=[a for a in auth.values() if a.scheme in used],
        )
    except ValidationError as exc:
        raise UserError(
            f"{where}: {first_problem(exc)}",
            fix="give each operation its own operationId, and --base-url an http(s) URL",
        ) from None
    return tools, service


def _tool_name(method: str, path: str, op: Mapping[str, Any], where: str) -> str:
    name = op.get("operationId")
    if isinstance(name, str) and re.match(TOOL_NAME_PATTERN, name):
        return name
    base = name if isinstance(name, str) and name else f"{method}_{path}"
    clean = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_.\-]+", "_", base)).strip("_")[:128]
    if not clean:
        raise UserError(f"{where}: {method.upper()} {path} makes no tool name", fix="give it an operationId")
    return clean if re.match(TOOL_NAME_PATTERN, clean) else f"_{clean}"[:128]


def _operation(
    doc: Mapping[str, Any],
    where: str,
    service: str,
    path: str,
    method: str,
    item: Mapping[str, Any],
    op: Mapping[str, Any],
    auth: Mapping[str, OpenApiAuth],
) -> tuple[Tool, OpenApiOperation]:
    tool_name = _tool_name(method, path, op, where)
    here = f"{where}: {method.upper()} {path}"
    # the operation's parameters override the path item's of the same name and place
    merged: dict[tuple[str, str], Mapping[str, Any]] = {}
    for param in [*(item.get("parameters") or []), *(op.get("parameters") or [])]:
        merged[(param["name"], param["in"])] = param
    params = list(merged.values())
    body_type, body_schema, body_required = _body_of(op, here)
    fields = body_schema.get("properties") if body_type and body_schema.get("type", "object") == "object" else None
    # every name an argument may take, to find the ones two places share
    names = [p["name"] for p in params] + (list(fields) if fields else (["body"] if body_type else []))
    shared = {n for n in names if names.count(n) > 1}

    properties: dict[str, Any] = {}
    required: list[str] = []
    args: list[OpenApiArg] = []
    for param in params:
        source = param["in"]
        arg = f"{param['name']}_{source}" if param["name"] in shared else param["name"]
        schema = _schema_of(param)
        if param.get("description") and "description" not in schema:
            schema = {**schema, "description": param["description"]}
        properties[arg] = schema
        if param.get("required") or source == "path":
            required.append(arg)
        args.append(OpenApiArg(arg=arg, source=source, key=param["name"]))
    if fields is not None:
        body_needs = set(body_schema.get("required") or []) if body_required else set()
        for field, schema in fields.items():
            arg = f"{field}_body" if field in shared else field
            properties[arg] = typed(_plain(schema))
            if field in body_needs:
                required.append(arg)
            args.append(OpenApiArg(arg=arg, source="body_field", key=field))
    elif body_type:
        arg = "body_body" if "body" in shared else "body"
        properties[arg] = typed(_plain(body_schema))
        if body_required:
            required.append(arg)
        args.append(OpenApiArg(arg=arg, source="body"))

    summary = (op.get("summary") or "").strip()
    detail = (op.get("description") or "").strip()
    parts = [summary] + ([detail] if detail and detail != summary else [])
    description = "\n\n".join(t for t in parts if t) or f"{method.upper()} {path}"
    hints = ToolHints(
        read_only=True if method in ("get", "head") else None,
        destructive=True if method == "delete" else None,
        idempotent=True if method in ("get", "head", "put", "delete") else None,
    )
    try:
        tool = Tool(
            name=tool_name,
            description=description,
            parameters={"type": "object", "properties": properties, "required": required},
            returns=_returns_of(op),
            rest=RestBinding(method=method.upper(), path=path) if method.upper() in _REST_METHODS else None,
            category="openapi",
            domain=service,
            hints=hints if hints.model_dump(exclude_none=True) else None,
        )
    except ValidationError as exc:
        raise UserError(
            f"{here}: {first_problem(exc)}",
            fix="give the operation's parameters schemas",
        ) from None
    security = _security_of(doc, op, auth, here)
    operation = OpenApiOperation(
        tool=tool_name, method=method, path=path, args=args, body_type=body_type, security=security
    )
    return tool, operation


def _schema_of(param: Mapping[str, Any]) -> dict[str, Any]:
    schema = param.get("schema")
    if schema is None:  # a parameter described by content: {media type: {schema}}
        schema = next(iter((param.get("content") or {}).values()), {}).get("schema", {})
    return dict(typed(_plain(schema)))


def _plain(schema: Any) -> Any:
    """A JSON Schema from an OpenAPI 3.0 one: ``nullable: true`` as a ``null`` type."""
    if isinstance(schema, list):
        return [_plain(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _plain(v) for k, v in schema.items() if k != "nullable"}
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def _body_of(op: Mapping[str, Any], here: str) -> tuple[str | None, dict[str, Any], bool]:
    body = op.get("requestBody")
    if not isinstance(body, dict):
        return None, {}, False
    content = body.get("content") or {}
    for media in content:
        kind = media.split(";")[0].strip().lower()
        json_like = kind == "application/json" or kind.endswith("+json")
        if json_like or kind == "application/x-www-form-urlencoded":
            schema = (content[media] or {}).get("schema") or {}
            return ("application/json" if json_like else kind), schema, bool(body.get("required"))
    raise UserError(
        f"{here}: its request body is {', '.join(content) or 'of no media type'}",
        fix="tools send JSON or form bodies: describe an application/json body, or leave the operation out",
    )


def _returns_of(op: Mapping[str, Any]) -> dict[str, Any] | None:
    responses = op.get("responses") or {}
    for code in ("200", "201", "2XX", "default"):
        content = (responses.get(code) or {}).get("content") or {}
        for media, spec in content.items():
            if "json" in media and isinstance(spec, dict) and spec.get("schema"):
                return dict(_plain(spec["schema"]))
    return None


def _auth_of(doc: Mapping[str, Any], where: str, auth_env: Mapping[str, str]) -> dict[str, OpenApiAuth]:
    schemes = inline_refs((doc.get("components") or {}).get("securitySchemes") or {}, doc, where=where)
    unknown = sorted(set(auth_env) - set(schemes))
    if unknown:
        raise UserError(
            f"{where} has no security scheme {unknown[0]!r}",
            fix=f"name one of its schemes: {', '.join(sorted(schemes)) or '(it declares none)'}",
        )
    out: dict[str, OpenApiAuth] = {}
    for scheme, spec in schemes.items():
        kind = spec.get("type")
        env = auth_env.get(scheme) or env_name(scheme)
        if kind == "apiKey":
            out[scheme] = OpenApiAuth(scheme=scheme, kind="api_key", location=spec["in"], key=spec["name"], env=env)
        elif kind == "http" and str(spec.get("scheme", "")).lower() in ("bearer", "basic"):
            out[scheme] = OpenApiAuth(scheme=scheme, kind=str(spec["scheme"]).lower(), env=env)
        elif kind in ("oauth2", "openIdConnect"):
            out[scheme] = OpenApiAuth(scheme=scheme, kind="bearer", env=env)
    return out


def _security_of(
    doc: Mapping[str, Any], op: Mapping[str, Any], auth: Mapping[str, OpenApiAuth], here: str
) -> list[str]:
    """The schemes of the first security requirement benchsmith can meet (an empty one: none)."""
    requirements = op.get("security", doc.get("security")) or []
    if not requirements:
        return []
    for requirement in requirements:
        if all(s in auth for s in requirement):
            return sorted(requirement)
    wanted = " or ".join("+".join(r) for r in requirements)
    raise UserError(
        f"{here} needs security {wanted}, which benchsmith cannot send",
        fix="tools send API keys, bearer tokens and HTTP basic: give the operation one of those",
    )


# -- calls ------------------------------------------------------------------------------------------
def request_of(operation: OpenApiOperation, arguments: Mapping[str, Any]) -> HttpRequest:
    """The request of one tool call, each argument where the operation puts it (the secrets of
    its security schemes are added by :func:`add_auth`). An unknown or missing path argument is a
    :class:`ToolError` (``tool_input_error``): the model's mistake, answered, not sent."""
    known = {a.arg: a for a in operation.args}
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise ToolError(f"{operation.tool}: no argument {unknown[0]!r}", code="tool_input_error")
    path = operation.path
    params: dict[str, Any] = {}
    headers: dict[str, str] = {}
    cookies: dict[str, str] = {}
    fields: dict[str, Any] = {}
    body: Any = None
    for arg in operation.args:
        if arg.arg not in arguments:
            if arg.source == "path":
                raise ToolError(f"{operation.tool}: path argument {arg.arg!r} is missing", code="tool_input_error")
            continue
        value = arguments[arg.arg]
        if arg.source == "path":
            path = path.replace("{" + arg.key + "}", quote(_text(value), safe=""))
        elif arg.source == "query":
            params[arg.key] = [_text(v) for v in value] if isinstance(value, list) else _text(value)
        elif arg.source == "header":
            headers[arg.key] = _text(value)
        elif arg.source == "cookie":
            cookies[arg.key] = _text(value)
        elif arg.source == "body_field":
            fields[arg.key] = value
        else:
            body = value
    if fields:
        body = fields
    json_body = body if operation.body_type == "application/json" else None
    form = body if operation.body_type == "application/x-www-form-urlencoded" and isinstance(body, dict) else None
    return HttpRequest(operation.method.upper(), path, params, headers, cookies, json_body, form)


def add_auth(request: HttpRequest, auth: OpenApiAuth, secret: str) -> None:
    """Put one scheme's secret where it goes (in place)."""
    if auth.kind == "bearer":
        request.headers["Authorization"] = f"Bearer {secret}"
    elif auth.kind == "basic":
        request.headers["Authorization"] = "Basic " + base64.b64encode(secret.encode("utf-8")).decode("ascii")
    elif auth.location == "header":
        request.headers[auth.key] = secret
    elif auth.location == "query":
        request.params[auth.key] = secret
    else:
        request.cookies[auth.key] = secret


def _text(value: Any) -> str:
    """A parameter value as sent: JSON's spelling for booleans and null, text as is."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def observation_of_response(status: int, content_type: str, text: str, tool: str, max_chars: int) -> Any:
    """What a call gave: the JSON of the response body (else its text). A 4xx is a
    :class:`ToolError` ``tool_error`` (the call was refused: the model may learn from it), a 5xx a
    ``server_error``, each carrying the body's first 500 characters; a body over ``max_chars``
    a ``result_too_large`` error."""
    if len(text) > max_chars:
        raise ToolError(
            f"{tool}: the response is {len(text)} characters, over the cap of {max_chars}", code="result_too_large"
        )
    value: Any = text
    if "json" in content_type.lower() or text[:1] in ("{", "["):
        try:
            value = json.loads(text)
        except ValueError:
            value = text
    if status >= 400:
        detail = value.get("detail", value) if isinstance(value, dict) else value
        detail = detail if isinstance(detail, str) else json.dumps(detail, ensure_ascii=False)
        code = "tool_error" if status < 500 else "server_error"
        raise ToolError(f"{tool}: HTTP {status}: {detail[:500]}", code=code)
    return value
