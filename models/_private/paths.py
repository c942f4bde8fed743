"""Where the local model and its server's state live (``~/.cache/benchsmith`` unless moved)."""

from __future__ import annotations

import os
from pathlib import Path

ENV_CACHE = "BENCHSMITH_CACHE"
ENV_STATE_DIR = "BENCHSMITH_MODEL_STATE_DIR"


def cache_root() -> Path:
    """``$BENCHSMITH_CACHE`` or ``~/.cache/benchsmith``."""
    return Path(os.environ.get(ENV_CACHE) or Path.home() / ".cache" / "benchsmith").absolute()


def models_dir() -> Path:
    """Where assembled model files go: ``<cache>/models``."""
    return cache_root() / "models"


def state_dir() -> Path:
    """Where the local server's state file, lock and log go: ``$BENCHSMITH_MODEL_STATE_DIR`` or
    ``<cache>/local-model``."""
    return Path(os.environ.get(ENV_STATE_DIR) or cache_root() / "local-model").absolute()
