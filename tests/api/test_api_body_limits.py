"""Request bodies: the key is checked before the body is read, and bodies are bounded.

An unauthenticated 300 MB body grew the server by about 900 MB before its 401: FastAPI
parses the body before it solves the key's dependency. These talk raw HTTP/1.1 to a real
server process, so a body can be declared (or streamed) without being sent whole: a 401
or 413 that arrives while most of the body is still unsent proves it was not read.
"""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_support import KEYS, Server, make_workspace

from headwater.api.guard import BODY_LIMIT
from ports import free_port

PUSH_LIMIT = 2 * 1024 * 1024
MB = 1024 * 1024


@pytest.fixture(scope="module")
def small_push(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("limits")
    config = make_workspace(root, extra=f"\n[api]\nmax_push_bytes = {PUSH_LIMIT}\n")
    with Server(config, free_port(), root / "server.log") as srv:
        yield srv


def rss(srv: Server) -> int:
    assert srv.process is not None
    for line in Path(f"/proc/{srv.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def head(srv: Server, path: str, key: str | None, *lines: str) -> bytes:
    auth = [f"Authorization: Bearer {key}"] if key else []
    return (
        "\r\n".join(
            [
                f"POST {path} HTTP/1.1",
                f"Host: 127.0.0.1:{srv.port}",
                "Content-Type: application/json",
                *auth,
                *lines,
                "",
                "",
            ]
        )
    ).encode()


def answer(sock: socket.socket, deadline_s: float = 30.0) -> tuple[int, bytes]:
    """The response's status and bytes, waiting at most ``deadline_s`` for it to start."""
    sock.settimeout(deadline_s)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    assert data.startswith(b"HTTP/1.1 "), data[:200]
    headers, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in headers.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(data.split()[1]), headers + b"\r\n\r\n" + body


def stream(sock: socket.socket, total: int) -> int:
    """Send up to ``total`` bytes of chunked body until the server answers; how many were sent."""
    sent = 0
    piece = b"x" * MB
    while sent < total:
        if select.select([sock], [], [], 0)[0]:
            return sent  # the answer (or the close) is there
        data = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return sent
        sent += len(piece)
    return sent


@pytest.mark.parametrize("path", ["/v1/search", "/v1/sources/inbox/documents:batch"])
def test_an_unauthenticated_body_is_refused_before_it_is_read(
    small_push: Server, path: str
) -> None:
    before = rss(small_push)
    for key in (None, "unknown-secret-0123456789abcdef"):
        with socket.create_connection(("127.0.0.1", small_push.port)) as sock:
            # 300 MB declared, none of it sent: the 401 must come without waiting for it.
            sock.sendall(head(small_push, path, key, f"Content-Length: {300 * MB}"))
            status, data = answer(sock)
            assert status == 401, data
        with socket.create_connection(("127.0.0.1", small_push.port)) as sock:
            sock.sendall(head(small_push, path, key, "Transfer-Encoding: chunked"))
            status, data = answer(sock)
            assert status == 401, data
    # A key without the role is refused before its body is read too.
    with socket.create_connection(("127.0.0.1", small_push.port)) as sock:
        role = KEYS["search"] if "documents" in path else KEYS["ingest"]
        sock.sendall(head(small_push, path, role, f"Content-Length: {300 * MB}"))
        assert answer(sock)[0] == 403
    assert rss(small_push) - before < 100 * MB  # loosely: nothing of the size was kept


def test_a_declared_oversized_body_is_413_before_it_is_read(small_push: Server) -> None:
    for path, key, limit in (
        ("/v1/search", KEYS["backend"], BODY_LIMIT),
        ("/v1/sources/inbox/documents:batch", KEYS["ingest"], PUSH_LIMIT),
    ):
        with socket.create_connection(("127.0.0.1", small_push.port)) as sock:
            sock.sendall(head(small_push, path, key, f"Content-Length: {limit + 1}"))
            status, data = answer(sock)
            assert status == 413, data
            assert f"at most {limit} bytes".encode() in data
        if "documents" in path:
            assert b"max_push_bytes" in data


def test_a_streamed_oversized_body_is_413_once_it_passes_the_limit(small_push: Server) -> None:
    before = rss(small_push)
    for path, key, limit in (
        ("/v1/search", KEYS["backend"], BODY_LIMIT),
        ("/v1/sources/inbox/documents:batch", KEYS["ingest"], PUSH_LIMIT),
    ):
        with socket.create_connection(("127.0.0.1", small_push.port)) as sock:
            sock.sendall(head(small_push, path, key, "Transfer-Encoding: chunked"))
            sent = stream(sock, 40 * MB)  # past limit + 16 MB: a server that reads on
            # Loopback socket buffers hold a few MB; the server stopped reading near the
            # limit (checked first: a server still waiting for the body's end never answers).
            assert sent < limit + 16 * MB, sent
            status, data = answer(sock)
            assert status == 413, data
    assert rss(small_push) - before < 100 * MB


def test_bodies_within_the_limits_are_served(small_push: Server) -> None:
    with small_push.client("ingest") as ingest:
        text = "word " * (PUSH_LIMIT // 10)  # about 1 MB: over nothing
        r = ingest.put("/v1/sources/inbox/documents/big", json={"version": 1, "text": text})
        assert r.status_code == 200, r.text
    with socket.create_connection(("127.0.0.1", small_push.port)) as sock:
        body = b'{"query": "vacation", "mode": "keyword"}'
        sock.sendall(head(small_push, "/v1/search", KEYS["backend"], "Transfer-Encoding: chunked"))
        sock.sendall(f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
        status, data = answer(sock)
        assert status == 200, data
