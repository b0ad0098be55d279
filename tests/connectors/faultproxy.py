"""A tiny HTTP proxy in front of a real local server (Azurite, fake-gcs-server) for tests.

It forwards every request to ``upstream`` and logs it (method, path with query,
headers), so a test can count what a connector downloaded; ``fault`` (a function of the
method and path) can answer a request itself instead, with a status such as 429/503
(``Retry-After: 0``) or a 403 for a listing page: the faults an emulator cannot make.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

# (method, path) -> a status to answer with instead of forwarding, or None to forward.
Fault = Callable[[str, str], int | None]

_HOP = {"host", "connection", "transfer-encoding", "keep-alive", "content-length"}


@dataclass
class FaultProxy:
    """The proxy's address, its request log and the fault to inject."""

    upstream: str
    url: str = ""
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    fault: Fault | None = None

    def count(self, method: str, contains: str = "") -> int:
        """How many requests of ``method`` had ``contains`` in their path."""
        return sum(1 for m, p, _ in self.requests if m == method and contains in p)

    def storm(self, statuses: list[int], contains: str) -> None:
        """Answer the next requests whose path has ``contains`` with these statuses."""
        pending = list(statuses)

        def fault(method: str, path: str) -> int | None:
            return pending.pop(0) if pending and contains in path else None

        self.fault = fault


@contextmanager
def fault_proxy(upstream: str) -> Iterator[FaultProxy]:
    """A running proxy to ``upstream`` on a free port of 127.0.0.1."""
    proxy = FaultProxy(upstream=upstream.rstrip("/"))
    client = httpx.Client(timeout=30)

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            proxy.requests.append((self.command, self.path, headers))
            status = proxy.fault(self.command, self.path) if proxy.fault else None
            if status is not None:
                self._reply(status, {"Retry-After": "0"}, b'{"error": "injected"}')
                return
            answer = client.request(
                self.command, proxy.upstream + self.path, headers=headers, content=body
            )
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP}
            kept.pop("content-encoding", None)
            self._reply(answer.status_code, kept, answer.content)

        def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    proxy.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        thread.join()
        client.close()
