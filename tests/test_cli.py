"""The ``benchsmith`` command: help, build, errors as one line with exit 2, env vars, schema export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import clean_env, console_script, drop_benchsmith_env, one_error_line
from typer.testing import CliRunner

from benchsmith.cli import app
from benchsmith.construction.nl2api import chinook_db

# Two good pairs and six rejected rows of different kinds.
TINY = [
    json.dumps({"id": "ok-1", "question": "How many genres are there?", "sql": "SELECT COUNT(*) FROM genres"}),
    json.dumps(
        {
            "id": "ok-2",
            "question": "Which customers live in Brazil?",
            "sql": "SELECT first_name, last_name FROM customers WHERE country = 'Brazil'",
        }
    ),
    json.dumps(
        {
            "id": "empty",
            "question": "Which customers live on Mars?",
            "sql": "SELECT first_name FROM customers WHERE country = 'Mars'",
        }
    ),
    json.dumps({"id": "delete", "question": "Drop all tracks", "sql": "DELETE FROM tracks"}),
    json.dumps({"id": "nocol", "question": "Broken", "sql": "SELECT nope FROM tracks"}),
    json.dumps({"id": "ok-1", "question": "Again", "sql": "SELECT COUNT(*) FROM genres"}),
    json.dumps({"question": ""}),
    "not json",
]


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(**env),
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(autouse=True)
def _no_benchsmith_env(monkeypatch):
    drop_benchsmith_env(monkeypatch)


@pytest.fixture(scope="module")
def db() -> Path:
    return Path(chinook_db())


@pytest.fixture
def tiny_pairs(tmp_path) -> Path:
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(TINY) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------------ help ----


def test_help_in_process():
    result = CliRunner().invoke(app, ["--help"], prog_name="benchsmith")
    assert result.exit_code == 0, result.output
    for command in ("nl2api", "schemas", "demo"):
        assert command in result.stdout
    result = CliRunner().invoke(app, ["nl2api", "build", "--help"], prog_name="benchsmith")
    assert result.exit_code == 0
    for option in ("--db", "--pairs", "--style", "--out", "BENCHSMITH_DB", "BENCHSMITH_STYLE"):
        assert option in result.stdout


def test_help_as_a_command():
    res = _run("--help")
    assert res.returncode == 0, res.stderr
    assert "Usage" in res.stdout and "nl2api" in res.stdout
    assert res.stderr == ""


def test_help_does_not_import_the_heavy_modules():
    """What keeps ``--help`` instant: the library, FastAPI, uvicorn and sqlglot load in the commands."""
    code = (
        "import sys\nfrom benchsmith.cli import app\n"
        "try:\n    app(['--help'], prog_name='benchsmith')\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
        "heavy = ['fastapi', 'uvicorn', 'sqlglot', 'starlette', 'benchsmith.construction', 'benchsmith.schemas']\n"
        "print('LOADED', [m for m in heavy if m in sys.modules])\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=clean_env())
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "LOADED []"


# ----------------------------------------------------------------------- build ----


def _check_split(out: Path, style: str, total: int, verified: int) -> dict:
    for name in ("samples.jsonl", "tools.json", "report.json", "manifest.json"):
        assert (out / name).is_file(), name
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert {"total", "verified", "rejected"} <= set(report)
    assert report["style"] == style
    assert report["total"] == total and report["verified"] == verified
    assert sum(report["rejected"].values()) == total - verified
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines() if line]
    assert len(samples) == verified
    assert all(style in s["categories"] for s in samples)
    assert isinstance(json.loads((out / "tools.json").read_text(encoding="utf-8")), list)
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["extra"]["style"] == style
    return report


def test_build_with_rejections_exits_0(db, tiny_pairs, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["nl2api", "build", "--db", str(db), "--pairs", str(tiny_pairs), "--out", str(out)], prog_name="benchsmith"
    )
    assert result.exit_code == 0, result.output
    report = _check_split(out, "slot", total=len(TINY), verified=2)
    assert report["rejected"] == {
        "duplicate_id": 1,
        "empty_result": 1,
        "invalid_row": 2,
        "not_select": 1,
        "unknown_column": 1,
    }
    assert {r["line"] for r in report["rejections"]} == {3, 4, 5, 6, 7, 8}
    assert "2/8 verified" in " ".join(result.stdout.split())


def test_build_as_a_command_exits_0(db, tiny_pairs, tmp_path):
    out = tmp_path / "out"
    res = _run("nl2api", "build", "--db", str(db), "--pairs", str(tiny_pairs), "--out", str(out), "--style", "rest")
    assert res.returncode == 0, res.stderr
    _check_split(out, "rest", total=len(TINY), verified=2)
    assert (out / "endpoints.json").is_file()


def test_style_from_environment(db, tiny_pairs, tmp_path):
    out = tmp_path / "sel"
    result = CliRunner().invoke(
        app,
        ["nl2api", "build", "--db", str(db), "--pairs", str(tiny_pairs), "--out", str(out)],
        env={"BENCHSMITH_STYLE": "sel"},
        prog_name="benchsmith",
    )
    assert result.exit_code == 0, result.output
    _check_split(out, "sel", total=len(TINY), verified=2)
    # SEL tools are column- and operator-bound, unlike the 13 generic SLOT tools
    sample = json.loads((out / "samples.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert any(t["name"].startswith("get_") for t in sample["tools"])
    # the option still wins over the variable
    out2 = tmp_path / "rest"
    result = CliRunner().invoke(
        app,
        ["nl2api", "build", "--db", str(db), "--pairs", str(tiny_pairs), "--out", str(out2), "--style", "rest"],
        env={"BENCHSMITH_STYLE": "sel"},
    )
    assert result.exit_code == 0, result.output
    _check_split(out2, "rest", total=len(TINY), verified=2)


def test_build_from_environment_only(db, tiny_pairs, tmp_path):
    out = tmp_path / "env"
    res = _run(
        "nl2api",
        "build",
        BENCHSMITH_DB=str(db),
        BENCHSMITH_PAIRS=str(tiny_pairs),
        BENCHSMITH_OUT=str(out),
        BENCHSMITH_STYLE="sel",
        BENCHSMITH_SPLIT_NAME="from-env",
    )
    assert res.returncode == 0, res.stderr
    _check_split(out, "sel", total=len(TINY), verified=2)
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["name"] == "from-env"


# ---------------------------------------------------------------------- errors ----


def _build_args(db: Path, pairs: Path, out: Path, *extra: str) -> list[str]:
    return ["nl2api", "build", "--db", str(db), "--pairs", str(pairs), "--out", str(out), *extra]


def test_missing_db_is_one_line_and_exit_2(tiny_pairs, tmp_path):
    # a long path: the message must stay on one line however narrow the terminal
    missing = tmp_path / ("no-such-database-" * 8) / "chinook.sqlite"
    res = _run(*_build_args(missing, tiny_pairs, tmp_path / "out"), COLUMNS="40")
    assert res.returncode == 2
    line = one_error_line(res.stderr)
    assert str(missing) in line
    assert not (tmp_path / "out").exists()


def test_unreadable_pairs_is_one_line_and_exit_2(db, tmp_path):
    for pairs in (tmp_path / "missing.jsonl", tmp_path):  # no such file; a directory
        res = _run(*_build_args(db, pairs, tmp_path / "out"))
        assert res.returncode == 2, (pairs, res.stderr)
        assert str(pairs) in one_error_line(res.stderr)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_pairs_without_read_permission(db, tiny_pairs, tmp_path):
    tiny_pairs.chmod(0)
    try:
        res = _run(*_build_args(db, tiny_pairs, tmp_path / "out"))
    finally:
        tiny_pairs.chmod(0o644)
    assert res.returncode == 2
    one_error_line(res.stderr)


def test_invalid_style_is_one_line_and_exit_2(db, tiny_pairs, tmp_path):
    res = _run(*_build_args(db, tiny_pairs, tmp_path / "out", "--style", "soap"))
    assert res.returncode == 2
    assert "soap" in one_error_line(res.stderr)
    res = _run(*_build_args(db, tiny_pairs, tmp_path / "out"), BENCHSMITH_STYLE="soap")
    assert res.returncode == 2
    one_error_line(res.stderr)


def test_errors_with_clirunner(db, tiny_pairs, tmp_path):
    runner = CliRunner()
    cases = [
        _build_args(tmp_path / "none.sqlite", tiny_pairs, tmp_path / "o1"),
        _build_args(db, tmp_path / "none.jsonl", tmp_path / "o2"),
        _build_args(db, tiny_pairs, tmp_path / "o3", "--style", "xml"),
    ]
    for args in cases:
        result = runner.invoke(app, args, prog_name="benchsmith")
        assert result.exit_code == 2, (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr


# --------------------------------------------------------------------- options ----


def _walk(command, path=("benchsmith",)):
    yield path, command
    for name, sub in (getattr(command, "commands", None) or {}).items():
        yield from _walk(sub, (*path, name))


# Typer's own shell-completion switches on the root command; not the project's options.
_TYPER_OWN = {"install_completion", "show_completion"}


def test_every_option_has_an_envvar():
    import typer

    root = typer.main.get_command(app)
    seen = []
    for path, command in _walk(root):
        for param in command.params:
            if getattr(param, "param_type_name", None) != "option" or param.name in _TYPER_OWN:
                continue
            if getattr(param, "hidden", False):  # an old spelling kept for one release, not a setting
                continue
            seen.append((" ".join(path), param.name))
            envvar = param.envvar
            assert envvar, f"{' '.join(path)} {param.opts[0]} has no envvar"
            for name in [envvar] if isinstance(envvar, str) else envvar:
                assert name.startswith("BENCHSMITH_"), name
    commands = {p for p, _ in seen}
    assert {"benchsmith nl2api build", "benchsmith nl2api serve", "benchsmith demo"} <= commands
    assert len(seen) >= 12


def test_envvars_are_distinct_per_command():
    import typer

    for path, command in _walk(typer.main.get_command(app)):
        names = [p.envvar for p in command.params if getattr(p, "param_type_name", None) == "option" and p.envvar]
        assert len(names) == len(set(names)), path


# --------------------------------------------------------------------- schemas ----


def test_schemas_export(tmp_path):
    out = tmp_path / "schemas"
    result = CliRunner().invoke(app, ["schemas", "export", str(out)], prog_name="benchsmith")
    assert result.exit_code == 0, result.output
    files = sorted(out.glob("*.schema.json"))
    assert len(files) >= 5
    assert {"Sample.schema.json", "Tool.schema.json", "ToolCall.schema.json"} <= {f.name for f in files}
    assert sorted(Path(line) for line in result.stdout.split()) == files
    for f in files:
        schema = json.loads(f.read_text(encoding="utf-8"))
        assert isinstance(schema, dict) and (
            "properties" in schema or "oneOf" in schema or "anyOf" in schema or "$defs" in schema
        ), f.name


def test_schemas_export_as_a_command(tmp_path):
    res = _run("schemas", "export", str(tmp_path / "s"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "s" / "Sample.schema.json").is_file()


def test_no_args_shows_help_and_fails():
    res = _run()
    assert res.returncode != 0
    assert "Usage" in res.stdout + res.stderr


def test_a_command_that_used_a_local_model_says_its_server_still_runs(tmp_path, monkeypatch, capsys):
    """`eval run` and `construct` end with one line per local model server they started and leave
    running, and how to stop it."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from benchsmith.cli._model import note_started_servers, running_server_pids

    class Health(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"status": "ok"}')

        def log_message(self, *args):  # noqa: ANN002
            pass

    monkeypatch.setenv("BENCHSMITH_MODEL_STATE_DIR", str(tmp_path / "state"))
    before = running_server_pids()
    note_started_servers(before)
    assert before == set() and capsys.readouterr().err == ""  # nothing runs: nothing said
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        folder = tmp_path / "state" / "qwen2.5-coder-0.5b"
        folder.mkdir(parents=True)
        (folder / "server.json").write_text(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "port": httpd.server_address[1],
                    "url": url,
                    "model": "qwen2.5-coder-0.5b",
                    "model_path": "/x/q.gguf",
                    "started_at": "now",
                }
            )
        )
        note_started_servers(before)  # started since `before`: said
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "qwen2.5-coder-0.5b" in err[0] and url in err[0]
        assert "still running" in err[0] and "`benchsmith model stop`" in err[0]
        note_started_servers(running_server_pids())  # already running before the command: not its doing
        assert capsys.readouterr().err == ""
    finally:
        httpd.shutdown()
