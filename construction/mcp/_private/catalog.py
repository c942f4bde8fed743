"""A tool catalog from a live MCP server: what ``benchsmith tools import mcp`` writes."""

from __future__ import annotations

import os
from pathlib import Path

from benchsmith.schemas import (
    McpEnvironment,
    McpServer,
    Tool,
    UserError,
    write_json,
    write_mcp_environment,
    write_mcp_server,
)

from .environment import McpToolEnvironment

#: the files of an imported catalog: the tools, how to reach their server again, and the server as
#: the catalog's tool environment (``construct queries CATALOG`` runs its draws there)
TOOLS_FILE = "tools.json"
SERVER_FILE = "server.json"
ENVIRONMENT_FILE = "environment.json"


def import_mcp_tools(server: McpServer, out: Path, template: Path | None = None) -> list[Tool]:
    """Start or reach ``server``, list its tools and write ``out/tools.json`` (benchsmith tools, the
    catalog ``construct queries`` reads), ``out/server.json`` (the server, secrets left out:
    environment variable names only) and ``out/environment.json`` (an ``mcp`` environment: the
    server, started on a fresh copy of ``template`` for every chain and episode when one is
    given, ``{work}`` in its command naming that copy); the tools."""
    spec = McpEnvironment(server=server)
    if template is not None:
        if not template.is_dir():
            raise UserError(f"--template {template} is not a folder", fix="give the folder the server starts from")
        spec = McpEnvironment(server=server, template=os.path.relpath(template.resolve(), out.resolve()))
    out.mkdir(parents=True, exist_ok=True)
    env = McpToolEnvironment(spec, out)
    try:
        tools = env.tools()
    finally:
        env.close()
    if not tools:
        raise UserError(f"MCP server {server.name} lists no tools", fix="point at a server that offers tools")
    write_json(out / TOOLS_FILE, [t.model_dump(mode="json", exclude_none=True) for t in tools])
    write_mcp_server(out / SERVER_FILE, server)
    write_mcp_environment(out / ENVIRONMENT_FILE, spec)
    return tools
