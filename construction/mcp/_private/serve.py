"""A split's tools served over MCP (``benchsmith serve mcp SPLIT``): any MCP client or agent can
call them, running for real in the split's tool environment (NL2API tools on the split's
read-only database, a sandbox domain).

The server is the official SDK's low-level server: ``tools/list`` gives the split's tools
(``tools.json``: name, description, argument schema, response schema, hints), ``tools/call`` runs
one call in the environment. One server process holds one environment, opened when it starts:
every client of an HTTP server shares its state. A call may name the label its output is kept
under (``_meta: {"benchsmith/label": "data_1"}``), so a gold chain's later calls can refer to it
as ``$data_1$``; without one, outputs are labelled ``out_1``, ``out_2``, ... The label used comes
back in the result's ``_meta``. A call the environment refuses (the caller's mistake) is a result
marked as an error carrying the message, as MCP asks.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from benchsmith.schemas import Sample, Tool, ToolError, UserError, read_json, read_jsonl

LABEL_META = "benchsmith/label"
_NL2API_STYLES = ("slot", "sel", "rest")


def split_environment(split: Path, sample_id: str | None = None) -> dict[str, Any]:
    """The environment descriptor ``serve mcp`` opens for ``split``: the one sample ``sample_id``
    runs in (its setup calls applied), else the split's own (an NL2API split's tools on its
    database; otherwise the one environment every sample shares)."""
    from benchsmith.construction.nl2api import read_manifest

    if not (split / "manifest.json").is_file():
        raise UserError(f"{split} is not a split folder (no manifest.json)", fix="give a split folder")
    style = read_manifest(split / "manifest.json").style
    chosen: dict[str, Any] | None = None
    seen: list[dict[str, Any]] = []
    for sample in read_jsonl(split / "samples.jsonl", Sample):
        own = _sample_environment(sample, style)
        if sample_id is not None:
            if sample.id == sample_id:
                if own is None:
                    raise UserError(f"sample {sample_id} of {split} names no tool environment", fix="pick another")
                return own
            continue
        if own is not None and own not in seen:
            seen.append({k: v for k, v in own.items() if k != "setup"})
        if len(seen) > 1 and style not in _NL2API_STYLES:
            break
    if sample_id is not None:
        raise UserError(
            f"{split / 'samples.jsonl'} has no sample {sample_id!r}", fix="give the id of one of its samples"
        )
    if style in _NL2API_STYLES:
        chosen = {"kind": "nl2api", "style": style}
    elif len(seen) == 1:
        chosen = seen[0]
    elif not seen:
        raise UserError(f"no sample of {split} names a tool environment", fix="serve a split whose tools execute")
    else:
        raise UserError(
            f"the samples of {split} run in different environments (e.g. {seen[0].get('kind')}, {seen[1].get('kind')})",
            fix="pick one sample's with --sample ID",
        )
    return chosen


def _sample_environment(sample: Sample, style: Any) -> dict[str, Any] | None:
    own = sample.metadata.get("environment")
    if isinstance(own, dict):
        return dict(own)
    if style in _NL2API_STYLES:
        descriptor: dict[str, Any] = {"kind": "nl2api", "style": style}
        if sample.setup:
            descriptor["setup"] = [c.model_dump(mode="json") for c in sample.setup]
        if sample.metadata.get("db_id"):
            descriptor["db_id"] = sample.metadata["db_id"]
        return descriptor
    return None


def split_tools(split: Path) -> list[Tool]:
    tools: list[Tool] = read_json(split / "tools.json", list[Tool], fix="give a split folder with its tools.json")
    return tools


def mcp_server(split: Path, sample_id: str | None = None) -> Any:
    """The SDK's low-level MCP server for ``split``'s tools, its environment opened."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    from benchsmith.construction import EnvContext, open_environment

    tools = split_tools(split)
    env = open_environment(split_environment(split, sample_id), EnvContext(split=split))
    listed = [_mcp_tool(t) for t in tools]
    names = {t.name for t in tools}
    lock = threading.Lock()  # one environment, calls one at a time
    count = [0]

    async def list_tools(_ctx: Any, _params: Any) -> Any:
        return types.ListToolsResult(tools=listed)

    async def call_tool(_ctx: Any, params: Any) -> Any:
        meta = params.meta.model_dump() if hasattr(params.meta, "model_dump") else dict(params.meta or {})
        label = meta.get(LABEL_META)

        def run() -> tuple[str, Any]:
            with lock:
                count[0] += 1
                used = str(label) if label else f"out_{count[0]}"
                if params.name not in names:
                    raise ToolError(f"no tool {params.name!r} in this split")
                return used, env.call(params.name, dict(params.arguments or {}), used)

        try:
            used, observation = await anyio.to_thread.run_sync(run)
        except ToolError as exc:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))], is_error=True)
        text = json.dumps(observation, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=observation if isinstance(observation, dict) else None,
            meta={LABEL_META: used},
        )

    return Server(f"benchsmith split {split.name}", on_list_tools=list_tools, on_call_tool=call_tool)


def _mcp_tool(tool: Tool) -> Any:
    import mcp.types as types

    hints = tool.hints
    annotations = types.ToolAnnotations(
        title=hints.title if hints else None,
        read_only_hint=hints.read_only if hints else None,
        destructive_hint=hints.destructive if hints else None,
        idempotent_hint=hints.idempotent if hints else None,
        open_world_hint=False,  # the split's environment is a closed world
    )
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.parameters.model_dump(mode="json", exclude_none=True),
        annotations=annotations,
    )


def serve_split_mcp(
    split: Path, *, http: bool = False, host: str = "127.0.0.1", port: int = 8765, sample_id: str | None = None
) -> None:
    """Serve ``split``'s tools over MCP until stopped: on stdio, or over streamable HTTP at
    ``http://HOST:PORT/mcp`` (loopback by default)."""
    import anyio

    server = mcp_server(split, sample_id)
    if http:
        import uvicorn

        app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
        uvicorn.run(app, host=host, port=port, log_level="warning")
        return
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
