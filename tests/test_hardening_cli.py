"""Issue 12, the CLI part: machinery faults, bad --set values, bad ports, an --out that is a file and a build
that verifies nothing all end in one red line and a truthful exit code, never a traceback. Issue 26: every
command's output paths, numbers and split manifests are checked before anything is written
(tests/fixtures/cli/bad_input.jsonl), and a failed build leaves an existing split as it was."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import ANSI, build_slot_split, clean_env, console_script, drop_benchsmith_env, one_error_line, pair_lines
from typer.testing import CliRunner

from benchsmith.cli import app


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in clean_env().items() if not k.startswith("OPENAI_")}
    return subprocess.run(
        [console_script(), *args], capture_output=True, text=True, timeout=180, env=env, stdin=subprocess.DEVNULL
    )


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    return one_error_line(proc.stderr)


def _tree(folder: Path) -> dict[str, str]:
    """Every file (its bytes' hash) and folder under ``folder``: an empty folder left behind shows too."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
        for p in sorted(folder.rglob("*"))
    }


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
    result = CliRunner().invoke(
        app, ["eval", "selftest", "--benchmark", "nl2api", "--data", str(split), "--out", str(tmp_path / "st")]
    )
    assert not isinstance(result.exception, RuntimeFault), "the RuntimeFault escaped the CLI (a traceback)"
    assert result.exit_code == 3, result.output
    out = ANSI.sub("", result.output)
    assert "Traceback" not in out
    assert "error:" in out and "the endpoint failed 5 times in a row" in out


# ---- 2. construct --set with a value of the wrong type ---------------------------------------------------
@pytest.mark.parametrize(
    "setting, option, says",
    [
        ("n=abc", "n", "integer"),
        ("k=2.5x", "k", "integer"),
        ("n=true", "n", "integer"),
        ("k=0", "k", "greater than or equal to 1"),
        ("strategy=close", "strategy", "'random' or 'related'"),
        ("step_budjet=8", "step_budjet", "no option 'step_budjet'"),
    ],
)
def test_construct_set_with_a_bad_value_is_one_red_line(setting, option, says, split, tmp_path):
    proc = _run(
        "construct",
        "queries",
        str(split),
        "--out",
        str(tmp_path / "q"),
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--set",
        setting,
    )
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc)
    assert f"--set {option}" in line and says in line and "fix" in line, line
    if option == "step_budjet":  # a misspelled key names the keys there are
        assert "choose from n, k, strategy, draw_seed" in line, line
    assert not (tmp_path / "q").exists()  # refused before anything was written


def test_construct_help_lists_the_graphs_options():
    proc = _run("construct", "chains", "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "step_budget (6): tool calls an item may make" in text and "max_retries (2)" in text, text
    assert "environment (none)" in text, text


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
        "eval score": [
            "eval",
            "score",
            "--benchmark",
            "nl2api",
            "--data",
            str(split),
            "--predictions",
            str(predictions),
            "--out",
            str(out),
        ],
        "eval selftest": ["eval", "selftest", "--benchmark", "nl2api", "--data", str(split), "--out", str(out)],
        "eval derive": ["eval", "derive", "--split", str(split), "--out", str(out)],
        "eval export": ["eval", "export", "--split", str(split), "--to", "bfcl", "--out", str(out)],
        "nl2api build": [
            "nl2api",
            "build",
            "--db",
            str(split / "database.sqlite"),
            "--pairs",
            str(split.parent / "pairs.jsonl"),
            "--out",
            str(out),
        ],
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
    good = _run(
        "nl2api",
        "build",
        "--db",
        str(split / "database.sqlite"),
        "--pairs",
        str(split.parent / "pairs.jsonl"),
        "--out",
        str(out),
    )
    assert good.returncode == 0, good.stderr
    before = _tree(out)
    assert before["samples.jsonl"] and (out / "samples.jsonl").stat().st_size > 0
    source = {"empty": tmp_path / "empty.jsonl", "devnull": Path(os.devnull), "all_rejected": tmp_path / "bad.jsonl"}[
        pairs
    ]
    if pairs == "empty":
        source.write_text("", "utf-8")
    elif pairs == "all_rejected":
        source.write_text(
            json.dumps({"id": "x", "question": "Drop", "sql": "DELETE FROM tracks"})
            + "\n"
            + json.dumps({"id": "y", "question": "?", "sql": "SELECT nope FROM tracks"})
            + "\n",
            "utf-8",
        )
    proc = _run("nl2api", "build", "--db", str(split / "database.sqlite"), "--pairs", str(source), "--out", str(out))
    assert proc.returncode != 0
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc)
    assert "nothing verified" in line and str(out) in line, line
    assert _tree(out) == before


# ---- 6. issue 26: bad paths, numbers and manifests, one case per line of tests/fixtures/cli/bad_input.jsonl ---
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BAD_INPUT = [
    json.loads(line) for line in (FIXTURES / "cli" / "bad_input.jsonl").read_text("utf-8").splitlines() if line.strip()
]
UNWRITABLE = "/proc/benchsmith-no-such-folder/out"  # /proc takes no new folders, not even from root


