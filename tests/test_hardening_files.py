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
        (
            b'{"input": "q", "output": [{"name": "f", "arguments": {}, "label": "$var_1"}]}\n{"input": "caf\xe9"}\n',
            ":2: not UTF-8 text",
        ),
        (
            b'[{"input": "q", "output": [{"name": "f", "arguments": {"n": ' + b"9" * 5000 + b"}}]}]",
            ":1 is not JSON (a number has more than 4300 digits)",
        ),
    ],
)
def test_nestful_data_that_cannot_be_read_is_one_red_line(tmp_path: Path, raw: bytes, where: str) -> None:
    from helpers import clean_env, console_script, one_error_line

    data = tmp_path / "nestful.jsonl"
    data.write_bytes(raw)
    preds = tmp_path / "preds.jsonl"
    preds.write_text("")
    proc = subprocess.run(
        [
            console_script(),
            "eval",
            "score",
            "--benchmark",
            "nl2api",
            "--data",
            str(data),
            "--predictions",
            str(preds),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    line = one_error_line(proc.stderr)
    assert f"{data}{where}" in line


# ---- issue 26: options that refuse bad values themselves, folders that cannot be written, manifests ----------
@pytest.mark.parametrize(
    "field, value",
    [
        ("timeout_s", float("nan")),
        ("timeout_s", float("inf")),
        ("timeout_s", 0),
        ("timeout_s", -5),
        ("workers", 0),
        ("tool_universe", float("nan")),
        ("tool_universe", 0),
        ("style", "soap"),
    ],
)
def test_build_options_refuse_bad_values_however_made(field: str, value: object) -> None:
    from dataclasses import replace

    from pydantic import ValidationError

    from benchsmith.construction.nl2api import BuildOptions

    for make in (lambda: BuildOptions(**{field: value}), lambda: replace(BuildOptions(), **{field: value})):
        with pytest.raises(ValidationError) as info:
            make()
        assert info.value.errors()[0]["loc"][0] == field
    opts = BuildOptions()
    with pytest.raises(ValidationError):
        setattr(opts, field, value)


@pytest.mark.parametrize(
    "field, value",
    [
        ("trials", 0),
        ("max_tokens", 0),
        ("step_budget", 0),
        ("max_turns", 0),
        ("max_steps", 0),
        ("max_tool_calls", -1),
        ("max_episode_tokens", 0),
        ("episode_wall_s", 0),
        ("episode_wall_s", float("inf")),
        ("trial_temperature", float("nan")),
        ("trial_temperature", -0.1),
    ],
)
def test_task_options_refuse_bad_values_however_made(field: str, value: object) -> None:
    from dataclasses import replace

    from pydantic import ValidationError

    from benchsmith.eval import TaskOptions

    for make in (lambda: TaskOptions(**{field: value}), lambda: replace(TaskOptions(), **{field: value})):
        with pytest.raises(ValidationError) as info:
            make()
        assert info.value.errors()[0]["loc"][0] == field


@pytest.mark.parametrize(
    "field, value",
    [
        ("timeout", float("inf")),
        ("timeout", float("nan")),
        ("requests_per_second", float("inf")),
        ("temperature", float("nan")),
        ("backoff_max", float("inf")),
    ],
)
def test_model_config_refuses_non_finite_numbers(field: str, value: float) -> None:
    from pydantic import ValidationError

    from benchsmith.models import ModelConfig

    with pytest.raises(ValidationError) as info:
        ModelConfig(name="m", **{field: value})
    assert info.value.errors()[0]["loc"][0] == field


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_below_one_is_refused_not_a_quiet_slice(limit: int, tmp_path: Path) -> None:
    """``items[:-1]`` drops the last item and ``[:0]`` all of them without a word: the library refuses both."""
    from benchsmith.annotation import Workspace
    from benchsmith.construction import run_graph

    with pytest.raises(UserError, match=f"limit.*{limit}"):
        run_graph("queries", [], tmp_path / "run", models=None, limit=limit)
    ws = Workspace(tmp_path / "ws")
    with pytest.raises(UserError, match=f"limit {limit}"):
        ws.load(tmp_path / "nowhere", limit)
    ws.close()
    assert not (tmp_path / "run").exists()


def test_check_out_dir_names_what_is_in_the_way(tmp_path: Path) -> None:
    from benchsmith.schemas import check_out_dir

    (tmp_path / "f").write_text("x")
    assert check_out_dir(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    cases = [(tmp_path / "f", "is an existing file"), (tmp_path / "f" / "a" / "b", f"{tmp_path / 'f'} is a file")]
    if Path("/proc").is_dir():
        cases.append((Path("/proc/benchsmith-no-such-folder/out"), "/proc"))
    for out, what in cases:
        with pytest.raises(UserError) as info:
            check_out_dir(out, "--out")
        assert str(info.value).startswith(f"--out {out}") and what in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]  # the probe folder is gone


def _tree(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers import build_slot_split, pair_lines

    return build_slot_split(tmp_path_factory.mktemp("issue26"), pair_lines()[:3])


@pytest.mark.parametrize(
    "raw", [b"\xff\xfe\x00binary\n", b'{"question": "caf\xe9?", "sql": "SELECT 1"}\n'], ids=["binary", "latin-1"]
)
def test_a_build_from_pairs_that_are_not_utf8_leaves_the_split_as_it_was(
    raw: bytes, built: Path, tmp_path: Path
) -> None:
    import shutil

    from benchsmith.construction.nl2api import build_split, chinook_db

    split = tmp_path / "split"
    shutil.copytree(built, split)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_bytes(raw)
    before = _tree(split)
    with pytest.raises(UserError, match="not UTF-8"):
        build_split(chinook_db(), pairs, split)
    assert _tree(split) == before
    with pytest.raises(UserError, match="not UTF-8"):
        build_split(chinook_db(), pairs, tmp_path / "new" / "split")
    assert not (tmp_path / "new").exists()


def test_bad_input_after_a_resumed_journal_keeps_what_was_done(built: Path, tmp_path: Path) -> None:
    """A sweep whose universe folder holds a foreign file fails at the swap, after converting: a pending
    journal this build started goes (the folder is as it was); one resumed from a killed build stays."""
    from benchsmith.construction.nl2api import BuildOptions, build_universes, chinook_db

    out = tmp_path / "sweep"
    (out / "universe-0.5").mkdir(parents=True)
    (out / "universe-0.5" / "notes.txt").write_text("mine")
    before = _tree(out)
    pairs = built.parent / "pairs.jsonl"
    with pytest.raises(UserError, match="notes.txt"):
        build_universes(chinook_db(), pairs, out, BuildOptions(), [0.5])
    assert _tree(out) == before

    class Killed(Exception):
        pass

    def die(_: int) -> None:
        raise Killed

    with pytest.raises(Killed):
        build_universes(chinook_db(), pairs, out, BuildOptions(progress=die), [0.5])
    pending = out / ".journal.pending.jsonl"
    assert len(pending.read_bytes().splitlines()) == 1 + 1  # the header and the pair finished before the kill
    with pytest.raises(UserError, match="notes.txt"):
        build_universes(chinook_db(), pairs, out, BuildOptions(), [0.5])
    assert len(pending.read_bytes().splitlines()) == 1 + 3  # resumed and finished: kept for the next run


@pytest.mark.parametrize(
    "text, where",
    [
        (b"[1, 2]", "wrong shape: Input should be a valid dictionary"),
        (b'{"name": "x"}', "wrong shape at version: Field required"),
        (b"{", "invalid JSON"),
    ],
)
def test_a_bad_manifest_is_refused_by_every_deriver_and_exporter(
    text: bytes, where: str, built: Path, tmp_path: Path
) -> None:
    import shutil

    from benchsmith.construction.nl2api import read_manifest
    from benchsmith.eval import DERIVERS, EXPORTERS

    assert read_manifest(built / "manifest.json").style == "slot"
    split = tmp_path / "split"
    shutil.copytree(built, split)
    (split / "manifest.json").write_bytes(text)
    for name, fn in [*DERIVERS.items(), *EXPORTERS.items()]:
        with pytest.raises(UserError) as info:
            fn(split, tmp_path / "out" / name)
        assert f"{split / 'manifest.json'}" in str(info.value) and where in str(info.value), name
    assert not (tmp_path / "out").exists()
