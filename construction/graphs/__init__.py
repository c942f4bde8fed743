"""The built-in construction graphs (each registers itself by name)."""

from . import apis, backtranslate, chains, dialogues, expand, queries, special, vote  # noqa: F401