@pytest.fixture(scope="module")
def workspace(split: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the cases point at: a good split, its pairs, a file, pairs that are not UTF-8, splits whose
    manifest is a JSON list or an object that is no split manifest, a sweep folder holding a foreign file."""
    import shutil

    ws = tmp_path_factory.mktemp("bad-input")
    shutil.copytree(split, ws / "split")
    shutil.copyfile(split.parent / "pairs.jsonl", ws / "pairs.jsonl")
    (ws / "file.txt").write_text("keep me\n", "utf-8")
    (ws / "predictions.jsonl").write_text("", "utf-8")
    (ws / "binary.jsonl").write_bytes(b"\xff\xfe\x00\x01binary\n")
    (ws / "latin1.jsonl").write_bytes(
        pair_lines()[0].encode() + b"\n" + '{"question": "Caf\u00e9 au lait?", "sql": "SELECT 1"}\n'.encode("latin-1")
    )
    for name, manifest in (("list-manifest", b"[1, 2]\n"), ("object-manifest", b'{"name": "x"}\n')):
        shutil.copytree(split, ws / name)
        (ws / name / "manifest.json").write_bytes(manifest)
    (ws / "sweep" / "universe-0.5").mkdir(parents=True)
    (ws / "sweep" / "universe-0.5" / "notes.txt").write_text("mine\n", "utf-8")
    return ws


@pytest.mark.parametrize("case", BAD_INPUT, ids=[c["id"] for c in BAD_INPUT])
def test_bad_input_is_one_red_line_and_changes_nothing(case, workspace, tmp_path, monkeypatch):
    if "{unwritable}" in json.dumps(case) and not Path("/proc").is_dir():
        pytest.skip("needs /proc")
    from benchsmith.construction.nl2api import chinook_db

    monkeypatch.setenv("BENCHSMITH_MODEL_STATE_DIR", str(tmp_path / "model-state"))  # never a real server's
    values = {
        "db": str(chinook_db()),
        "pairs": str(workspace / "pairs.jsonl"),
        "split": str(workspace / "split"),
        "file": str(workspace / "file.txt"),
        "new": str(workspace / f"new-{case['id']}"),
        "unwritable": UNWRITABLE,
        "binary": str(workspace / "binary.jsonl"),
        "latin1": str(workspace / "latin1.jsonl"),
        "predictions": str(workspace / "predictions.jsonl"),
        "list_manifest": str(workspace / "list-manifest"),
        "object_manifest": str(workspace / "object-manifest"),
        "sweep": str(workspace / "sweep"),
        "seed_tools": str(FIXTURES / "construct" / "seed_tools.json"),
    }
    argv = [a.format(**values) for a in case["argv"]]
    before = _tree(workspace)
    result = CliRunner().invoke(app, argv, prog_name="benchsmith")
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"a traceback: {type(result.exception).__name__}: {result.exception}"
    )
    assert result.exit_code == case["exit"], result.output
    assert "Traceback" not in result.output
    line = one_error_line(result.stderr)
    assert case["message"].format(**values) in line, line
    assert _tree(workspace) == before, "the command changed files it was given or left something behind"
    assert not Path(UNWRITABLE).parent.exists()


# every number a command takes is checked (or is a seed: any whole number)
SURVEYED = {"nl2api", "demo", "schemas", "eval", "report", "model", "construct", "annotate", "tools", "serve"}


def _number_type(param):
    """Whether a typer option takes an int or a float (typer < 0.29: its click type's name)."""
    return getattr(param.type, "name", None) in ("int", "float")


def test_every_number_option_has_a_bad_input_case():
    import typer

    root = typer.main.get_command(app)
    paths: set[tuple[str, ...]] = set()

    def commands(command, path):
        paths.add(path)
        for name, sub in (getattr(command, "commands", None) or {}).items():
            commands(sub, (*path, name))

    commands(root, ())
    # (command, option under test) of every case: the command is the longest command path the argv starts
    # with; the option is the case's "option", else its message's first word
    covered = set()
    for c in BAD_INPUT:
        words = max((p for p in paths if tuple(c["argv"][: len(p)]) == p), key=len)
        covered.add((words, c.get("option") or c["message"].split()[0]))
    numbers, missing = [], []

    def walk(command, path):
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, (*path, name))
        for param in getattr(command, "params", []):
            if (
                path
                and path[0] in SURVEYED
                and param.param_type_name == "option"
                and _number_type(param)
                and param.opts[0] != "--seed"
            ):
                numbers.append((path, param.opts[0]))
                if (path, param.opts[0]) not in covered:
                    missing.append(f"{' '.join(path)} {param.opts[0]}")

    walk(root, ())
    assert len(numbers) >= 34, numbers  # the walk finds them
    assert not missing, f"number options without a case in bad_input.jsonl: {missing}"
