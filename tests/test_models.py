"""benchsmith.models: the chat client's retries, faults and reply parsing against a real scripted HTTP server.

The server below is a real ``ThreadingHTTPServer`` on 127.0.0.1 that answers
``/v1/chat/completions`` from a script of (status, body, headers, delay) entries, so the client
talks HTTP through langchain-openai, openai and httpx exactly as it would to a real endpoint.
"""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import socket
import time

import pytest
from fake_openai import FakeEndpoint, completion, config
from pydantic import ValidationError

from benchsmith.models import DEFAULT_LOCAL_MODEL, ModelClient, ModelConfig, Reply, TransportError, resolve_model
from benchsmith.schemas import RuntimeFault, UserError

SECRET = "sk-test-0123456789abcdefSECRET"


@pytest.fixture
def endpoint():
    fake = FakeEndpoint()
    yield fake
    fake.close()


@pytest.fixture(autouse=True)
def _fake_key(monkeypatch):
    monkeypatch.setenv("BENCHSMITH_TEST_KEY", SECRET)


USER = [{"role": "user", "content": "hi"}]


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- success and parsing ---------------------------------------------------------------------------


def test_plain_reply_and_request_shape(endpoint):
    reply = ModelClient(config(endpoint.url, temperature=0.0, max_tokens=33, seed=5)).complete(
        [{"role": "system", "content": "be brief"}, *USER], stop=["\n"]
    )
    assert isinstance(reply, Reply)
    assert (reply.text, reply.finish_reason, reply.attempts) == ("hello", "stop", 1)
    assert reply.usage == {"prompt_tokens": 11, "completion_tokens": 5}
    assert reply.tool_calls == [] and reply.raw == {"role": "assistant", "content": "hello"}
    assert reply.latency_s > 0
    (req,) = endpoint.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["auth"] == f"Bearer {SECRET}"  # the key is read from $api_key_env at call time
    body = req["body"]
    assert body["model"] == "test-model"
    assert body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert body["temperature"] == 0.0 and body["seed"] == 5 and body["stop"] == ["\n"]
    assert body["max_completion_tokens"] == 33
    assert "tools" not in body and "response_format" not in body
    json.dumps(reply.to_dict())  # JSON-able


def test_per_call_max_tokens(endpoint):
    ModelClient(config(endpoint.url, max_tokens=33)).complete(USER, max_tokens=7)
    assert endpoint.requests[0]["body"]["max_completion_tokens"] == 7


def test_history_with_tool_calls_and_null_content_is_sent_as_openai_messages(endpoint):
    history = [
        {"role": "user", "content": "weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {
            "role": "assistant",
            "content": "ok",
            "tool_calls": [{"id": "c2", "name": "get_time", "arguments": {"tz": "CET"}}],
        },
        {"role": "tool", "tool_call_id": "c2", "content": {"time": "12:00"}},
        {"role": "user", "content": "and London?"},
    ]
    ModelClient(config(endpoint.url)).complete(history)
    sent = endpoint.requests[0]["body"]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "tool", "user"]
    assert sent[1]["content"] == ""  # never null: some servers crash on it
    assert sent[1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert sent[2]["tool_call_id"] == "c1" and sent[2]["content"] == "sunny"
    assert json.loads(sent[3]["tool_calls"][0]["function"]["arguments"]) == {"tz": "CET"}
    assert json.loads(sent[4]["content"]) == {"time": "12:00"}


def test_tools_and_json_schema_are_sent(endpoint):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather of a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            },
        }
    ]
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    ModelClient(config(endpoint.url)).complete(USER, tools=tools, json_schema=schema, tool_choice="required")
    body = endpoint.requests[0]["body"]
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert body["tool_choice"] == "required"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": schema, "strict": True},
    }


