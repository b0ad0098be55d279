"""A JSON HTTP server on 127.0.0.1 in a thread, shared by the SaaS fakes (test code only).

A fake subclasses ``FakeService`` and implements ``handle(method, path, query, headers)``
returning ``(status, body, headers)``. Every request is logged (method, path, query) so a
test can count what a connector asked for; ``fail(...)`` queues injected answers (a 429
with Retry-After, a 500) for the next requests whose path starts with a prefix.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Answer = tuple[int, Any, dict[str, str]]


@dataclass(frozen=True)
class Logged:
    method: str
    path: str
    query: dict[str, str]
    status: int


@dataclass
class Fault:
    prefix: str
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1  # -1: forever


class FakeService:
    """Start with ``with Fake() as fake``; ``fake.url`` is its base URL."""

    def __init__(self) -> None:
        self.log: list[Logged] = []
        self.faults: list[Fault] = []
        self.lock = threading.RLock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                service._serve(self, "GET")

            def do_POST(self) -> None:
                service._serve(self, "POST")

            def do_PATCH(self) -> None:
                service._serve(self, "PATCH")

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeService:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def fail(
        self, prefix: str, status: int, body: Any = None, *, times: int = 1, **headers: str
    ) -> None:
        """Answer the next ``times`` requests under ``prefix`` with ``status``."""
        with self.lock:
            hdrs = {k.replace("_", "-"): v for k, v in headers.items()}
            self.faults.append(Fault(prefix, status, body or {}, hdrs, times))

    def count(self, prefix: str, method: str = "GET") -> int:
        with self.lock:
            return sum(1 for r in self.log if r.method == method and r.path.startswith(prefix))

    def handle(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> Answer:
        raise NotImplementedError

    def _serve(self, request: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(request.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        length = int(request.headers.get("content-length") or 0)
        raw = request.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in request.headers.items()}
        with self.lock:
            fault = next((f for f in self.faults if parts.path.startswith(f.prefix)), None)
            if fault is not None:
                fault.times -= 1
                if fault.times == 0:
                    self.faults.remove(fault)
                answer: Answer = (fault.status, fault.body, fault.headers)
            else:
                answer = self.handle(method, parts.path, query, headers, raw)
            self.log.append(Logged(method, parts.path, query, answer[0]))
        status, payload, extra = answer[0], answer[1], dict(answer[2])
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        request.send_response(status)
        kind = "application/octet-stream" if isinstance(payload, bytes) else "application/json"
        request.send_header("Content-Type", extra.pop("Content-Type", kind))
        for key, value in extra.items():
            request.send_header(key, value)
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)
