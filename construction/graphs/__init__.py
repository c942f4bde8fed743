"""The built-in construction graphs (each registers itself by name)."""

from . import chains, queries, vote  # noqa: F401
