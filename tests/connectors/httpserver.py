"""A real HTTP server on 127.0.0.1 for connector tests: routes, validators, request log.

``LocalHttpServer`` serves canned responses from a thread (stdlib ``http.server``), answers
conditional requests (ETag / Last-Modified) with 304 on its own, and records every
request (path, headers, status, body bytes sent, time) so tests can count what a
connector really downloaded. A route may also be a function of the request, for
failures, slow answers and Retry-After.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass
class Reply:
    """One canned answer; ``etag``/``last_modified`` make the server answer 304 itself."""

    body: bytes = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    etag: str | None = None
    last_modified: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Request:
    path: str  # path and query, as sent
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Logged:
    path: str
    headers: Mapping[str, str]
    status: int
    body_bytes: int
    at: float


Handler = Callable[[Request], Reply]


class LocalHttpServer:
    """``with LocalHttpServer() as server: server.route("/a", Reply(b"..."))``."""

    def __init__(self) -> None:
        self._routes: dict[str, Reply | Handler] = {}
        self.log: list[Logged] = []
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- setup --------------------------------------------------------------------------

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def route(self, path: str, reply: Reply | Handler) -> None:
        """Serve ``reply`` at ``path`` (matched with its query first, then without)."""
        with self._lock:
            self._routes[path] = reply

    def html(self, path: str, body: str, **kwargs: object) -> None:
        self.route(path, Reply(body.encode("utf-8"), **kwargs))  # type: ignore[arg-type]

    def remove(self, path: str) -> None:
        with self._lock:
            self._routes.pop(path, None)

    # -- what happened ------------------------------------------------------------------

    def hits(self, path: str) -> int:
        return sum(1 for entry in self.log if entry.path == path)

    def statuses(self, path: str | None = None) -> list[int]:
        return [e.status for e in self.log if path is None or e.path == path]

    def body_bytes(self) -> int:
        return sum(entry.body_bytes for entry in self.log)

    def clear_log(self) -> None:
        with self._lock:
            self.log.clear()

    # -- lifecycle ----------------------------------------------------------------------

    def __enter__(self) -> LocalHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _answer(self, request: Request) -> Reply:
        with self._lock:
            found = self._routes.get(request.path) or self._routes.get(urlsplit(request.path).path)
        if found is None:
            return Reply(b"not found", status=404, content_type="text/plain")
        reply = found(request) if callable(found) else found
        if reply.status == 200 and _not_modified(reply, request.headers):
            return Reply(status=304, etag=reply.etag, last_modified=reply.last_modified)
        return reply

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                arrived = time.monotonic()
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = server._answer(Request(self.path, headers))
                body = b"" if reply.status in (204, 304) else reply.body
                with server._lock:
                    server.log.append(Logged(self.path, headers, reply.status, len(body), arrived))
                self.send_response(reply.status)
                if reply.status != 304:
                    self.send_header("Content-Type", reply.content_type)
                if reply.etag:
                    self.send_header("ETag", reply.etag)
                if reply.last_modified:
                    self.send_header("Last-Modified", reply.last_modified)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return _Handler


class _QuietServer(ThreadingHTTPServer):
    """Clients that hang up early (a skipped body, a size limit) are not errors here."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def _not_modified(reply: Reply, headers: Mapping[str, str]) -> bool:
    if reply.etag and "if-none-match" in headers:
        return reply.etag in [t.strip() for t in headers["if-none-match"].split(",")]
    if reply.last_modified and "if-modified-since" in headers:
        return headers["if-modified-since"] == reply.last_modified
    return False


def refused_port() -> int:
    """A 127.0.0.1 port with nothing listening (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
