"""Helpers shared by the test modules (``pythonpath = ["tests"]`` in pyproject.toml)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def console_script() -> str:
    """The installed ``benchsmith`` console script of the interpreter running the tests."""
    script = Path(sys.executable).parent / "benchsmith"
    if script.is_file():
        return str(script)
    found = shutil.which("benchsmith")
    assert found, "the benchsmith console script is not installed next to the interpreter nor on PATH"
    return found


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without BENCHSMITH_* settings (cache locations kept), plus ``extra``."""
    keep = {"BENCHSMITH_CACHE", "BENCHSMITH_CHINOOK_SDIST"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHSMITH_") or k in keep}
    env.update(extra)
    return env
