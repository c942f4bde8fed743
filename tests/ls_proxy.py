"""A small reverse proxy on 127.0.0.1 in front of a real server, to lose replies on purpose.

``FaultyProxy(upstream, match=import_request, fault="drop")`` forwards every request to
``upstream``. For the first ``times`` requests that ``match(method, path)`` selects (the matchers
below select the POSTs that create something) it forwards the request, lets the server answer (so
whatever the request does is done), then fails the reply:

- ``"drop"``: closes the client's connection without a byte (a proxy that drops the reply),
- ``"502"``: answers 502 Bad Gateway instead of the server's reply (a 5xx after the commit),
- ``"stall"``: sends nothing for ``stall`` seconds, then closes (the client's timeout fires first).

Use it as a context manager; ``url`` is its base URL, ``faults`` the (method, path) pairs it failed.
"""

from __future__ import annotations

import http.client
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import urlsplit

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "host",
}
Match = Callable[[str, str], bool]


def post_to(pattern: str) -> Match:
    """A matcher: a POST whose path (without the query string) matches ``pattern`` in full."""
    path_re = re.compile(pattern)
    return lambda method, path: method == "POST" and bool(path_re.fullmatch(path.split("?", 1)[0]))


import_request = post_to(r"/api/projects/\d+/import")  # a project's task import
project_create = post_to(r"/api/projects/?")  # a new project
user_create = post_to(r"/api/users/?")  # a new user
annotation_create = post_to(r"/api/tasks/\d+/annotations/?")  # a new annotation on a task


def first_of_each(*matchers: Match) -> Match:
    """A matcher that selects the first request each of ``matchers`` selects (use with ``times=len(matchers)``)."""
    left = list(matchers)

    def match(method: str, path: str) -> bool:
        for m in left:
            if m(method, path):
                left.remove(m)
                return True
        return False

    return match


class FaultyProxy:
    def __init__(
        self, upstream: str, *, match: Match, fault: str = "drop", times: int = 1, stall: float = 10.0
    ) -> None:
        assert fault in ("drop", "502", "stall"), fault
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.match, self.fault, self.left, self.stall = match, fault, times, stall
        self.faults: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "FaultyProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # ends a stalled reply
        self._server.shutdown()
        self._server.server_close()

    def _take_fault(self, method: str, path: str) -> bool:
        with self._lock:
            if self.left > 0 and self.match(method, path):
                self.left -= 1
                self.faults.append((method, path))
                return True
            return False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                headers["Host"] = f"{proxy.upstream[0]}:{proxy.upstream[1]}"
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=300)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    payload = resp.read()  # the server has done the work by now
                    status, reply_headers = resp.status, resp.getheaders()
                finally:
                    conn.close()
                if proxy._take_fault(self.command, self.path):
                    self.close_connection = True
                    if proxy.fault == "stall":
                        proxy._stop.wait(proxy.stall)
                    if proxy.fault in ("drop", "stall"):
                        return  # the connection closes without a reply
                    status, payload = 502, b"Bad Gateway"
                    reply_headers = [("Content-Type", "text/plain")]
                self.send_response(status)
                for k, v in reply_headers:
                    if k.lower() not in HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(payload)
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward

        return Handler
