"""``benchsmith tools import mcp`` and ``tools import openapi``: tool catalogs from the user's own
tool servers (a live MCP server, an OpenAPI document)."""
# annotations are real objects, not strings (see cli/__init__.py)

from pathlib import Path
from typing import List, Optional

import typer

from . import (  # cli/__init__ defines them before importing this module
    check_number,
    check_out_dir,
    check_port,
    user_errors,
)

tools_app = typer.Typer(
    rich_markup_mode=None, help="Tool catalogs from the user's own tool servers.", no_args_is_help=True
)
import_app = typer.Typer(
    rich_markup_mode=None, help="Import a server's tools as a benchsmith catalog.", no_args_is_help=True
)
tools_app.add_typer(import_app, name="import")


@import_app.command("mcp")
@user_errors
def import_mcp(
    command: Optional[List[str]] = typer.Argument(
        None, metavar="-- COMMAND [ARGS]...", help="Start the server with this command (stdio), after --"
    ),
    out: Path = typer.Option(..., "--out", envvar="BENCHSMITH_MCP_OUT", help="Folder for tools.json and server.json"),
    url: Optional[str] = typer.Option(
        None, "--url", envvar="BENCHSMITH_MCP_URL", help="Reach a running server instead (streamable HTTP)"
    ),
    name: Optional[str] = typer.Option(
        None,
        "--name",
        envvar="BENCHSMITH_MCP_NAME",
        help="The server's name in messages and the tools' domain (default: from the command or URL)",
    ),
    env: Optional[List[str]] = typer.Option(
        None,
        "--env",
        envvar="BENCHSMITH_MCP_ENV",
        help="An environment variable the started server gets (its name; repeatable)",
    ),
    header: Optional[List[str]] = typer.Option(
        None,
        "--header",
        envvar="BENCHSMITH_MCP_HEADER",
        help="HEADER=VAR: send HTTP header HEADER with the value of $VAR (repeatable)",
    ),
    cwd: Optional[Path] = typer.Option(
        None, "--cwd", envvar="BENCHSMITH_MCP_CWD", help="Working folder of the started server"
    ),
    timeout: float = typer.Option(
        30.0, "--timeout", envvar="BENCHSMITH_MCP_TIMEOUT", help="Seconds per request to the server (> 0)"
    ),
    start_timeout: float = typer.Option(
        60.0, "--start-timeout", envvar="BENCHSMITH_MCP_START_TIMEOUT", help="Seconds to start and initialise (> 0)"
    ),
    template: Optional[Path] = typer.Option(
        None,
        "--template",
        envvar="BENCHSMITH_MCP_TEMPLATE",
        help="A state folder copied fresh for every run; {work} in the command names the copy",
    ),
    probe: Optional[List[str]] = typer.Option(
        None,
        "--probe",
        envvar="BENCHSMITH_MCP_PROBE",
        help="TOOL or TOOL=JSON: a read-only call whose result is part of the state, e.g. "
        'read_query=\'{"query": "SELECT * FROM items"}\' (repeatable)',
    ),
) -> None:
    """List an MCP server's tools and write them as a benchsmith tool catalog: OUT/tools.json (names,
    descriptions, argument and output schemas, read-only/destructive hints), OUT/server.json (how
    to reach the server again; environment variable names only, never their values) and
    OUT/environment.json (the server as the catalog's tool environment: construct queries OUT runs
    its chains there, on a fresh copy of --template each time)."""
    from pydantic import ValidationError

    from benchsmith.construction.mcp import import_mcp_tools, parse_probe
    from benchsmith.schemas import McpServer, UserError, first_problem

    check_out_dir(out)
    check_number("--timeout", timeout, gt=0)
    check_number("--start-timeout", start_timeout, gt=0)
    headers = {}
    for item in header or []:
        key, sep, var = item.partition("=")
        if not sep or not key or not var:
            raise UserError(f"--header {item!r} is not HEADER=VAR", fix="e.g. --header Authorization=MCP_TOKEN")
        headers[key] = var
    label = name or (Path(command[0]).name if command else (url or "server"))
    try:
        server = McpServer(
            name=label,
            command=list(command or []),
            url=url,
            env=list(env or []),
            headers=headers,
            cwd=str(cwd) if cwd is not None else None,
            call_timeout=timeout,
            start_timeout=start_timeout,
        )
    except ValidationError as exc:  # one line for the first problem
        raise UserError(
            first_problem(exc),
            fix="give the server's command after -- (stdio) or --url http://127.0.0.1:PORT/mcp",
        ) from None
    probes = [parse_probe(item) for item in probe or []]
    tools = import_mcp_tools(server, out, template, probes)
    typer.echo(
        f"{len(tools)} tools from MCP server {server.name}: {out / 'tools.json'} ({', '.join(t.name for t in tools)})"
    )


