"""``benchsmith model serve|stop|status``: the local default model server."""
from __future__ import annotations

import typer

model_app = typer.Typer(help="The local default model (Gemma 3 270M on xllamacpp, 127.0.0.1).", no_args_is_help=True)
