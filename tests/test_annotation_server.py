"""The local Label Studio server: a real server (its own venv, a template data dir), no mocks."""

from __future__ import annotations

import json
import os
import socket
import stat
import time
import urllib.error
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchsmith.annotation._private import server as ls
from benchsmith.cli._annotate import annotate_app
from benchsmith.models import procs
from benchsmith.schemas import RuntimeFault, UserError

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_external_server(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ls.ENV_URL, ls.ENV_API_KEY, ls.ENV_DATA_DIR, "BENCHSMITH_LS_PORT", "BENCHSMITH_LS_WAIT"):
        monkeypatch.delenv(name, raising=False)


def _cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(annotate_app, ["server", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


@pytest.mark.slow
def test_server_answers_with_its_admin_token(label_studio) -> None:
    assert ls.ls_healthy(label_studio.base_url)
    me = ls.whoami(label_studio.base_url, label_studio.token)
    assert me["email"] == ls.ADMIN_USER
    assert label_studio.base_url.startswith("http://127.0.0.1:")
    creds = Path(label_studio.info.credentials_file)
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
    state = ls.state_path(label_studio.data_dir).read_text(encoding="utf-8")
    assert label_studio.token not in state and json.loads(state)["pid"] == label_studio.pid
    assert label_studio.token not in Path(label_studio.info.log_path).read_text(errors="replace")
    assert label_studio.token not in repr(label_studio) and label_studio.token not in argv(label_studio.pid)
    # the SDK the project uses talks to it
    pytest.importorskip("label_studio_sdk")
    assert label_studio.client().users.whoami().email == ls.ADMIN_USER


def argv(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


@pytest.mark.slow
def test_second_start_reuses_the_running_server(label_studio) -> None:
    code, out = _cli("start", "--data-dir", str(label_studio.data_dir))
    assert code == 0, out
    assert out.splitlines()[0] == label_studio.base_url and "already running" in out
    code, out = _cli("status", "--data-dir", str(label_studio.data_dir))
    assert code == 0
    status = json.loads(out)
    assert status["running"] and status["status"] == "running"
    assert status["pid"] == label_studio.pid and status["url"] == label_studio.base_url
    assert status["credentials_file"].endswith(ls.CREDENTIALS_FILE)
    assert label_studio.token not in out
    with pytest.raises(UserError, match="not on port"):
        ls.start_label_studio(port=label_studio.info.port + 1, data_dir=label_studio.data_dir)


@pytest.mark.slow
def test_start_from_template_stop_and_restart(tmp_path: Path, label_studio) -> None:
    data_dir = tmp_path / "ws" / ".benchsmith" / "label-studio"
    outputs = []
    t0 = time.monotonic()
    code, out = _cli("start", "--data-dir", str(data_dir))
    outputs.append(out)
    assert code == 0, out
    print(f"Label Studio from the template: healthy in {time.monotonic() - t0:.1f} s")
    info = ls.label_studio_status(data_dir)
    assert info is not None and out.splitlines()[0] == info.url
    token = info.token()
    assert token != label_studio.token  # each data dir gets its own admin token
    assert ls.whoami(info.url, token)["email"] == ls.ADMIN_USER
    with pytest.raises(urllib.error.HTTPError):  # and the other server's token is refused
        ls.whoami(info.url, label_studio.token)
    code, out = _cli("status", "--data-dir", str(data_dir))
    outputs.append(out)
    assert code == 0 and json.loads(out)["pid"] == info.pid
    state_text = ls.state_path(data_dir).read_text(encoding="utf-8")

    code, out = _cli("stop", "--data-dir", str(data_dir))
    outputs.append(out)
    assert code == 0 and f"pid {info.pid}" in out
    assert not procs.pid_alive(info.pid)
    code, out = _cli("status", "--data-dir", str(data_dir))
    outputs.append(out)
    assert code == 0 and json.loads(out)["running"] is False and json.loads(out)["status"] == "not running"
    code, out = _cli("stop", "--data-dir", str(data_dir))
    assert code == 0 and "no Label Studio server running" in out

    # restart on the existing data dir: same credentials, comes up again
    t0 = time.monotonic()
    again = ls.start_label_studio(data_dir=data_dir)
    print(f"Label Studio restarted on its data dir: healthy in {time.monotonic() - t0:.1f} s")
    try:
        assert again.pid != info.pid and ls.whoami(again.url, token)["email"] == ls.ADMIN_USER
    finally:
        ls.stop_label_studio(data_dir)
    for text in [*outputs, state_text]:
        assert token not in text


@pytest.mark.slow
def test_existing_server_by_env_and_a_wrong_token(
    label_studio,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)  # no local server on ./.benchsmith/label-studio here: only the env counts
    monkeypatch.setenv(ls.ENV_URL, label_studio.base_url + "/")
    monkeypatch.setenv(ls.ENV_API_KEY, label_studio.token)
    access = ls.resolve_label_studio()
    assert access == (label_studio.base_url, label_studio.token, "env")
    assert label_studio.token not in repr(access)

    wrong = "0123456789abcdef-not-the-token"
    monkeypatch.setenv(ls.ENV_API_KEY, wrong)
    with pytest.raises(UserError) as err:
        ls.resolve_label_studio()
    assert ls.ENV_API_KEY in str(err.value) and "401" in str(err.value) and wrong not in str(err.value)

    # the local server is found through its data dir when the env is not set
    monkeypatch.delenv(ls.ENV_URL)
    monkeypatch.delenv(ls.ENV_API_KEY)
    assert ls.resolve_label_studio(label_studio.data_dir) == (label_studio.base_url, label_studio.token, "local")


@pytest.mark.slow
def test_failed_start_shows_the_log_without_the_token(tmp_path: Path, label_studio) -> None:
    data_dir = tmp_path / "broken"
    data_dir.mkdir()
    (data_dir / ls.DB_FILE).write_bytes(b"this is not a sqlite database" * 100)
    token = "tok" + os.urandom(8).hex()
    (data_dir / ls.CREDENTIALS_FILE).write_text(
        json.dumps({"username": ls.ADMIN_USER, "password": "pw", "token": token})
    )
    with pytest.raises(RuntimeFault) as err:
        ls.start_label_studio(data_dir=data_dir, wait=120)
    message = str(err.value)
    assert "server.log" in message and token not in message
    assert ls.label_studio_status(data_dir) is None


def test_no_server_and_no_env_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError, match="annotate server start"):
        ls.resolve_label_studio(tmp_path / "none")
    monkeypatch.setenv(ls.ENV_URL, "http://127.0.0.1:9")
    with pytest.raises(UserError, match=ls.ENV_API_KEY):
        ls.resolve_label_studio()
    monkeypatch.setenv(ls.ENV_API_KEY, "secret-value-1")
    with pytest.raises(UserError, match="cannot reach") as err:
        ls.resolve_label_studio()
    assert "secret-value-1" not in str(err.value)
    code, out = _cli("status", "--data-dir", str(tmp_path / "none"))
    assert code == 0 and json.loads(out) == {
        "running": False,
        "status": "not running",
        "data_dir": str(tmp_path / "none"),
        "state_file": str(tmp_path / "none.state.json"),
    }


def test_server_status_with_nothing_running_exits_0_and_says_not_running(tmp_path: Path) -> None:
    """Scripts read a non-zero exit as a failure: a server that is not running is an answer."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCHSMITH_", "LABEL_STUDIO_"))}
    r = subprocess.run(
        [sys.executable, "-m", "benchsmith.cli", "annotate", "server", "status", "--data-dir", str(tmp_path / "none")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "not running" in r.stdout and json.loads(r.stdout)["running"] is False and r.stderr == ""


def test_busy_port_and_bad_settings_are_user_errors(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(UserError, match="already in use"):
            ls.start_label_studio(port=port, data_dir=tmp_path / "ls")
    with pytest.raises(UserError, match="out of range"):
        ls.start_label_studio(port=70000, data_dir=tmp_path / "ls")
    code, out = _cli("start", "--port", "0", "--data-dir", str(tmp_path / "ls"))
    assert code == 2 and "out of range" in out


def test_child_environment_is_clean_and_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ls.NO_INHERIT:
        monkeypatch.setenv(name, "from-the-caller")
    monkeypatch.setenv("LABEL_STUDIO_HOST", "http://example.invalid")
    env = ls._child_env(tmp_path, {"username": "u@x", "password": "p", "token": "t"})
    assert not set(ls.NO_INHERIT) & set(env)
    assert "LABEL_STUDIO_HOST" not in env
    assert env["LABEL_STUDIO_USER_TOKEN"] == "t" and env["LABEL_STUDIO_BASE_DATA_DIR"] == str(tmp_path)
    assert {k: env[k] for k in ls.OFFLINE_ENV} == ls.OFFLINE_ENV
