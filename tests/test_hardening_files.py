"""Issue 12: files written by a killed process and JSON documents of the wrong shape."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchsmith.schemas import UserError, read_json, write_json, write_jsonl


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temp_of_a_killed_writer_is_removed_on_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "scores.json"
    stale = tmp_path / f".scores.json.{_dead_pid()}.abc123.tmp"
    stale.write_text('{"half": ')
    legacy = tmp_path / ".scores.json.k3j_9x.tmp"  # written before temp names carried a pid
    legacy.write_text("[")
    other = tmp_path / f".other.json.{_dead_pid()}.x.tmp"  # belongs to another file: kept
    other.write_text("")
    write_json(target, {"ok": True})
    assert read_json(target) == {"ok": True}
    assert not stale.exists() and not legacy.exists()
    assert other.exists()


def test_temp_of_a_live_writer_is_left_alone(tmp_path: Path) -> None:
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        busy = tmp_path / f".rows.jsonl.{live.pid}.zz.tmp"
        busy.write_text("")
        write_jsonl(tmp_path / "rows.jsonl", [{"a": 1}])
        assert busy.exists()
    finally:
        live.kill()
        live.wait()
    write_jsonl(tmp_path / "rows.jsonl", [{"a": 2}])
    assert not busy.exists()


def test_killed_atomic_write_leaves_old_file_and_next_write_cleans_up(tmp_path: Path) -> None:
    target = tmp_path / "big.jsonl"
    write_jsonl(target, [{"i": 0}])
    code = (
        "import os, sys\n"
        "from benchsmith.schemas import write_jsonl\n"
        "def rows():\n"
        "    for i in range(10**9):\n"
        "        if i == 1000: os.kill(os.getpid(), 9)\n"
        "        yield {'i': i}\n"
        f"write_jsonl({str(target)!r}, rows())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], check=False)
    assert proc.returncode == -9
    leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers, "the killed writer should have left its temp file"
    assert target.read_text() == '{"i": 0}\n'
    write_jsonl(target, [{"i": 1}])
    assert [p.name for p in tmp_path.iterdir()] == ["big.jsonl"]


@pytest.mark.parametrize(
    ("text", "shape", "where"),
    [
        ('["a"]', dict[str, dict[str, str]], "wrong shape: Input should be a valid dictionary"),
        ('{"t": {"c": 1}}', dict[str, dict[str, str]], "wrong shape at t.c: Input should be a valid string"),
        ('{"t": "x"}', dict[str, dict[str, str]], "wrong shape at t: Input should be a valid dictionary"),
    ],
)
def test_wrong_shape_names_file_and_place(tmp_path: Path, text: str, shape: object, where: str) -> None:
    path = tmp_path / "d.json"
    path.write_text(text)
    with pytest.raises(UserError) as info:
        read_json(path, shape, fix="give an object of tables")
    assert str(info.value) == f"{path}: {where} (fix: give an object of tables)"


def test_pid_in_temp_name_is_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        seen.append(Path(src).name)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    write_json(tmp_path / "x.json", [])
    assert seen and seen[0].startswith(f".x.json.{os.getpid()}.")


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        (b'{"input": "q", "output": [{"name": "f", "arguments": {}, "label": "$var_1"}]}\n{"input": "caf\xe9"}\n',
         ":2: not UTF-8 text"),
        (b'[{"input": "q", "output": [{"name": "f", "arguments": {"n": ' + b"9" * 5000 + b"}}]}]",
         ":1 is not JSON (a number has more than 4300 digits)"),
    ],
)
def test_nestful_data_that_cannot_be_read_is_one_red_line(tmp_path: Path, raw: bytes, where: str) -> None:
    from helpers import clean_env, console_script, one_error_line

    data = tmp_path / "nestful.jsonl"
    data.write_bytes(raw)
    preds = tmp_path / "preds.jsonl"
    preds.write_text("")
    proc = subprocess.run([console_script(), "eval", "score", "--benchmark", "nl2api", "--data", str(data),
                           "--predictions", str(preds), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env=clean_env(), timeout=120)
    assert proc.returncode == 2, proc.stderr
    line = one_error_line(proc.stderr)
    assert f"{data}{where}" in line
