"""A lean HTTP/1.1 client for load generation: one keep-alive connection, bytes in, bytes out.

The idea: the load generator shares the server's two cores, so every millisecond it
spends a request is a millisecond the server does not get. httpx on asyncio spends
2.4-2.6 ms of CPU a search (its request building, its h11 state machine, its response
objects); this client sends the request line, headers and JSON body it was given as one
write, reads the status line and headers up to the blank line, and the body by its
``Content-Length`` (the server answers JSON with one; a chunked or a closing answer is
refused as an error, not guessed at). It speaks to one server it trusts, for benches
only: no redirects, TLS, proxies or retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any


class HTTPStatusError(Exception):
    """A status other than 2xx, or an answer this client does not read."""


class RawClient:
    """One keep-alive connection to ``host:port``, requests sent one after another."""

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        self._headers = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def post_json(self, path: str, body: Any) -> tuple[int, bytes]:
        """POST ``body`` as JSON to ``path``; the status and the response body. A 4xx or
        5xx status raises ``HTTPStatusError`` after the body is read (the connection
        stays usable); a connection dropped under the request is reopened and the request
        sent once more (a search changes nothing), then ``OSError`` is raised."""
        payload = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self._headers}"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        request = head.encode() + payload
        try:
            status, data = await self._exchange(request)
        except (OSError, asyncio.IncompleteReadError):
            # the server closed a connection idle past its keep-alive timeout as this
            # request went out (uvicorn: 5 s): sent again once, on a new connection
            status, data = await self._exchange(request)
        if status >= 400:
            raise HTTPStatusError(f"HTTP {status}: {data[:200]!r}")
        return status, data

    async def _exchange(self, request: bytes) -> tuple[int, bytes]:
        """Send ``request`` and read its answer, on a new connection if none is open."""
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        assert self._reader is not None
        try:
            self._writer.write(request)
            status, data, closing = await self._response(self._reader)
        except (OSError, asyncio.IncompleteReadError, HTTPStatusError):
            await self.close()
            raise
        if closing:  # the server's last answer on this connection (Connection: close)
            await self.close()
        return status, data

    @staticmethod
    async def _response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, closing = None, False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value.strip())
            elif name == "connection":
                closing = value.strip().lower() == "close"
            elif name == "transfer-encoding":
                raise HTTPStatusError(f"a {value.strip()} answer; this client reads lengths")
        if length is None:
            raise HTTPStatusError("an answer without Content-Length")
        return status, await reader.readexactly(length), closing

    async def close(self) -> None:
        """Close the connection (the next request opens another)."""
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
