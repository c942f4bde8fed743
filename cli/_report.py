"""``benchsmith report RUN_DIR...``: HTML, Markdown and CSV reports over evaluation runs."""
from __future__ import annotations


def register(app) -> None:  # noqa: ANN001 - a typer.Typer
    """Add the ``report`` command to the top-level app."""
