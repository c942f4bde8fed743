"""Calls to an HTTP service through its OpenAPI operations, for synchronous code (graphs, the
runner, the CLI). Secrets are read from the environment when the session opens and never appear
in a message: any error text that would hold one has it masked."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from benchsmith.schemas import EnvironmentFault, OpenApiService, ToolError, UserError

from .convert import add_auth, observation_of_response, request_of

_COOKIE_SAFE = "!#$&'()*+-./:<=>?@[]^_`{|}~"  # RFC 6265 cookie-octets that need no escaping


class OpenApiSession:
    """``with OpenApiSession(service) as s: s.call(tool, arguments)``."""

    def __init__(self, service: OpenApiService) -> None:
        self.service = service
        self._operations = {op.tool: op for op in service.operations}
        self._auth = {a.scheme: a for a in service.auth}
        self._secrets: dict[str, str] = {}
        self._client: Any = None

    def __enter__(self) -> OpenApiSession:
        import httpx

        for auth in self.service.auth:
            if auth.env not in os.environ:
                raise UserError(
                    f"OpenAPI service {self.service.name}: security scheme {auth.scheme} reads ${auth.env}, "
                    "which is not set",
                    fix=f"export {auth.env}=... (or import again with --auth {auth.scheme}=VAR)",
                )
            self._secrets[auth.scheme] = os.environ[auth.env]
        # no redirects followed: a redirect off the base URL would carry the secrets elsewhere
        self._client = httpx.Client(
            base_url=self.service.base_url, timeout=self.service.call_timeout, follow_redirects=False, trust_env=False
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """The observation of one tool call (see :func:`observation_of_response`)."""
        import httpx

        operation = self._operations.get(name)
        if operation is None:
            raise ToolError(f"OpenAPI service {self.service.name} has no tool {name!r}")
        request = request_of(operation, arguments)
        for scheme in operation.security:
            add_auth(request, self._auth[scheme], self._secrets[scheme])
        headers = dict(request.headers)
        if request.cookies:  # one Cookie header: httpx's per-request cookies would persist on the client
            headers["Cookie"] = "; ".join(f"{k}={quote(v, safe=_COOKIE_SAFE)}" for k, v in request.cookies.items())
        try:
            response = self._client.request(
                request.method,
                request.path,
                params=request.params,
                headers=headers,
                json=request.json,
                data=request.data,
            )
        except httpx.TimeoutException:  # a service that hangs: the environment, not the model
            raise EnvironmentFault(
                f"OpenAPI service {self.service.name}: {name} got no reply within {self.service.call_timeout:g} s"
            ) from None
        except httpx.HTTPError as exc:  # refused, reset, unreadable: the service, not the model
            raise EnvironmentFault(
                f"OpenAPI service {self.service.name} at {self.service.base_url}: {name} failed: "
                f"{self._masked(f'{type(exc).__name__}: {exc}')}"
            ) from None
        try:
            return observation_of_response(
                response.status_code,
                response.headers.get("content-type", ""),
                response.text,
                name,
                self.service.max_result_chars,
            )
        except ToolError as exc:
            raise ToolError(self._masked(str(exc)), code=exc.code) from None

    def _masked(self, text: str) -> str:
        for secret in self._secrets.values():
            if secret:
                text = text.replace(secret, "***")
        return text
