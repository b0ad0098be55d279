"""The load generator's lean client (``bench/raw_http.py``) reads what httpx reads.

``bench/api_load.py`` measures the server with it by default, so a wrong byte count, a
header it misreads or a connection it cannot reuse would make the bench report searches
that never completed. Against a real ``headwater serve``: the same search body answered
the same through both clients, an error status raised with the connection still usable,
a closed connection reopened, and a request whose connection was lost sent again. Against
a bare asyncio server: an answer that says ``Connection: close`` ends its connection at once.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from api_support import KEYS, Server, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from raw_http import HTTPStatusError, RawClient


@pytest.fixture(scope="module")
def synced(server: Server) -> Server:
    with server.client("admin") as c:
        job = c.post("/v1/sources/docs/sync").json()
        wait_for(lambda: c.get(f"/v1/jobs/{job['job_id']}").json()["status"] == "done")
        wait_for(lambda: c.get("/v1/indexes").json()["indexes"]["main"]["pending"] == 0)
    return server


def test_the_lean_client_reads_what_httpx_reads(synced: Server) -> None:
    body = {"query": "vacation days", "k": 3}
    with synced.client("search") as search:
        expected = search.post("/v1/search", json=body).json()
    assert expected["results"]

    async def run() -> None:
        client = RawClient("127.0.0.1", synced.port, {"Authorization": f"Bearer {KEYS['search']}"})
        try:
            for _ in range(3):  # one keep-alive connection, requests one after another
                status, data = await client.post_json("/v1/search", body)
                assert status == 200 and json.loads(data) == expected
            with pytest.raises(HTTPStatusError, match="HTTP 422"):
                await client.post_json("/v1/search", {"k": 3})  # no query
            assert json.loads((await client.post_json("/v1/search", body))[1]) == expected
            await client.close()  # the next request opens another connection
            assert json.loads((await client.post_json("/v1/search", body))[1]) == expected
            # the connection lost under the client (as when the server closes one idle
            # past its keep-alive timeout): the request goes again, on a new connection
            assert client._writer is not None
            client._writer.transport.abort()
            assert json.loads((await client.post_json("/v1/search", body))[1]) == expected
        finally:
            await client.close()
        anonymous = RawClient("127.0.0.1", synced.port, {})
        with pytest.raises(HTTPStatusError, match="HTTP 401"):
            await anonymous.post_json("/v1/search", body)
        await anonymous.close()

    asyncio.run(run())


def test_an_answer_saying_connection_close_ends_the_connection() -> None:
    # as a `serve` worker over its share of connections answers (api/balance.py)
    async def run() -> list[int]:
        requests: list[int] = []  # the connection number of each request

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            number = len(set(requests)) + 1
            while await reader.readuntil(b"\r\n\r\n"):
                await reader.readexactly(2)  # the body: {}
                requests.append(number)
                close = len(requests) == 2
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                    + (b"Connection: close\r\n" if close else b"")
                    + b"\r\n{}"
                )
                await writer.drain()
                if close:
                    writer.close()
                    return

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = RawClient("127.0.0.1", port, {})
        try:
            for number in range(4):
                assert await client.post_json("/", {}) == (200, b"{}")
                # closed at once after the answer that said so, not found closed later
                assert (client._writer is None) == (number == 1)
        finally:
            await client.close()
            server.close()
        return requests

    assert asyncio.run(run()) == [1, 1, 2, 2]