@import_app.command("openapi")
@user_errors
def import_openapi(
    document: str = typer.Argument(
        ..., metavar="DOCUMENT", help="The OpenAPI 3.0/3.1 document: a YAML or JSON file, or a URL on this machine"
    ),
    out: Path = typer.Option(
        ..., "--out", envvar="BENCHSMITH_OPENAPI_OUT", help="Folder for tools.json and service.json"
    ),
    base_url: Optional[str] = typer.Option(
        None,
        "--base-url",
        envvar="BENCHSMITH_OPENAPI_BASE_URL",
        help="Where the service answers, e.g. http://127.0.0.1:8000 (default: the document's first server)",
    ),
    name: Optional[str] = typer.Option(
        None,
        "--name",
        envvar="BENCHSMITH_OPENAPI_NAME",
        help="The service's name in messages and the tools' domain (default: the document's title)",
    ),
    auth: Optional[List[str]] = typer.Option(
        None,
        "--auth",
        envvar="BENCHSMITH_OPENAPI_AUTH",
        help="SCHEME=VAR: read security scheme SCHEME's secret from $VAR (default BENCHSMITH_OPENAPI_<SCHEME>; repeatable)",
    ),
    timeout: float = typer.Option(
        30.0, "--timeout", envvar="BENCHSMITH_OPENAPI_TIMEOUT", help="Seconds per call to the service (> 0)"
    ),
) -> None:
    """Read an OpenAPI document and write a benchsmith tool catalog, one tool per operation:
    OUT/tools.json (names, descriptions, argument schemas with every $ref inlined, response schemas)
    and OUT/service.json (where each argument goes in the request, and the environment variable
    each security scheme's secret is read from; never the secret)."""
    from benchsmith.construction.openapi import import_openapi_tools
    from benchsmith.schemas import UserError

    check_out_dir(out)
    check_number("--timeout", timeout, gt=0)
    schemes = {}
    for item in auth or []:
        scheme, sep, var = item.partition("=")
        if not sep or not scheme or not var.isidentifier():
            raise UserError(f"--auth {item!r} is not SCHEME=VAR", fix="e.g. --auth ApiKeyAuth=PETS_API_KEY")
        schemes[scheme] = var
    tools = import_openapi_tools(document, out, base_url=base_url, name=name, auth_env=schemes, call_timeout=timeout)
    typer.echo(f"{len(tools)} tools from {document}: {out / 'tools.json'} ({', '.join(t.name for t in tools)})")


serve_app = typer.Typer(rich_markup_mode=None, help="Serve a split's tools to other programs.", no_args_is_help=True)


@serve_app.command("mcp")
@user_errors
def serve_mcp(
    split_dir: Path = typer.Argument(..., metavar="SPLIT", help="A split folder (its tools.json and samples.jsonl)"),
    http: bool = typer.Option(
        False, "--http", envvar="BENCHSMITH_MCP_HTTP", help="Streamable HTTP at http://HOST:PORT/mcp instead of stdio"
    ),
    host: str = typer.Option(
        "127.0.0.1", "--host", envvar="BENCHSMITH_HOST", help="Bind address with --http (loopback by default)"
    ),
    port: int = typer.Option(8765, "--port", envvar="BENCHSMITH_PORT", help="Port with --http"),
    sample: Optional[str] = typer.Option(
        None, "--sample", envvar="BENCHSMITH_MCP_SAMPLE", help="Serve this sample's environment (its setup applied)"
    ),
) -> None:
    """Serve a split's tools as an MCP server, running for real in the split's tool environment
    (NL2API tools on its read-only database, a sandbox domain): on stdio, or with --http over
    streamable HTTP at http://HOST:PORT/mcp. A call may name the label its output is kept under
    (request _meta "benchsmith/label"), so later calls refer to it as $label$."""
    from benchsmith.construction.mcp import serve_split_mcp

    if not split_dir.is_dir():
        from benchsmith.schemas import UserError

        raise UserError(f"{split_dir} is not a folder", fix="give a split folder")
    if http:
        check_port(port)
        typer.echo(f"serving {split_dir} over MCP at http://{host}:{port}/mcp", err=True)
    serve_split_mcp(split_dir, http=http, host=host, port=port, sample_id=sample)
