"""pyproject.toml maps top-level folders onto benchsmith.*: keep its package list complete and the wheel whole."""

from __future__ import annotations

import configparser
import importlib.util
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {"__pycache__", ".git", ".venv", "build", "dist", "out", ".pytest_cache"}


def _setuptools() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]


def _mapping() -> dict[str, Path]:
    """benchsmith.x -> folder, for every top-level folder mapped in package-dir."""
    mapping = {pkg: ROOT / folder for pkg, folder in _setuptools()["package-dir"].items()}
    assert mapping, "package-dir maps no folder"
    for pkg, folder in mapping.items():
        assert pkg.startswith("benchsmith."), pkg
        assert folder.is_dir(), f"{pkg} maps to missing folder {folder}"
    return mapping


def _walk(folder: Path):
    """(path relative to folder, path) of every file under folder, skipping caches and build dirs."""
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if (
            path.is_file()
            and not (set(rel.parts[:-1]) & SKIP_DIRS)
            and not any(p.endswith(".egg-info") for p in rel.parts)
        ):
            yield rel, path


def _packages_on_disk() -> set[str]:
    found = set()
    for pkg, folder in _mapping().items():
        for rel, _ in _walk(folder):
            if rel.name == "__init__.py":
                found.add(".".join([pkg, *rel.parts[:-1]]))
    return found


def _modules_on_disk() -> set[str]:
    """Wheel paths (benchsmith/...) of every .py file of the mapped folders."""
    found = set()
    for pkg, folder in _mapping().items():
        for rel, _ in _walk(folder):
            if rel.suffix == ".py":
                found.add("/".join([*pkg.split("."), *rel.parts]))
    return found


def test_every_mapped_folder_is_a_package():
    for pkg, folder in _mapping().items():
        assert (folder / "__init__.py").is_file(), f"{folder} (mapped to {pkg}) has no __init__.py"


def test_package_list_matches_the_folders():
    listed = _setuptools()["packages"]
    assert len(listed) == len(set(listed)), "a package is listed twice"
    on_disk = _packages_on_disk()
    missing = sorted(on_disk - set(listed))
    stale = sorted(set(listed) - on_disk)
    assert not missing, f"subpackages not listed in pyproject.toml [tool.setuptools] packages: {missing}"
    assert not stale, f"listed packages with no folder/__init__.py: {stale}"


def test_no_python_outside_a_package():
    """A .py file in a folder without __init__.py would be left out of the wheel silently."""
    packages = _packages_on_disk()
    for module in _modules_on_disk():
        assert ".".join(module.split("/")[:-1]) in packages, f"{module} is not inside a listed package"


def test_entry_point_declared():
    with (ROOT / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    assert project["scripts"] == {"benchsmith": "benchsmith.cli:app"}


def _build_wheel(src: Path, dest: Path) -> Path:
    if importlib.util.find_spec("build") is not None:
        cmd = [sys.executable, "-m", "build", "--wheel", "--outdir", str(dest), str(src)]
    else:
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(dest), str(src)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=540, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, f"{' '.join(cmd)} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    wheels = list(dest.glob("benchsmith-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.mark.slow
def test_wheel_holds_every_module_and_the_console_script(tmp_path):
    # build from a copy: a build in the work tree would leave build/ and egg-info behind
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*SKIP_DIRS, "*.egg-info", "*.pyc"))
    wheel = _build_wheel(src, tmp_path / "dist")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        dist_info = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
        assert len(dist_info) == 1, dist_info
        entry_points = zf.read(f"{dist_info.pop()}/entry_points.txt").decode()

    in_wheel = {n for n in names if n.endswith(".py")}
    expected = _modules_on_disk()
    assert not expected - in_wheel, f"missing from the wheel: {sorted(expected - in_wheel)}"
    assert not in_wheel - expected, f"unexpected in the wheel: {sorted(in_wheel - expected)}"
    assert all(n.startswith("benchsmith/") for n in in_wheel)
    assert "benchsmith/__init__.py" not in names, "benchsmith is a namespace package"
    assert "benchsmith/construction/nl2api/data/chinook_pairs.jsonl" in names

    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # keep case
    parser.read_string(entry_points)
    assert dict(parser["console_scripts"]) == {"benchsmith": "benchsmith.cli:app"}