def test_tool_call_reply_is_parsed(endpoint):
    endpoint.script = [
        {
            "status": 200,
            "body": completion(
                None,
                finish_reason="tool_calls",
                tool_calls=[
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {"id": "call_b", "type": "function", "function": {"name": "broken", "arguments": '{"city": '}},
                ],
            ),
        }
    ]
    reply = ModelClient(config(endpoint.url)).complete(
        USER,
        tools=[
            {
                "type": "function",
                "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
            }
        ],
    )
    assert reply.text == "" and reply.finish_reason == "tool_calls"
    assert reply.tool_calls == [
        {"id": "call_a", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"id": "call_b", "name": "broken", "arguments": '{"city": '},
    ]
    assert [c["function"]["name"] for c in reply.raw["tool_calls"]] == ["get_weather", "broken"]
    assert json.loads(reply.raw["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}


@pytest.mark.parametrize(
    "body",
    [
        completion(""),
        completion(None),
        {**completion(), "choices": []},
        b"<html>not json</html>",
        {"object": "chat.completion"},
    ],
    ids=["empty", "null", "no-choices", "not-json", "no-choices-key"],
)
def test_empty_or_malformed_reply_is_an_empty_text(endpoint, body):
    endpoint.script = [{"status": 200, "body": body}]
    reply = ModelClient(config(endpoint.url)).complete(USER)
    assert reply.text == "" and reply.tool_calls == [] and reply.attempts == 1
    assert len(endpoint.requests) == 1  # not retried


def test_structured_reply_cut_by_the_length_limit_is_a_reply(endpoint):
    # openai's parse() raises LengthFinishReasonError for response_format + finish_reason "length"
    endpoint.script = [{"status": 200, "body": completion('{"answer": "abc', finish_reason="length")}]
    reply = ModelClient(config(endpoint.url)).complete(USER, json_schema={"type": "object"})
    assert reply.text == '{"answer": "abc' and reply.finish_reason == "length"
    assert reply.usage == {"prompt_tokens": 11, "completion_tokens": 5}


# -- retries -------------------------------------------------------------------------------------------


def test_500_then_200_succeeds_on_the_second_attempt(endpoint):
    endpoint.script = [
        {"status": 500, "body": {"error": {"message": "boom"}}},
        {"status": 200, "body": completion("ok")},
    ]
    reply = ModelClient(config(endpoint.url)).complete(USER)
    assert (reply.text, reply.attempts) == ("ok", 2)
    assert len(endpoint.requests) == 2


@pytest.mark.parametrize(
    "message",
    [
        "The model produced output that does not match the expected peg-native format",
        "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101]",
    ],
)
def test_a_500_saying_the_models_output_is_unreadable_is_a_bad_reply_not_retried(endpoint, message, caplog):
    """llama.cpp answers 500 when the model's output does not parse as its template's tool calls:
    the reply failed (a format error of the case), not the server; a retry at temperature 0 repeats it."""
    endpoint.script = [
        {"status": 500, "body": {"error": {"code": 500, "message": message, "type": "server_error"}}},
        {"status": 200, "body": completion("ok")},
    ]
    for call in (lambda c: c.complete(USER), lambda c: asyncio.run(c.acomplete(USER))):
        endpoint.requests.clear()
        reply = call(ModelClient(config(endpoint.url)))
        assert (reply.text, reply.attempts, len(endpoint.requests)) == ("", 1, 1)
        assert message[:40] in reply.raw["error"] and "500" in reply.raw["error"]


def test_async_500_then_200(endpoint):
    endpoint.script = [
        {"status": 502, "body": {"error": {"message": "bad gateway"}}},
        {"status": 200, "body": completion("ok")},
    ]
    reply = asyncio.run(ModelClient(config(endpoint.url)).acomplete(USER))
    assert (reply.text, reply.attempts) == ("ok", 2)


def test_one_client_serves_several_event_loops(endpoint):
    # httpx connections belong to the loop that opened them: a shared async client breaks on the next asyncio.run
    client = ModelClient(config(endpoint.url))
    for _ in range(3):
        assert asyncio.run(client.acomplete(USER)).attempts == 1

    async def many():
        return await asyncio.gather(*[client.acomplete(USER) for _ in range(4)])

    assert [r.text for r in asyncio.run(many())] == ["hello"] * 4
    assert client.complete(USER).text == "hello"
    assert len(endpoint.requests) == 8


def test_429_honours_retry_after(endpoint):
    endpoint.script = [
        {"status": 429, "body": {"error": {"message": "slow down"}}, "headers": {"Retry-After": "1"}},
        {"status": 200, "body": completion("ok")},
    ]
    reply = ModelClient(config(endpoint.url, backoff_max=0.01)).complete(USER)
    assert (reply.text, reply.attempts) == ("ok", 2)
    gap = endpoint.times[1] - endpoint.times[0]
    assert 0.9 <= gap < 5, gap  # waited as told, far beyond backoff_max


def test_429_without_retry_after_backs_off_and_gives_up_as_rate_limit(endpoint):
    endpoint.script = [{"status": 429, "body": {"error": {"message": "slow down"}}}]
    with pytest.raises(TransportError) as info:
        ModelClient(config(endpoint.url, max_retries=2)).complete(USER)
    assert (info.value.kind, info.value.status, info.value.attempts) == ("rate_limit", 429, 3)


def test_always_503_raises_server_transport_error_after_all_retries(endpoint, caplog):
    endpoint.script = [{"status": 503, "body": {"error": {"message": "overloaded"}}}]
    caplog.set_level(logging.WARNING, logger="benchsmith.models")
    t0 = time.monotonic()
    with pytest.raises(TransportError) as info:
        ModelClient(config(endpoint.url, max_retries=3)).complete(USER)
    err = info.value
    assert isinstance(err, RuntimeFault)
    assert (err.kind, err.status, err.attempts) == ("server", 503, 4)
    assert len(endpoint.requests) == 4
    assert time.monotonic() - t0 < 5
    assert "503" in str(err) and "4 attempt" in str(err)
    assert sum("retry" in r.getMessage() for r in caplog.records) == 3


def test_async_always_503(endpoint):
    endpoint.script = [{"status": 503, "body": {"error": {"message": "overloaded"}}}]
    with pytest.raises(TransportError) as info:
        asyncio.run(ModelClient(config(endpoint.url, max_retries=2)).acomplete(USER))
    assert (info.value.kind, info.value.attempts) == ("server", 3)


def test_backoff_grows_and_stays_under_the_cap(endpoint):
    endpoint.script = [{"status": 500, "body": {}}]
    with pytest.raises(TransportError):
        ModelClient(config(endpoint.url, max_retries=4, backoff_base=0.05, backoff_max=0.1)).complete(USER)
    gaps = [b - a for a, b in zip(endpoint.times, endpoint.times[1:])]
    assert len(gaps) == 4 and all(g < 0.1 + 0.5 for g in gaps), gaps


def test_connection_refused_is_a_connection_error_quickly():
    url = f"http://127.0.0.1:{unused_port()}/v1"
    t0 = time.monotonic()
    with pytest.raises(TransportError) as info:
        ModelClient(config(url, max_retries=2)).complete(USER)
    assert (info.value.kind, info.value.status, info.value.attempts) == ("connection", None, 3)
    assert time.monotonic() - t0 < 3


def test_async_connection_refused():
    url = f"http://127.0.0.1:{unused_port()}/v1"
    with pytest.raises(TransportError) as info:
        asyncio.run(ModelClient(config(url, max_retries=1)).acomplete(USER))
    assert info.value.kind == "connection" and info.value.attempts == 2


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_server_slower_than_the_timeout_is_a_timeout(endpoint, mode):
    endpoint.script = [{"status": 200, "body": completion(), "delay": 3.0}]
    client = ModelClient(config(endpoint.url, timeout=0.5, max_retries=1))
    t0 = time.monotonic()
    with pytest.raises(TransportError) as info:
        if mode == "sync":
            client.complete(USER)
        else:
            asyncio.run(client.acomplete(USER))
    elapsed = time.monotonic() - t0
    assert (info.value.kind, info.value.attempts) == ("timeout", 2)
    assert elapsed < 0.5 * 2 + 1.0, elapsed


def test_rate_limit_spaces_requests(endpoint):
    client = ModelClient(config(endpoint.url, requests_per_second=10))
    t0 = time.monotonic()
    for _ in range(3):
        client.complete(USER)
    assert time.monotonic() - t0 >= 0.25


# -- errors that are not retried -------------------------------------------------------------------------


def test_401_is_a_user_error_without_the_key(endpoint, caplog):
    caplog.set_level(logging.DEBUG)
    endpoint.script = [
        {
            "status": 401,
            "body": {"error": {"message": f"Incorrect API key provided: {SECRET}", "type": "invalid_request_error"}},
        }
    ]
    client = ModelClient(config(endpoint.url))
    with pytest.raises(UserError) as info:
        client.complete(USER)
    text = str(info.value)
    assert "401" in text and "BENCHSMITH_TEST_KEY" in text
    assert SECRET not in text and SECRET not in repr(info.value)
    assert SECRET not in caplog.text
    assert SECRET not in repr(client) and SECRET not in repr(client.config)
    assert len(endpoint.requests) == 1


def test_404_is_a_user_error_naming_the_model(endpoint):
    endpoint.script = [{"status": 404, "body": {"error": {"message": "model not found"}}}]
    with pytest.raises(UserError) as info:
        ModelClient(config(endpoint.url, name="no-such-model")).complete(USER)
    assert "no-such-model" in str(info.value) and "404" in str(info.value)
    assert len(endpoint.requests) == 1


def test_400_is_raised_at_once_as_a_request_error(endpoint):
    endpoint.script = [
        {"status": 400, "body": {"error": {"message": "the request exceeds the available context size"}}}
    ]
    with pytest.raises(TransportError) as info:
        ModelClient(config(endpoint.url)).complete(USER)
    assert (info.value.kind, info.value.status, info.value.attempts) == ("request", 400, 1)
    assert "context size" in str(info.value)
    assert len(endpoint.requests) == 1


def test_bad_messages_are_user_errors(endpoint):
    client = ModelClient(config(endpoint.url))
    with pytest.raises(UserError):
        client.complete([{"role": "robot", "content": "x"}])
    with pytest.raises(UserError):
        client.complete([{"role": "tool", "content": "x"}])  # no tool_call_id
    with pytest.raises(UserError):
        client.complete([])
    assert endpoint.requests == []


def test_openai_without_a_key_is_a_user_error(monkeypatch):
    monkeypatch.delenv("BENCHSMITH_TEST_KEY")
    with pytest.raises(UserError) as info:
        ModelClient(ModelConfig(name="gpt-x", api_key_env="BENCHSMITH_TEST_KEY")).complete(USER)
    assert "BENCHSMITH_TEST_KEY" in str(info.value)


def test_transport_error_pickles():
    err = pickle.loads(pickle.dumps(TransportError("boom", kind="server", status=503, attempts=5)))
    assert (str(err), err.kind, err.status, err.attempts) == ("boom", "server", 503, 5)


# -- config and resolution ------------------------------------------------------------------------------


def test_config_defaults_and_strictness():
    cfg = ModelConfig(name="m")
    assert (
        cfg.base_url,
        cfg.api_key_env,
        cfg.timeout,
        cfg.max_retries,
        cfg.backoff_base,
        cfg.backoff_max,
        cfg.requests_per_second,
        cfg.temperature,
        cfg.max_tokens,
        cfg.seed,
        cfg.local,
    ) == (None, "OPENAI_API_KEY", 60.0, 4, 0.5, 20.0, None, 0.0, 512, 0, False)
    with pytest.raises(ValidationError):
        ModelConfig(name="m", api_key="sk-123")  # unknown field: the key is never part of a config
    with pytest.raises(ValidationError):
        ModelConfig(name="m", api_key_env="sk-live-123")  # a key where the variable's name belongs
    with pytest.raises(ValidationError):
        ModelConfig(name="m", timeout=0)
    with pytest.raises(ValidationError):
        ModelConfig(name="m", base_url="ftp://x")


def test_config_repr_hides_credentials_in_the_url():
    cfg = ModelConfig(name="m", base_url="https://user:hunter2@example.org/v1/")
    assert cfg.base_url == "https://user:hunter2@example.org/v1"
    assert "hunter2" not in repr(cfg) and "hunter2" not in str(cfg)


def test_resolve_with_base_url(endpoint):
    cfg = resolve_model("my-model", endpoint.url, timeout=9)
    assert (cfg.name, cfg.base_url, cfg.timeout, cfg.local) == ("my-model", endpoint.url, 9.0, False)
    assert resolve_model(None, endpoint.url).name == "served-model"  # the one model /models lists
    named = resolve_model(DEFAULT_LOCAL_MODEL, endpoint.url)  # a given endpoint wins, whatever the name
    assert (named.base_url, named.local) == (endpoint.url, False)
    endpoint.models = ["a", "b"]
    with pytest.raises(UserError):
        resolve_model(None, endpoint.url)


def test_resolve_unreachable_base_url_without_model_is_a_user_error():
    with pytest.raises(UserError) as info:
        resolve_model(None, f"http://127.0.0.1:{unused_port()}/v1")
    assert "cannot reach" in str(info.value)


def test_resolve_openai_and_local(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHSMITH_MODEL_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    cfg = resolve_model("gpt-4o-mini", None, max_retries=1)
    assert (cfg.name, cfg.base_url, cfg.local, cfg.max_retries) == ("gpt-4o-mini", None, False, 1)
    assert SECRET not in repr(cfg)
    with pytest.raises(UserError):
        resolve_model(None, None)  # OpenAI needs a model name
    monkeypatch.delenv("OPENAI_API_KEY")
    local = resolve_model(None, None, start_local=False)  # no server runs in this state dir: nothing started
    assert (local.name, local.base_url, local.local) == (DEFAULT_LOCAL_MODEL, None, True)
    assert local.api_key() == "local"
    with pytest.raises(UserError) as info:
        resolve_model("gpt-4o", None, start_local=False)
    assert "OPENAI_API_KEY" in str(info.value)
    with pytest.raises(UserError):
        resolve_model("m", "http://127.0.0.1:1/v1", max_retries=-1)
    assert not list(tmp_path.iterdir())


# ---- sizing the local server -----------------------------------------------------------------------
def test_serving_in_the_foreground_on_a_taken_port_is_a_user_error(monkeypatch, tmp_path):
    """``model serve --foreground`` sizes its server before it checks the port (a NameError there once
    reached users); the check must end in one user error, with nothing downloaded or started."""
    from benchsmith.models import run_local_server

    monkeypatch.setenv("BENCHSMITH_MODEL_STATE_DIR", str(tmp_path))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(UserError) as info:
            run_local_server(port=taken.getsockname()[1])
    assert "already in use" in str(info.value)


def test_the_local_server_plan_follows_cores_and_the_longest_prompt():
    from benchsmith.models import MEASURED_PROMPT_TOKENS, plan_local_server
    from benchsmith.models._private.sizing import MARGIN

    two = plan_local_server(2)
    need = int(max(MEASURED_PROMPT_TOKENS.values()) * MARGIN) + 256
    assert two.parallel == 2 and need <= two.ctx_per_slot < need + 1024 and two.ctx_per_slot % 1024 == 0
    assert plan_local_server(1).parallel == 1 and plan_local_server(64).parallel == 4
    assert plan_local_server(2, longest_prompt=100).ctx_per_slot == 1024


def test_concurrency_follows_the_running_local_servers_slots(monkeypatch):
    from benchsmith.models import ModelConfig, concurrency_for
    from benchsmith.models._private import server

    class Info:
        parallel, base_url = 3, "http://127.0.0.1:5/v1"

    monkeypatch.setattr(server, "local_server_status", lambda model=None: Info())
    local = ModelConfig(name="gemma3-270m", base_url="http://127.0.0.1:5/v1", local=True)
    assert concurrency_for(local) == 3
    assert concurrency_for(local.model_copy(update={"base_url": "http://127.0.0.1:6/v1"})) == 4
    assert concurrency_for(ModelConfig(name="gpt-4o-mini"), default=7) == 7
    monkeypatch.setattr(server, "local_server_status", lambda model=None: None)
    assert concurrency_for(local) == 4


def test_usage_keeps_the_prompt_tokens_served_from_the_cache():
    from benchsmith.models._private.client import _usage

    assert _usage({"prompt_tokens": 9, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 7}}) == {
        "prompt_tokens": 9,
        "completion_tokens": 2,
        "cached_tokens": 7,
    }
    assert _usage({"prompt_tokens": 9, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 0}}) == {
        "prompt_tokens": 9,
        "completion_tokens": 2,
    }


# -- the one background-server lifecycle (procs.ManagedServer) ---------------------------------------
def _sleeper():
    import subprocess

    return subprocess.Popen(["sleep", "30"], start_new_session=True)


def _managed(tmp_path, healthy=lambda url: False):
    from dataclasses import dataclass

    from benchsmith.models import procs

    @dataclass(frozen=True)
    class State:
        pid: int
        url: str

    server = procs.ManagedServer(
        "test server",
        tmp_path / "state.json",
        tmp_path / "lock",
        State,
        lambda pid: (procs.command_line(pid) or "").startswith("sleep "),  # "ours" is a sleep process here
        healthy,
    )
    return server, State


def test_a_managed_server_forgets_a_state_file_whose_process_is_gone(tmp_path):
    server, State = _managed(tmp_path, healthy=lambda url: True)
    proc = _sleeper()
    server.write(State(proc.pid, "http://127.0.0.1:9"))
    assert server.status() == State(proc.pid, "http://127.0.0.1:9")  # alive and answering
    proc.kill()
    proc.wait()
    assert server.status() is None and not server.state_file.exists()


def test_a_managed_server_stops_only_a_process_of_its_own(tmp_path):
    import subprocess
    import sys

    from benchsmith.models import procs

    server, State = _managed(tmp_path)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        server.write(State(other.pid, "http://127.0.0.1:9"))
        assert server.stop(grace=1.0) is None  # not ours: left running, its stale record removed
        assert procs.pid_alive(other.pid) and not server.state_file.exists()
    finally:
        other.kill()
        other.wait()
    ours = _sleeper()
    server.write(State(ours.pid, "http://127.0.0.1:9"))
    assert server.stop(grace=1.0) == State(ours.pid, "http://127.0.0.1:9")
    ours.wait(timeout=10)
    assert not server.state_file.exists()


def test_a_managed_server_of_its_own_that_does_not_answer_is_replaced(tmp_path, caplog):
    server, State = _managed(tmp_path, healthy=lambda url: False)
    hung = _sleeper()
    server.write(State(hung.pid, "http://127.0.0.1:9"))
    with server.claimed(restart_grace=1.0) as running:
        assert running is None  # stopped, so the caller starts a new one
    hung.wait(timeout=10)
    assert not server.state_file.exists() and "does not answer" in caplog.text


# -- the one installer of tools with their own dependencies (procs.ensure_venv) ----------------------
def test_a_venv_is_installed_once_and_a_failed_install_names_its_log(tmp_path):
    import subprocess

    from benchsmith.models import procs
    from benchsmith.schemas import RuntimeFault

    said: list[str] = []
    venv = procs.ensure_venv(tmp_path / "venv-six", ["six==1.16.0"], said.append)
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import six; print(six.__version__)"], capture_output=True, text=True
    )
    assert out.stdout.strip() == "1.16.0"
    assert any("Successfully installed six-1.16.0" in line for line in said), said  # pip's progress, echoed
    assert "six" in (tmp_path / "venv-six.log").read_text()  # the full output, kept
    said.clear()
    assert procs.ensure_venv(tmp_path / "venv-six", ["six==1.16.0"], said.append) == venv and not said  # once
    with pytest.raises(
        RuntimeFault, match=r"installing no-such-package-benchsmith==0\.0\.1 failed .* see .*venv-bad\.log"
    ):
        procs.ensure_venv(tmp_path / "venv-bad", ["no-such-package-benchsmith==0.0.1"])
    assert not (tmp_path / "venv-bad" / procs.VENV_MARKER).exists()  # a failed install is redone next time
