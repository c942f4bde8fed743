"""A live connection to one MCP server, for synchronous code (graphs, the runner, the CLI).

The ``mcp`` SDK is asynchronous: the connection lives in an event loop of its own thread (an
anyio blocking portal), entered and left in one task as the SDK requires, and each call waits for
its reply there within the server's ``call_timeout``. A server started from a command gets the
SDK's safe default environment plus the variables ``env`` names; its stderr goes to a log file,
whose last lines explain a failed start.

What is the model's doing and what is the server's: a result the server marks as an error, a
JSON-RPC error reply (an unknown tool, bad arguments) and a result over the size cap are
``ToolError`` observations; a server that does not start, dies, hangs past ``call_timeout`` or sends
a message that is not MCP is an ``EnvironmentFault`` (the episode is played again, never charged).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from benchsmith.schemas import EnvironmentFault, McpServer, RuntimeFault, Tool, ToolError, UserError

from .convert import observation_of, tool_from_mcp

_TAIL_LINES = 5
_CUT = object()  # a request cut short by a malformed message
_UNREADABLE = "Failed to parse JSONRPC message from server"


class _SaidOnce(logging.Filter):
    """The SDK logs an unreadable line with its traceback; the EnvironmentFault this session raises
    names it in one line, so the traceback is left out of the user's terminal."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != _UNREADABLE


logging.getLogger("mcp.client.stdio").addFilter(_SaidOnce())


class McpSession:
    """``with McpSession(server) as s: s.tools(); s.call(name, arguments)``."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self._stack = contextlib.ExitStack()
        self._portal: Any = None
        self._session: Any = None
        self._errlog: Path | None = None
        self._scope: Any = None  # the cancel scope of the request in flight (one at a time)
        self._malformed: Exception | None = None  # the last message the server sent that was not MCP

    # -- opening and closing ----------------------------------------------------------------------
    def __enter__(self) -> McpSession:
        from anyio.from_thread import start_blocking_portal

        try:
            self._portal = self._stack.enter_context(start_blocking_portal())
            self._session = self._stack.enter_context(self._portal.wrap_async_context_manager(self._connect()))
        except BaseException as exc:
            self._stack.close()
            inner = _innermost(exc)
            if isinstance(inner, (UserError, RuntimeFault, KeyboardInterrupt)):
                raise inner from None
            raise EnvironmentFault(f"MCP server {self.server.name} did not start: {_why(exc)}{self._tail()}") from None
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):  # a server that died already has nothing left to close
            self._stack.close()
        if self._errlog is not None:
            self._errlog.unlink(missing_ok=True)

    @contextlib.asynccontextmanager
    async def _connect(self) -> AsyncIterator[Any]:
        import anyio
        from mcp import ClientSession

        async with (
            self._transport() as (read, write),
            ClientSession(read, write, message_handler=self._on_message) as session,
        ):
            with anyio.fail_after(self.server.start_timeout):
                await session.initialize()
            yield session

    async def _on_message(self, message: Any) -> None:
        """A line the transport could not read as MCP fails the request waiting for its reply at
        once (else it would wait out ``call_timeout`` for a reply that never comes)."""
        if isinstance(message, Exception):
            self._malformed = message
            if self._scope is not None:
                self._scope.cancel()

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        server = self.server
        if server.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {}
            for header, var in server.headers.items():
                if var not in os.environ:
                    raise UserError(
                        f"MCP server {server.name}: header {header} reads ${var}, which is not set",
                        fix=f"export {var}=... before connecting",
                    )
                headers[header] = os.environ[var]
            async with (
                httpx2.AsyncClient(headers=headers, timeout=server.call_timeout) as http,
                streamable_http_client(server.url, http_client=http) as streams,
            ):
                yield streams[0], streams[1]
            return
        from mcp import StdioServerParameters, stdio_client

        env = {var: os.environ[var] for var in server.env if var in os.environ}
        params = StdioServerParameters(command=server.command[0], args=server.command[1:], env=env, cwd=server.cwd)
        fd, name = tempfile.mkstemp(prefix="benchsmith-mcp-", suffix=".log")
        self._errlog = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as streams:
                yield streams[0], streams[1]

    # -- using it ---------------------------------------------------------------------------------
    def tools(self) -> list[Tool]:
        """The server's tools as benchsmith tools (every page of ``tools/list``)."""
        from mcp.types import PaginatedRequestParams

        listed: list[Any] = []
        params = None
        while True:
            page = self._request("tools/list", self._session.list_tools, params=params)
            listed.extend(page.tools)
            if not page.next_cursor:
                break
            params = PaginatedRequestParams(cursor=page.next_cursor)
        return [tool_from_mcp(t.model_dump(), self.server.name) for t in listed]

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """The observation of one tool call (see :func:`observation_of`); a result the server marks
        as an error is a :class:`ToolError`."""
        result = self._request(f"tools/call {name}", self._session.call_tool, name, arguments)
        return observation_of(result.model_dump(), name, self.server.max_result_chars)

    def _request(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        import anyio

        async def run() -> Any:
            with anyio.CancelScope() as scope:
                self._scope = scope
                try:
                    with anyio.fail_after(self.server.call_timeout):
                        return await fn(*args, **kwargs)
                finally:
                    self._scope = None
            return _CUT  # cancelled by a malformed message: raised below

        name = self.server.name
        try:
            result = self._portal.call(run)
        except TimeoutError:
            raise EnvironmentFault(
                f"MCP server {name}: {what} got no reply within {self.server.call_timeout:g} s (call_timeout)"
                f"{self._tail()}"
            ) from None
        except (ToolError, UserError):
            raise
        except Exception as exc:  # the SDK's errors: a JSON-RPC error reply, a closed connection, a bad result
            from mcp.shared.exceptions import MCPError
            from pydantic import ValidationError

            if isinstance(exc, MCPError) and "closed" not in str(exc).lower():
                raise ToolError(f"MCP server {name}: {what}: {exc}", code="server_error") from None
            if isinstance(exc, (ValidationError, RuntimeError)):  # a result that is not MCP's shape
                raise EnvironmentFault(f"MCP server {name}: {what} answered malformed: {_first_line(exc)}") from None
            raise EnvironmentFault(f"MCP server {name}: {what} failed: {_why(exc)}{self._tail()}") from None
        if result is _CUT:
            raise EnvironmentFault(
                f"MCP server {name}: {what} answered malformed: {_first_line(self._malformed)}"
            ) from None
        return result

    def _tail(self) -> str:
        if self._errlog is None or not self._errlog.is_file():
            return ""
        text = self._errlog.read_text("utf-8", errors="replace")
        lines = [ln.strip() for ln in text.splitlines() if any(c.isalnum() for c in ln)]  # no box-drawing rows
        return f" (its stderr ends: {' | '.join(lines[-_TAIL_LINES:])})" if lines else ""


def _innermost(exc: BaseException) -> BaseException:
    """The first exception inside the exception groups anyio wraps task failures in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _first_line(exc: BaseException) -> str:
    """A pydantic error's summary and its first complaint, on one line."""
    lines = [ln.strip() for ln in str(_innermost(exc)).splitlines() if ln.strip()]
    return f"{type(_innermost(exc)).__name__}: {'; '.join(lines[:3])}"[:400]


def _why(exc: BaseException) -> str:
    inner = _innermost(exc)
    return f"{type(inner).__name__}: {inner}"
