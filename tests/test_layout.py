"""The floor plan holds: the import-linter contracts in pyproject.toml (layers; construction never
imports eval), no import of another package's ``_private``, no import cycle between the top-level
packages. Figures come from scripts/layout_figures.py, whose detector is itself tested on a copy
of the tree with a planted violation."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _figures_module(root: Path):
    spec = importlib.util.spec_from_file_location(
        f"layout_figures_{abs(hash(root))}", root / "scripts" / "layout_figures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_import_linter_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_no_upward_private_or_cyclic_imports() -> None:
    f = _figures_module(ROOT).figures()
    assert f["upward_imports"] == []
    assert f["private_imports"] == []
    assert f["package_cycles"] == []


@pytest.mark.parametrize(
    "where, line, key",
    [
        ("construction/graphs/queries.py", "    from benchsmith.eval import get_benchmark\n", "upward_imports"),
        ("cli/_report.py", "    from benchsmith.eval.report._private import charts\n", "private_imports"),
        ("schemas/_private/split.py", "    import benchsmith.models\n", "package_cycles"),
    ],
)
def test_the_detector_finds_a_planted_violation(tmp_path: Path, where: str, line: str, key: str) -> None:
    copy = tmp_path / "tree"
    for name in ("schemas", "models", "prompts", "construction", "eval", "annotation", "demo", "cli", "scripts"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__", "*.sqlite", "data"))
    path = copy / where
    path.write_text(path.read_text(encoding="utf-8") + "\n\ndef _planted():\n" + line, encoding="utf-8")
    f = _figures_module(copy).figures()
    assert len(f[key]) == 1, f[key]
