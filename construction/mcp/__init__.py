"""MCP servers as tool sources: their tools as benchsmith tools, their calls run for real.

>>> from benchsmith.construction.mcp import tool_from_mcp
>>> tool = tool_from_mcp({"name": "read_query", "description": "Run a SELECT.",
...                       "input_schema": {"type": "object", "properties": {"query": {"type": "string"}},
...                                        "required": ["query"]},
...                       "annotations": {"read_only_hint": True}}, domain="sqlite")
>>> tool.parameters.required, tool.hints.read_only, tool.category
(['query'], True, 'mcp')
"""

from benchsmith.schemas import ANY_JSON

from ._private.catalog import ENVIRONMENT_FILE, SERVER_FILE, TOOLS_FILE, import_mcp_tools, parse_probe
from ._private.convert import observation_of, parameters_of, tool_from_mcp
from ._private.environment import (
    McpToolEnvironment,
    mcp_environment_spec,
    open_mcp_environment,
)
from ._private.serve import LABEL_META, mcp_server, serve_split_mcp, split_environment
from ._private.session import McpSession

__all__ = [
    "ANY_JSON",
    "ENVIRONMENT_FILE",
    "LABEL_META",
    "McpSession",
    "McpToolEnvironment",
    "mcp_environment_spec",
    "open_mcp_environment",
    "SERVER_FILE",
    "TOOLS_FILE",
    "import_mcp_tools",
    "mcp_server",
    "observation_of",
    "parameters_of",
    "parse_probe",
    "serve_split_mcp",
    "split_environment",
    "tool_from_mcp",
]
