"""A real OpenAI-compatible HTTP endpoint on 127.0.0.1 for runner tests: replies are a pure
function of the request body, with an optional delay; it counts requests per case prompt.

It can also fail in every way a real endpoint does (``mode``, switchable while it runs):

* ``"ok"``            a chat completion whose content is ``reply(body)`` (or ``reply(body)`` itself
                      when it is a dict: the whole completion body)
* ``"500"``           HTTP 500 with a JSON error body
* ``"429"``           HTTP 429 (with a ``Retry-After: <retry_after>`` header when ``retry_after`` is set)
* ``"reset"``         headers and half a body, then the connection is reset (TCP RST)
* ``"hang"``          never answers (until the endpoint is closed)
* ``"garbage"``       HTTP 200 whose body is not JSON
* ``"non_utf8"``      HTTP 200 whose body is not UTF-8
* ``"empty_choices"`` HTTP 200, a completion with ``choices: []``

``fail_first=N`` applies ``mode`` to the first N chat requests only, then answers ``ok`` (an
endpoint that recovers); ``sequence=[...]`` gives the modes of the first chat requests one by one
(in arrival order), then ``mode`` applies. ``GET /models`` always answers. ``port`` binds a chosen port (e.g. one a
test first saw closed, to bring an endpoint "back up" at the same address).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from benchsmith.models import ModelConfig

MODES = ("ok", "500", "429", "reset", "hang", "garbage", "non_utf8", "empty_choices")


def completion(content: Any = "hello", *, tool_calls: list | None = None, finish_reason: str = "stop") -> dict:
    """A chat completion body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 1,
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
    }


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (right now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeOpenAI:
    """``with FakeOpenAI(reply) as ep: ep.base_url`` -> ``http://127.0.0.1:PORT/v1``.

    ``prompts`` counts chat requests per prompt (the messages), ``answered`` the ones answered
    ``ok``; ``requests`` counts every chat request, ``failed`` the ones failed on purpose.
    """

    def __init__(
        self,
        reply: Callable[[dict[str, Any]], str],
        delay: float = 0.0,
        *,
        mode: str = "ok",
        fail_first: int | None = None,
        sequence: list[str] | None = None,
        retry_after: str | None = None,
        port: int = 0,
    ) -> None:
        bad = [m for m in [mode, *(sequence or [])] if m not in MODES]
        if bad:
            raise ValueError(f"unknown mode {bad[0]!r}; one of {MODES}")
        self.reply = reply
        self.delay = delay
        self.mode = mode
        self.fail_first = fail_first
        self.sequence = list(sequence or [])
        self.retry_after = retry_after
        self.prompts: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.requests = 0
        self.failed = 0
        self.lock = threading.Lock()
        self.closing = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                self._raw(status, json.dumps(body).encode(), headers)

            def _reset(self) -> None:
                """Headers and part of a body, then an abortive close (RST) mid-response."""
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "400")
                self.end_headers()
                self.wfile.write(b'{"id": "chatcmpl-x", "choi')
                self.wfile.flush()
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()

            def do_GET(self) -> None:  # noqa: N802
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                prompt = json.dumps(body.get("messages"), sort_keys=True)
                with fake.lock:
                    fake.prompts[prompt] += 1
                    fake.requests += 1
                    mode = fake.mode
                    if fake.fail_first is not None:
                        mode = mode if fake.failed < fake.fail_first else "ok"
                    if fake.requests <= len(fake.sequence):
                        mode = fake.sequence[fake.requests - 1]
                    if mode != "ok":
                        fake.failed += 1
                if fake.delay:
                    time.sleep(fake.delay)
                if mode == "ok":
                    content = fake.reply(body)
                    with fake.lock:
                        fake.answered[prompt] += 1
                    # a reply function may give the whole completion body (its own usage, finish reason)
                    self._send(200, content if isinstance(content, dict) else completion(content))
                elif mode == "500":
                    self._send(500, {"error": {"message": "internal error (fake)", "type": "server_error"}})
                elif mode == "429":
                    headers = {"Retry-After": fake.retry_after} if fake.retry_after is not None else None
                    self._send(429, {"error": {"message": "slow down (fake)", "type": "rate_limit"}}, headers)
                elif mode == "reset":
                    self._reset()
                elif mode == "hang":
                    fake.closing.wait(120)
                    self.close_connection = True
                elif mode == "garbage":
                    self._raw(200, b"<html>502 Bad Gateway</html> not json {")
                elif mode == "non_utf8":
                    self._raw(
                        200,
                        b'{"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", '
                        b'"content": "caf\xe9 \xff"}, "finish_reason": "stop"}]}',
                    )
                else:  # empty_choices
                    self._send(200, {**completion(""), "choices": []})

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.closing.set()  # hanging requests end
        self.server.shutdown()
        self.server.server_close()


# ---- a scripted endpoint for the model client's own tests (status codes, headers, delays per request) ----
class FakeEndpoint:
    """A scripted OpenAI-compatible endpoint: each request takes the next script entry (the last repeats)."""

    def __init__(self) -> None:
        self.script: list[dict[str, Any]] = [{"status": 200, "body": completion()}]
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        self.models = ["served-model"]
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                if self.path.endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in fake.models]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                fake.times.append(time.monotonic())
                step = fake.script[min(len(fake.requests) - 1, len(fake.script) - 1)]
                if step.get("delay"):
                    time.sleep(step["delay"])
                try:
                    self._send(step["status"], step["body"], step.get("headers"))
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def config(url: str, **kw: Any) -> ModelConfig:
    base = {
        "name": "test-model",
        "base_url": url,
        "timeout": 5.0,
        "max_retries": 3,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
        "api_key_env": "BENCHSMITH_TEST_KEY",
    }
    return ModelConfig(**{**base, **kw})
