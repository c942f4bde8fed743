"""Issue 12, the CLI part: machinery faults, bad --set values, bad ports, an --out that is a file and a build
that verifies nothing all end in one red line and a truthful exit code, never a traceback."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchsmith.cli import app
from helpers import ANSI, build_slot_split, clean_env, console_script, drop_benchsmith_env, one_error_line, pair_lines



def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in clean_env().items() if not k.startswith("OPENAI_")}
    return subprocess.run([console_script(), *args], capture_output=True, text=True, timeout=180, env=env,
                          stdin=subprocess.DEVNULL)


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    return one_error_line(proc.stderr)


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(autouse=True)
def _no_benchsmith_env(monkeypatch):
    drop_benchsmith_env(monkeypatch)


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_slot_split(tmp_path_factory.mktemp("hardening"), pair_lines()[:3])


# ---- 1. every RuntimeFault is one red line with exit 3 ------------------------------------------------------
def test_runtime_fault_is_one_red_line_with_exit_3(split, tmp_path, monkeypatch):
    import benchsmith.eval as beval
    from benchsmith.schemas import RuntimeFault

    def broken(*args, **kwargs):
        raise RuntimeFault("the endpoint failed 5 times in a row; re-run the same command to resume")

    monkeypatch.setattr(beval, "run_selftest", broken)
    result = CliRunner().invoke(app, ["eval", "selftest", "--benchmark", "nl2api", "--data", str(split),
                                      "--out", str(tmp_path / "st")])
    assert not isinstance(result.exception, RuntimeFault), "the RuntimeFault escaped the CLI (a traceback)"
    assert result.exit_code == 3, result.output
    out = ANSI.sub("", result.output)
    assert "Traceback" not in out
    assert "error:" in out and "the endpoint failed 5 times in a row" in out


# ---- 2. construct --set with a value of the wrong type ---------------------------------------------------
@pytest.mark.parametrize("setting, option", [("n=abc", "n"), ("k=2.5x", "k")])
def test_construct_set_with_a_bad_value_is_one_red_line(setting, option, split, tmp_path):
    proc = _run("construct", "queries", str(split), "--out", str(tmp_path / "q"), "--model", "m",
                "--base-url", "http://127.0.0.1:9/v1", "--set", setting)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc)
    assert f"--set {option}" in line and "integer" in line and "fix" in line, line
    assert not (tmp_path / "q" / "samples.jsonl").exists()


# ---- 3. nl2api serve --port out of range -----------------------------------------------------------------
@pytest.fixture(scope="module")
def rest_split(split: Path) -> Path:
    from benchsmith.construction.nl2api import BuildOptions, build_split, chinook_db

    out = split.parent / "rest"
    assert build_split(chinook_db(), split.parent / "pairs.jsonl", out, BuildOptions(style="rest"))["verified"] == 3
    return out


@pytest.mark.parametrize("port", ["99999", "0"])
def test_serve_rejects_a_port_out_of_range(port, rest_split):
    proc = _run("nl2api", "serve", str(rest_split), "--port", port)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc)
    assert "--port" in line and port in line and "65535" in line, line


# ---- 4. --out that is an existing regular file is refused up front -----------------------------------------
def _commands(split: Path, tmp: Path, out: Path) -> dict[str, list[str]]:
    predictions = tmp / "predictions.jsonl"
    predictions.write_text("", "utf-8")
    return {
        "eval score": ["eval", "score", "--benchmark", "nl2api", "--data", str(split), "--predictions",
                       str(predictions), "--out", str(out)],
        "eval selftest": ["eval", "selftest", "--benchmark", "nl2api", "--data", str(split), "--out", str(out)],
        "eval derive": ["eval", "derive", "--split", str(split), "--out", str(out)],
        "eval export": ["eval", "export", "--split", str(split), "--format", "bfcl", "--out", str(out)],
        "nl2api build": ["nl2api", "build", "--db", str(split / "database.sqlite"), "--pairs",
                         str(split.parent / "pairs.jsonl"), "--out", str(out)],
    }


@pytest.mark.parametrize("command", ["eval score", "eval selftest", "eval derive", "eval export", "nl2api build"])
def test_out_that_is_a_file_is_refused_up_front(command, split, tmp_path):
    out = tmp_path / "taken.txt"
    out.write_text("keep me\n", "utf-8")
    proc = _run(*_commands(split, tmp_path, out)[command])
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc)
    assert "--out" in line and str(out) in line and "file" in line, line
    assert out.read_text("utf-8") == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["predictions.jsonl", "taken.txt"]


# ---- 5. a build that verifies nothing leaves an existing split alone ----------------------------------------
@pytest.mark.parametrize("pairs", ["empty", "devnull", "all_rejected"])
def test_build_that_verifies_nothing_keeps_the_existing_split(pairs, split, tmp_path):
    out = tmp_path / "split"
    good = _run("nl2api", "build", "--db", str(split / "database.sqlite"), "--pairs", str(split.parent / "pairs.jsonl"),
                "--out", str(out))
    assert good.returncode == 0, good.stderr
    before = _tree(out)
    assert before["samples.jsonl"] and (out / "samples.jsonl").stat().st_size > 0
    source = {"empty": tmp_path / "empty.jsonl", "devnull": Path(os.devnull), "all_rejected": tmp_path / "bad.jsonl"}[pairs]
    if pairs == "empty":
        source.write_text("", "utf-8")
    elif pairs == "all_rejected":
        source.write_text(json.dumps({"id": "x", "question": "Drop", "sql": "DELETE FROM tracks"}) + "\n"
                          + json.dumps({"id": "y", "question": "?", "sql": "SELECT nope FROM tracks"}) + "\n", "utf-8")
    proc = _run("nl2api", "build", "--db", str(split / "database.sqlite"), "--pairs", str(source), "--out", str(out))
    assert proc.returncode != 0
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc)
    assert "nothing verified" in line and str(out) in line, line
    assert _tree(out) == before
