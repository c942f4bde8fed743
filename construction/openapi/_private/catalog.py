"""A tool catalog from an OpenAPI document: what ``benchsmith tools import openapi`` writes."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from benchsmith.schemas import (
    OpenApiEnvironment,
    Tool,
    UserError,
    write_json,
    write_openapi_environment,
    write_openapi_service,
)

from .convert import tools_from_openapi

#: the files of an imported catalog: the tools, and how to call their service
TOOLS_FILE = "tools.json"
SERVICE_FILE = "service.json"
ENVIRONMENT_FILE = "environment.json"
_MAX_DOCUMENT_BYTES = 20_000_000


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine (``localhost``, 127.0.0.0/8, ::1)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_openapi_document(source: str) -> dict[str, Any]:
    """The OpenAPI document at ``source`` (a YAML or JSON file, or an http(s) URL on loopback),
    checked against the OpenAPI 3.0/3.1 schema; a bad one is one :class:`UserError` naming it."""
    import yaml

    if source.startswith(("http://", "https://")):
        if not is_loopback(source):
            raise UserError(
                f"{source}: OpenAPI documents are read from files or from this machine only",
                fix="download the document and give its path, or serve it on 127.0.0.1",
            )
        import httpx

        try:
            response = httpx.get(source, timeout=30, follow_redirects=False, trust_env=False)
        except httpx.HTTPError as exc:
            raise UserError(
                f"{source}: cannot be read ({type(exc).__name__}: {exc})", fix="start the service"
            ) from None
        if response.status_code != 200:
            raise UserError(f"{source}: HTTP {response.status_code}", fix="give the URL of the OpenAPI document")
        text = response.text
    else:
        path = Path(source)
        if not path.is_file():
            raise UserError(f"{source}: no such file", fix="give the path of an OpenAPI document (YAML or JSON)")
        if path.stat().st_size > _MAX_DOCUMENT_BYTES:
            raise UserError(f"{source}: over {_MAX_DOCUMENT_BYTES // 1_000_000} MB", fix="give an OpenAPI document")
        text = path.read_text("utf-8", errors="replace")
    try:
        doc = yaml.safe_load(text)  # JSON is YAML
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise UserError(f"{source}: not YAML or JSON{at}", fix="give an OpenAPI document") from None
    check_openapi_document(doc, source)
    return doc


def check_openapi_document(doc: Any, source: str) -> None:
    """Check ``doc`` against the OpenAPI 3.0/3.1 schema (openapi-spec-validator); the first problem
    is one :class:`UserError` naming where in the document it is."""
    if not isinstance(doc, Mapping):
        raise UserError(f"{source}: not an OpenAPI document (no mapping at the top)", fix="give an OpenAPI document")
    version = str(doc.get("openapi", ""))
    if not version.startswith(("3.0", "3.1")):
        found = f"openapi {version}" if version else ("swagger " + str(doc["swagger"]) if "swagger" in doc else "none")
        raise UserError(
            f"{source}: OpenAPI 3.0 or 3.1 documents only (its version: {found})",
            fix="convert it to OpenAPI 3 (e.g. with swagger2openapi)",
        )
    from openapi_spec_validator import validate
    from referencing.exceptions import Unresolvable

    try:
        validate(dict(doc))
    except Unresolvable as exc:
        raise UserError(
            f"{source}: unresolvable $ref ({exc.__class__.__name__}: {exc})"[:400], fix="fix the $ref"
        ) from None
    except Exception as exc:  # the validator's OpenAPIValidationError (a jsonschema ValidationError)
        where = "/".join(str(p) for p in getattr(exc, "absolute_path", []))
        message = getattr(exc, "message", str(exc))
        raise UserError(
            f"{source}: not a valid OpenAPI {version} document{' at ' + where if where else ''}: {message}"[:600],
            fix="fix the document (openapi-spec-validator names the same place)",
        ) from None


def import_openapi_tools(
    source: str,
    out: Path,
    *,
    base_url: str | None = None,
    name: str | None = None,
    auth_env: Mapping[str, str] | None = None,
    call_timeout: float | None = None,
) -> list[Tool]:
    """Read the OpenAPI document at ``source`` and write ``out/tools.json`` (one benchsmith tool per
    operation), ``out/service.json`` (how each tool is called; environment variable names for
    the secrets, never their values) and, unless there is one, ``out/environment.json`` (the
    service as the catalog's ``openapi`` tool environment, without reset steps or probes: add
    them there); the tools. ``base_url`` defaults to the document's first
    server (resolved against ``source`` when that is a URL)."""
    doc = read_openapi_document(source)
    if base_url is None:
        servers = [s.get("url") for s in doc.get("servers") or [] if isinstance(s, Mapping)]
        first = servers[0] if servers else None
        if first and source.startswith(("http://", "https://")):
            first = urljoin(source, first)
        if not first or not first.startswith(("http://", "https://")) or "{" in first:
            raise UserError(f"{source} names no server URL to call", fix="give --base-url http://127.0.0.1:PORT")
        base_url = first
    label = name or str(doc.get("info", {}).get("title") or urlsplit(base_url).hostname or "service")
    tools, service = tools_from_openapi(doc, name=label, base_url=base_url, document=source, auth_env=auth_env)
    if call_timeout is not None:
        service = service.model_copy(update={"call_timeout": call_timeout})
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / TOOLS_FILE, [t.model_dump(mode="json", exclude_none=True) for t in tools])
    write_openapi_service(out / SERVICE_FILE, service)
    if not (out / ENVIRONMENT_FILE).exists():  # the user's reset steps and probes survive a new import
        write_openapi_environment(out / ENVIRONMENT_FILE, OpenApiEnvironment(service=SERVICE_FILE))
    return tools
