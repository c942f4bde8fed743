"""How to reach an MCP server: the ``server.json`` of a tool catalog imported from one, and the
``server`` of an ``mcp`` tool environment.

Secrets never enter the file: a started server gets only the environment variables named in
``env`` (besides MCP's safe defaults: PATH, HOME, ...), and an HTTP server the headers named in
``headers``, each read from an environment variable when the connection opens.
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
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")


class McpServer(StrictModel):
    """An MCP server: a command started for each connection (stdio), or a streamable-HTTP URL."""

    name: str = Field(min_length=1, description="what messages call the server (and the tools' domain)")
    command: list[str] = Field(default_factory=list, description="the program and its arguments (stdio)")
    url: str | None = Field(default=None, description="the streamable-HTTP endpoint, e.g. http://127.0.0.1:8000/mcp")
    env: list[str] = Field(
        default_factory=list, description="environment variables passed on to a started server (names only)"
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="HTTP header -> the environment variable holding its value"
    )
    cwd: str | None = Field(default=None, description="working folder of a started server")
    start_timeout: float = Field(default=60.0, gt=0, description="seconds to start and initialise")
    call_timeout: float = Field(default=30.0, gt=0, description="seconds per tool call")
    max_result_chars: int = Field(default=200_000, ge=1, description="longest tool result taken, as JSON text")

    @model_validator(mode="after")
    def _one_way_in(self) -> McpServer:
        if bool(self.command) == (self.url is not None):
            raise ValueError("give a command (stdio) or a url (streamable HTTP), not both or neither")
        if self.url is not None:
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"url {self.url!r} is not an http(s) URL")
        bad = [n for n in [*self.env, *self.headers.values()] if not re.match(_ENV_NAME, n)]
        if bad:
            raise ValueError(f"not environment variable names: {bad}")
        if any(not _HEADER_NAME.match(h) for h in self.headers):
            raise ValueError(f"not HTTP header names: {sorted(self.headers)}")
        if self.headers and self.url is None:
            raise ValueError("headers are for a server reached by url")
        return self


class StateProbe(StrictModel):
    """A read-only call whose observation is part of an environment's state."""

    name: str = Field(min_length=1, description="a read-only tool of the server")
    arguments: dict[str, Any] = Field(default_factory=dict)


class McpEnvironment(StrictModel):
    """An MCP server as a tool environment (an ``environment.json``): a fresh server for every
    chain, replay and episode, started on a fresh copy of the state template; its state read by
    probe calls and a digest of the work folder."""

    kind: Literal["mcp"] = "mcp"
    server: McpServer = Field(description="the server; {work} in its command and cwd is the fresh work folder")
    template: str | None = Field(
        default=None,
        description="a folder (relative to the environment file) copied into the work folder before the server starts",
    )
    probes: list[StateProbe] = Field(default_factory=list, description="read-only calls that read the state")
    digest: bool = Field(default=False, description="the state includes a digest of every file in the work folder")
    volatile: list[str] = Field(
        default_factory=list,
        description="keys whose values change from run to run (timestamps), left out of comparisons",
    )

    @model_validator(mode="after")
    def _work_needs_command(self) -> McpEnvironment:
        if (self.template is not None or self.digest) and not self.server.command:
            raise ValueError("a state template and a work-folder digest are for a server started from a command")
        return self


def read_mcp_environment(path: Path) -> McpEnvironment:
    """The :class:`McpEnvironment` in a JSON file; a bad file is one :class:`UserError` naming it."""
    env: McpEnvironment = read_json(
        path, McpEnvironment, fix='write {"server": {...}, "template": ..., "probes": [...]}'
    )
    return env


def write_mcp_environment(path: Path, env: McpEnvironment) -> None:
    """Write ``env`` to ``path`` (atomically); only what differs from the defaults (its kind always)."""
    write_json(path, {"kind": env.kind, **env.model_dump(mode="json", exclude_defaults=True)})


def read_mcp_server(path: Path) -> McpServer:
    """The :class:`McpServer` in a JSON file; a bad file is one :class:`UserError` naming it."""
    server: McpServer = read_json(path, McpServer, fix="write the server as {name, command | url, ...}")
    return server


def write_mcp_server(path: Path, server: McpServer) -> None:
    """Write ``server`` to ``path`` (atomically); only what differs from the defaults."""
    write_json(path, server.model_dump(mode="json", exclude_defaults=True))
