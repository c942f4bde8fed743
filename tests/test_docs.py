"""The examples in the docs run: every module's doctests and README.md's ```python blocks."""

from __future__ import annotations

import ast
import doctest
import importlib
import io
import pkgutil
import re
import tomllib
from contextlib import redirect_stdout
from pathlib import Path

import pytest

import benchsmith

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _all_modules() -> list[str]:
    """Every module under the benchsmith namespace.

    ``pkgutil.walk_packages(benchsmith.__path__)`` finds nothing under setuptools' editable
    install (its path entry is a finder hook), so the mapped top-level packages of pyproject.toml
    are walked as well; each of those has an ordinary ``__path__``.
    """
    names = {m.name for m in pkgutil.walk_packages(benchsmith.__path__, "benchsmith.")}
    with (ROOT / "pyproject.toml").open("rb") as f:
        top = [p for p in tomllib.load(f)["tool"]["setuptools"]["package-dir"] if p.count(".") == 1]
    for name in {*top, *(n for n in names if n.count(".") == 1)}:
        package = importlib.import_module(name)
        names.add(name)
        names.update(m.name for m in pkgutil.walk_packages(package.__path__, name + "."))
    return sorted(names)


MODULES = _all_modules()


def test_module_discovery():
    assert {
        "benchsmith.cli",
        "benchsmith.schemas",
        "benchsmith.construction.nl2api",
        "benchsmith.construction.nl2api._private.rest",
    } <= set(MODULES)


@pytest.fixture(scope="module")
def doctest_results(tmp_path_factory):
    """Run every module's doctests once, in a scratch working directory."""
    import os

    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("doctest"))
    try:
        results = {}
        for name in MODULES:
            module = importlib.import_module(name)
            out = io.StringIO()
            with redirect_stdout(out):
                results[name] = (doctest.testmod(module, verbose=False, report=True), out.getvalue())
        return results
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(doctest_results, name):
    result, report = doctest_results[name]
    assert result.failed == 0, report


def test_doctests_ran(doctest_results):
    attempted = {n: r.attempted for n, (r, _) in doctest_results.items()}
    assert sum(attempted.values()) >= 20, attempted
    assert sum(1 for n in attempted.values() if n) >= 3, attempted


# ------------------------------------------------------------------------ README ----

_FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _readme_blocks() -> list[tuple[int, str, str]]:
    if not README.exists():
        return []
    text = README.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2)) for m in _FENCE.finditer(text)]


BLOCKS = [b for b in _readme_blocks() if "no-run" not in b[1].split()]


@pytest.mark.skipif(not README.exists(), reason="no README.md")
def test_readme_has_runnable_python():
    assert BLOCKS, "README.md has no ```python block to run"


@pytest.mark.parametrize("line, info, code", BLOCKS, ids=[f"README.md:{b[0]}" for b in BLOCKS])
def test_readme_block(line, info, code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    compiled = compile(code, f"README.md:{line}", "exec")
    out = io.StringIO()
    with redirect_stdout(out):
        exec(compiled, {"__name__": "__readme__"})
    # print lines whose trailing comment is a Python literal state what they print
    prints = re.findall(r"^print\(.*?\)(?:\s+#\s*(.+))?$", code, re.MULTILINE)
    expected = []
    for comment in prints:
        try:
            expected.append(repr(ast.literal_eval(comment.strip())) if comment else None)
        except (ValueError, SyntaxError):
            expected.append(None)
    if expected and None not in expected:
        assert out.getvalue().splitlines() == expected, out.getvalue()


def test_every_graph_option_is_documented():
    """Each option a graph declares appears (as `name`) on its page, or in the engine page for the
    graphs documented there."""
    from benchsmith.construction import GRAPHS, get_graph

    engine = (ROOT / "docs" / "construction" / "engine.md").read_text(encoding="utf-8")
    for name in sorted(GRAPHS):
        page = ROOT / "docs" / "construction" / f"{name}.md"
        text = engine + (page.read_text(encoding="utf-8") if page.exists() else "")
        missing = [k for k in get_graph(name).Options.model_fields if f"`{k}`" not in text]
        assert not missing, f"{name}: options {missing} are not in docs/construction/{name}.md or engine.md"
