"""How to call an HTTP service described by an OpenAPI document: the ``service.json`` of a tool
catalog imported from one (``benchsmith tools import openapi``).

Each tool is one operation: its method, its path template and where each of the tool's arguments
goes in the request (a path, query, header or cookie parameter, a field of a JSON or form body,
or the whole body). Secrets never enter the file: each security scheme names the environment
variable its value is read from when a call is made.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, model_validator

from benchsmith.schemas._private.jsonl import read_json, write_json
from benchsmith.schemas._private.tool import StrictModel

_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
HttpMethod = Literal["get", "put", "post", "delete", "patch", "head", "options", "trace"]


class OpenApiArg(StrictModel):
    """Where one of a tool's arguments goes in the request."""

    arg: str = Field(description="the tool's argument")
    source: Literal["path", "query", "header", "cookie", "body_field", "body"]
    key: str = Field(default="", description="its name in the request (a body field's name); '' for the whole body")


class OpenApiOperation(StrictModel):
    """One operation of the document, called as the tool ``tool``."""

    tool: str
    method: HttpMethod
    path: str = Field(pattern=r"^/", description="the path template, e.g. /pets/{petId}")
    args: list[OpenApiArg] = Field(default_factory=list)
    body_type: Literal["application/json", "application/x-www-form-urlencoded"] | None = None
    security: list[str] = Field(default_factory=list, description="the security schemes sent with each call")


class OpenApiAuth(StrictModel):
    """A security scheme and the environment variable holding its secret (a key, a bearer token,
    or ``user:password`` for HTTP basic)."""

    scheme: str = Field(min_length=1, description="its name under components.securitySchemes")
    kind: Literal["api_key", "bearer", "basic"]
    location: Literal["header", "query", "cookie"] = "header"
    key: str = Field(default="Authorization", description="the header, query parameter or cookie sent")
    env: str = Field(pattern=_ENV_NAME, description="the environment variable read for each call")


class OpenApiService(StrictModel):
    """An HTTP service and its operations as tools."""

    name: str = Field(min_length=1, description="what messages call the service (and the tools' domain)")
    base_url: str = Field(description="what each operation's path is appended to, e.g. http://127.0.0.1:8000")
    document: str = Field(default="", description="where the OpenAPI document was read (a path or URL)")
    operations: list[OpenApiOperation] = Field(default_factory=list)
    auth: list[OpenApiAuth] = Field(default_factory=list)
    call_timeout: float = Field(default=30.0, gt=0, description="seconds per call")
    max_result_chars: int = Field(default=200_000, ge=1, description="longest response body taken, in characters")

    @model_validator(mode="after")
    def _consistent(self) -> OpenApiService:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url {self.base_url!r} is not an http(s) URL")
        tools = [op.tool for op in self.operations]
        twice = sorted({t for t in tools if tools.count(t) > 1})
        if twice:
            raise ValueError(f"tools named twice: {twice}")
        schemes = {a.scheme for a in self.auth}
        unknown = sorted({s for op in self.operations for s in op.security if s not in schemes})
        if unknown:
            raise ValueError(f"operations use security schemes with no auth entry: {unknown}")
        for op in self.operations:
            holes = set(re.findall(r"\{([^}]+)\}", op.path))
            filled = {a.key for a in op.args if a.source == "path"}
            if holes != filled:
                raise ValueError(
                    f"{op.tool}: path {op.path} has parameters {sorted(holes)}, args fill {sorted(filled)}"
                )
        return self


class ServiceCall(StrictModel):
    """One call of a service's tool, declared in an environment file (a reset step, a state probe)."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class OpenApiEnvironment(StrictModel):
    """An HTTP service as a tool environment (an ``environment.json`` beside ``service.json``): the
    service is reset by its declared calls at every opening, and its state read by probe calls."""

    kind: Literal["openapi"] = "openapi"
    service: str = Field(default="service.json", description="the OpenApiService file, relative to this one")
    reset: list[ServiceCall] = Field(
        default_factory=list, description="calls that put the service in its starting state, run at every opening"
    )
    probes: list[ServiceCall] = Field(default_factory=list, description="read-only calls that read the state")
    volatile: list[str] = Field(
        default_factory=list, description="keys whose values change from run to run, left out of comparisons"
    )


def read_openapi_environment(path: Path) -> OpenApiEnvironment:
    """The :class:`OpenApiEnvironment` in a JSON file; a bad file is one :class:`UserError` naming it."""
    env: OpenApiEnvironment = read_json(path, OpenApiEnvironment, fix='write {"kind": "openapi", "reset": [...]}')
    return env


def write_openapi_environment(path: Path, env: OpenApiEnvironment) -> None:
    """Write ``env`` to ``path`` (atomically); its kind always, the rest where it differs from the defaults."""
    write_json(path, {"kind": env.kind, **env.model_dump(mode="json", exclude_defaults=True)})


def read_openapi_service(path: Path) -> OpenApiService:
    """The :class:`OpenApiService` in a JSON file; a bad file is one :class:`UserError` naming it."""
    service: OpenApiService = read_json(
        path, OpenApiService, fix="import the document again with benchsmith tools import openapi"
    )
    return service


def write_openapi_service(path: Path, service: OpenApiService) -> None:
    """Write ``service`` to ``path`` (atomically); only what differs from the defaults."""
    write_json(path, service.model_dump(mode="json", exclude_defaults=True))
