"""A JSON API server on 127.0.0.1 for SaaS fakes: routing, auth, faults, request log.

``FakeApi`` runs a ThreadingHTTPServer in a thread; a subclass implements ``answer``
over its in-memory state. Every request is logged (path, query, status) so a test can
prove what a connector downloaded. Faults a test can set: ``throttle[prefix] = n`` makes
the next n requests under ``prefix`` answer 429 with ``Retry-After: 1``; ``deny[prefix]``
answers 403; ``broken[prefix]`` answers 500 (always, so retries run out).
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    status: int
    body: bytes = b""  # a POST's request body


@dataclass
class Answer:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class FakeApi:
    """Subclass and implement ``answer(call)``; use as a context manager."""

    def __init__(self, *, user: str = "bot@example.com", token: str = "t0ken") -> None:
        self.user, self.token = user, token
        self.log: list[Call] = []
        self.throttle: dict[str, int] = {}
        self.deny: set[str] = set()
        self.broken: set[str] = set()
        self.lock = threading.RLock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> FakeApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def answer(self, call: Call) -> Answer:  # pragma: no cover - overridden
        raise NotImplementedError

    def authorized(self, headers: dict[str, str]) -> bool:
        """Basic auth with the account email and the API token (Atlassian Cloud)."""
        expected = base64.b64encode(f"{self.user}:{self.token}".encode()).decode()
        return headers.get("authorization") == f"Basic {expected}"

    def count(self, prefix: str) -> int:
        with self.lock:
            return sum(1 for c in self.log if c.path.startswith(prefix))

    def clear_log(self) -> None:
        with self.lock:
            self.log.clear()

    def _dispatch(
        self, method: str, raw: str, headers: dict[str, str], body: bytes = b""
    ) -> Answer:
        parts = urlsplit(raw)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        call = Call(method, parts.path, query, headers, 0, body)
        with self.lock:
            answer = self._faults(call)
            if answer is None:
                answer = (
                    self.answer(call)
                    if self.authorized(headers)
                    else Answer(401, {"message": "Client must be authenticated"})
                )
            self.log.append(Call(method, parts.path, query, headers, answer.status, body))
        return answer

    def _faults(self, call: Call) -> Answer | None:
        for prefix, left in self.throttle.items():
            if call.path.startswith(prefix) and left > 0:
                self.throttle[prefix] = left - 1
                return Answer(429, {"message": "Rate limit exceeded"}, {"Retry-After": "1"})
        if any(call.path.startswith(p) for p in self.deny):
            return Answer(403, {"message": "Forbidden: scope does not match"})
        if any(call.path.startswith(p) for p in self.broken):
            return Answer(500, {"message": "Internal server error"})
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def _serve(self, method: str) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                length = int(headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                if method == "GET":  # the fakes of GET-only APIs override _dispatch
                    answer = fake._dispatch(method, self.path, headers)
                else:
                    answer = fake._dispatch(method, self.path, headers, body)
                raw = isinstance(answer.body, bytes)  # a file's bytes, not JSON
                data = (
                    answer.body
                    if raw
                    else b""
                    if answer.body is None
                    else json.dumps(answer.body).encode()
                )
                self.send_response(answer.status)
                kind = "application/octet-stream" if raw else "application/json"
                self.send_header("Content-Type", kind)
                for key, value in answer.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler
