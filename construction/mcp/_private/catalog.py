"""A tool catalog from a live MCP server: what ``benchsmith tools import mcp`` writes."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from benchsmith.schemas import (
    McpEnvironment,
    McpServer,
    StateProbe,
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


def parse_probe(text: str) -> StateProbe:
    """``TOOL`` or ``TOOL=JSON`` (the JSON object of its arguments) as a :class:`StateProbe`.

    >>> parse_probe('read_query={"query": "SELECT 1"}')
    StateProbe(name='read_query', arguments={'query': 'SELECT 1'})
    >>> parse_probe("list_tables")
    StateProbe(name='list_tables', arguments={})
    """
    name, sep, raw = text.partition("=")
    fix = 'give --probe TOOL or TOOL=JSON, e.g. read_query=\'{"query": "SELECT * FROM items"}\''
    if not name.strip():
        raise UserError(f"--probe {text!r} names no tool", fix=fix)
    try:
        arguments = json.loads(raw) if sep else {}
    except ValueError as exc:
        raise UserError(f"--probe {text!r}: its arguments are not JSON ({exc})", fix=fix) from None
    if not isinstance(arguments, dict):
        raise UserError(f"--probe {text!r}: its arguments are not a JSON object", fix=fix)
    return StateProbe(name=name.strip(), arguments=arguments)


def import_mcp_tools(
    server: McpServer, out: Path, template: Path | None = None, probes: Sequence[StateProbe] = ()
) -> list[Tool]:
    """Start or reach ``server``, list its tools and write ``out/tools.json`` (benchsmith tools, the
    catalog ``construct queries`` reads), ``out/server.json`` (the server, secrets left out:
    environment variable names only) and ``out/environment.json`` (an ``mcp`` environment: the
    server, started on a fresh copy of ``template`` for every chain and episode when one is
    given, ``{work}`` in its command naming that copy; its state is what ``probes`` read and,
    with a template, the digest of the work folder); the tools. A probe naming no tool of the
    server is refused."""
    spec = McpEnvironment(server=server, probes=list(probes))
    if template is not None:
        if not template.is_dir():
            raise UserError(f"--template {template} is not a folder", fix="give the folder the server starts from")
        relative = os.path.relpath(template.resolve(), out.resolve())
        spec = spec.model_copy(update={"template": relative, "digest": True})
    out.mkdir(parents=True, exist_ok=True)
    env = McpToolEnvironment(spec, out)
    try:
        tools = env.tools()
    finally:
        env.close()
    if not tools:
        raise UserError(f"MCP server {server.name} lists no tools", fix="point at a server that offers tools")
    unknown = sorted({p.name for p in probes} - {t.name for t in tools})
    if unknown:
        raise UserError(
            f"--probe {', '.join(unknown)}: MCP server {server.name} has no such tool",
            fix=f"probe one of {', '.join(t.name for t in tools)}",
        )
    write_json(out / TOOLS_FILE, [t.model_dump(mode="json", exclude_none=True) for t in tools])
    write_mcp_server(out / SERVER_FILE, server)
    write_mcp_environment(out / ENVIRONMENT_FILE, spec)
    return tools
