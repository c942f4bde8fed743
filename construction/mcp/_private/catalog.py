"""A tool catalog from a live MCP server: what ``benchsmith tools import mcp`` writes."""

from __future__ import annotations

from pathlib import Path

from benchsmith.schemas import McpServer, Tool, UserError, write_json, write_mcp_server

from .session import McpSession

#: the files of an imported catalog: the tools, and how to reach their server again
TOOLS_FILE = "tools.json"
SERVER_FILE = "server.json"


def import_mcp_tools(server: McpServer, out: Path) -> list[Tool]:
    """Connect to ``server``, list its tools and write ``out/tools.json`` (benchsmith tools, the
    catalog ``construct queries`` reads) and ``out/server.json`` (the server, secrets left out:
    environment variable names only); the tools."""
    with McpSession(server) as session:
        tools = session.tools()
    if not tools:
        raise UserError(f"MCP server {server.name} lists no tools", fix="point at a server that offers tools")
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / TOOLS_FILE, [t.model_dump(mode="json", exclude_none=True) for t in tools])
    write_mcp_server(out / SERVER_FILE, server)
    return tools
