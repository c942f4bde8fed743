"""One exception base for benchsmith.

``UserError`` is for mistakes the user can fix (bad file, bad option, bad config): the CLI
prints its message as one red line and exits 2. ``RuntimeFault`` is for failures of the
machinery (a server that went away, an internal invariant): the CLI prints it as one red
line and exits 3. ``EnvironmentFault`` is the ``RuntimeFault`` of a tool environment (an MCP server,
an HTTP service): the runner keeps it apart from the model's mistakes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class BenchsmithError(Exception):
    """Base of every error benchsmith raises on purpose."""


class UserError(BenchsmithError):
    """A mistake in the user's input, named with where it is and how to fix it."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.fix = fix
        super().__init__(message if not fix else f"{message} (fix: {fix})")


class RuntimeFault(BenchsmithError):
    """A failure of the machinery rather than of the user's input."""


class EnvironmentFault(RuntimeFault):
    """A tool environment that failed on its own: a server that did not start, died, hung past its
    timeout or answered with a malformed message. Never the model's fault: ``eval run`` records the
    case as ``environment_error`` and plays it again, construction leaves the item unfinished."""


class ToolError(BenchsmithError):
    """A tool call that cannot run (unknown tool or column, wrong argument type, ...): what a model
    got wrong, reported back to it as the call's observation. ``code`` names the kind."""

    def __init__(self, message: str, *, code: str = "tool_input_error") -> None:
        self.code = code
        super().__init__(message)


def first_problem(exc: ValidationError) -> str:
    """The first of a pydantic error's problems as ``where: what`` (``what`` alone at the top level),
    for the one line a ``UserError`` gives."""
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"])
    what = first["msg"].removeprefix("Value error, ")
    return f"{where}: {what}" if where else what
