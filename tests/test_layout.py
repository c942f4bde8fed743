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
    assert f["underscore_imports"] == []


@pytest.mark.parametrize(
    "where, line, key",
    [
        ("construction/graphs/queries.py", "    from benchsmith.eval import get_benchmark\n", "upward_imports"),
        ("cli/_report.py", "    from benchsmith.eval.report._private import charts\n", "private_imports"),
        ("schemas/_private/split.py", "    import benchsmith.models\n", "package_cycles"),
        ("eval/gta/_export.py", "    from benchsmith.eval._private.export import _notes\n", "underscore_imports"),
        ("eval/teval/_derive.py", "    from ._parse import _literal\n", "underscore_imports"),
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


def test_the_check_names_each_broken_rule(tmp_path: Path) -> None:
    """``--check`` (run by .ci/run) exits 0 on this tree and 1 on a copy with a planted private import."""
    ok = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "layout_figures.py"), "--check"], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    copy = tmp_path / "tree"
    for name in ("schemas", "models", "prompts", "construction", "eval", "annotation", "demo", "cli", "scripts"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__", "*.sqlite", "data"))
    path = copy / "cli" / "_report.py"
    path.write_text(path.read_text(encoding="utf-8") + "\nfrom ._construct import _secret  # noqa\n", encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, str(copy / "scripts" / "layout_figures.py"), "--check"], capture_output=True, text=True
    )
    lines = bad.stderr.splitlines()
    assert bad.returncode == 1 and len(lines) == 1, bad.stderr
    assert lines[0].startswith("underscore imports: cli/_report.py:") and lines[0].endswith(
        "benchsmith.cli._construct _secret"
    )


def test_no_test_module_imports_another() -> None:
    """Shared test code lives in conftest.py or a helpers module, never in a test module."""
    import ast

    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno} {n}"
                for n in names
                if n.startswith("test_") and (ROOT / "tests" / f"{n}.py").is_file()
            ]
    assert found == []
