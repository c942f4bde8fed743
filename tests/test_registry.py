"""The one registry helper: lazy built-ins, plug-ins from $BENCHSMITH_PLUGINS (module or folder),
clear errors for unknown names and plug-ins that cannot be imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchsmith.schemas import Registry, UserError, load_plugins
from benchsmith.schemas._private import registry as registry_module


def test_builtins_are_imported_on_first_lookup_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lazy_colours.py").write_text(
        "from test_registry_shared import COLOURS\nCOLOURS.add('green', '#0f0')\n", encoding="utf-8"
    )
    (tmp_path / "test_registry_shared.py").write_text(
        "from benchsmith.schemas import Registry\nCOLOURS = Registry('colour', ('lazy_colours',))\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import test_registry_shared

    assert "lazy_colours" not in sys.modules
    assert test_registry_shared.COLOURS["green"] == "#0f0"
    assert "lazy_colours" in sys.modules


def test_a_lookup_imports_only_the_builtin_module_the_name_names(tmp_path: Path) -> None:
    (tmp_path / "tints").mkdir()
    (tmp_path / "tints" / "__init__.py").write_text("from benchsmith.schemas import Registry\n", encoding="utf-8")
    (tmp_path / "tints" / "table.py").write_text(
        "from benchsmith.schemas import Registry\nSHADES = Registry('shade', ('tints.red', 'tints.blue'))\n",
        encoding="utf-8",
    )
    for colour in ("red", "blue"):
        (tmp_path / "tints" / f"{colour}.py").write_text(
            f"from tints.table import SHADES\nSHADES.add('{colour}', 1)\nSHADES.add('{colour}:dark', 2)\n",
            encoding="utf-8",
        )
    code = (
        "import sys\nfrom tints.table import SHADES\n"
        "print(SHADES['blue:dark'], 'blue:light' in SHADES, 'tints.red' in sys.modules)\n"
        "print('green' in SHADES, 'tints.red' in sys.modules, sorted(SHADES))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    # blue's names are found (or not) in tints.blue alone; a name naming no built-in loads them all
    assert out.stdout.splitlines() == [
        "2 False False",
        "False True ['blue', 'blue:dark', 'red', 'red:dark']",
    ], out.stdout + out.stderr


def test_scoring_one_benchmark_imports_no_other() -> None:
    code = (
        "import sys\nfrom benchsmith.eval import get_benchmark\nfrom benchsmith.eval.scoring import SCORERS\n"
        "get_benchmark('bfcl'); 'bfcl:simple_python' in SCORERS\n"
        "print(sorted(m.split('.')[2] for m in sys.modules if m.count('.') == 2 and m.startswith('benchsmith.eval.')"
        " and m.split('.')[2] in ('acebench', 'agent', 'bfcl', 'gta', 'nl2api', 'teval', 'toolassess')))\n"
        "print('sqlglot' in sys.modules, 'benchsmith.construction' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["['bfcl']", "False False"], out.stdout + out.stderr


def test_a_name_registered_twice_is_a_programming_error() -> None:
    reg: Registry[int] = Registry("thing")
    reg.add("a", 1)
    with pytest.raises(ValueError, match="thing a registered twice"):
        reg.add("a", 2)


def test_an_unknown_name_lists_the_known_ones() -> None:
    reg: Registry[int] = Registry("thing")
    reg.add("b", 1)
    reg.add("a", 2)
    with pytest.raises(UserError, match="unknown thing 'c'.*use one of a, b"):
        reg.get_or_raise("c")


def test_a_plugin_that_cannot_be_imported_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "_PLUGINS_LOADED", set(registry_module._PLUGINS_LOADED))
    with pytest.raises(UserError, match="BENCHSMITH_PLUGINS entry 'no_such_plugin_xyz' cannot be imported"):
        load_plugins("no_such_plugin_xyz")


def test_a_folder_without_init_is_a_user_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "_PLUGINS_LOADED", set(registry_module._PLUGINS_LOADED))
    with pytest.raises(UserError, match="has no __init__.py"):
        load_plugins(str(tmp_path))


def test_a_plugin_folder_registers_a_scorer_seen_by_the_cli(tmp_path: Path) -> None:
    plugin = tmp_path / "my_scorers"
    plugin.mkdir()
    (plugin / "__init__.py").write_text(
        "from benchsmith.eval import passed, scorer\n\n"
        "@scorer('my_always_right')\n"
        "def always_right(case, prediction, mode):\n"
        "    return passed(case)\n",
        encoding="utf-8",
    )
    code = "from benchsmith.eval.scoring import SCORERS; print('my_always_right' in SCORERS)"
    env_run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**_env(), "BENCHSMITH_PLUGINS": str(plugin)},
    )
    assert env_run.stdout.strip() == "True", env_run.stderr
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_env())
    assert plain.stdout.strip() == "False", plain.stderr


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "BENCHSMITH_PLUGINS"}


def test_a_category_scorer_is_used_by_registering_it_alone() -> None:
    from benchsmith.eval import EvalCase, get_benchmark, passed, score_cases
    from benchsmith.eval.scoring import SCORERS

    bench = get_benchmark("toolassess")
    case = EvalCase(id="c1", benchmark="toolassess", category="awareness", gold={"label": "requires_tool"})
    before = score_cases(bench, [case], {"c1": '"no_tool"'}, "strict").records[0]
    assert not before.ok  # the built-in awareness scorer: a wrong label

    def lenient(case, prediction, mode):  # noqa: ANN001, ANN202
        return passed(case, 1.0, via="override")

    SCORERS.add("toolassess:awareness", lenient)
    try:
        after = score_cases(bench, [case], {"c1": '"no_tool"'}, "strict").records[0]
    finally:
        del SCORERS["toolassess:awareness"]
    assert after.ok and after.details == {"via": "override"}
    again = score_cases(bench, [case], {"c1": '"no_tool"'}, "strict").records[0]
    assert not again.ok


@pytest.mark.parametrize("name", ["acebench", "bfcl", "teval", "gta", "toolassess", "nl2api", "agent"])
def test_scoring_imports_neither_the_runner_nor_the_model_client(name: str) -> None:
    """What only `eval run` or `eval derive` needs is imported on first use (the task, the derivers, the
    runner with asyncio, the chat client with langchain), and the task is still found by name."""
    heavy = [
        "benchsmith.eval._private.runner",
        "benchsmith.eval._private.episode",
        f"benchsmith.eval.{name}._task",
        "benchsmith.models._private.client",
        "asyncio",
        "langchain_core",
    ]
    code = (
        "import sys\nfrom benchsmith.eval import get_benchmark\n"
        f"get_benchmark({name!r})\nprint([m for m in {heavy!r} if m in sys.modules])\n"
        f"from benchsmith.eval import get_task\nprint(get_task({name!r}).__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", f"benchsmith.eval.{name}._task"], out.stdout + out.stderr
