"""One push session across two `headwater serve` processes on one manifest.

Each request goes to a chosen process, so the test proves what the manifest makes them
agree on: the second open is refused by the other process, pages sent to either count,
the complete in one deletes what neither was sent, and a page sent after it is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from api_support import Server, make_workspace

from ports import free_port


@pytest.fixture
def two_servers(tmp_path: Path, manifest_url: str) -> Iterator[tuple[Server, Server]]:
    extra = f'\n[manifest]\nurl = "{manifest_url}"\n'
    config = make_workspace(tmp_path, extra)
    servers = [Server(config, free_port(), tmp_path / f"serve{n}.log") for n in (1, 2)]
    with ThreadPoolExecutor(2) as pool:  # both start at once (each takes seconds)
        started = [pool.submit(s.start, 120) for s in servers]
    try:
        for future in started:
            future.result()
        yield servers[0], servers[1]
    finally:
        for server in servers:
            server.stop()


def page(*ids: str) -> dict[str, object]:
    return {"documents": [{"object_id": o, "version": 1, "text": f"{o} text"} for o in ids]}


@pytest.mark.parametrize("manifest_url", ["postgres"], indirect=True)  # the shared deployment
def test_two_processes_share_one_session(two_servers: tuple[Server, Server]) -> None:
    one, two = two_servers
    with one.client("ingest") as a, two.client("ingest") as b, one.client() as admin:
        batch = [{"object_id": f"o/{n}", "version": 1, "text": f"o/{n} text"} for n in range(6)]
        pushed = a.post("/v1/sources/inbox/documents:batch", json={"operations": batch})
        assert pushed.status_code == 200
        sid = a.post("/v1/sources/inbox/sessions").json()["session_id"]
        refused = b.post("/v1/sources/inbox/sessions")
        assert refused.status_code == 409 and sid in refused.json()["error"]
        base = f"/v1/sources/inbox/sessions/{sid}"
        assert a.put(base + "/documents", json=page("o/0", "o/1", "o/2")).status_code == 200
        assert b.put(base + "/documents", json=page("o/3", "o/4", "o/new")).status_code == 200
        assert a.get(base).json()["sent"] == 6 == b.get(base).json()["sent"]
        done = b.post(base + ":complete")
        assert done.status_code == 200, done.text
        assert done.json()["deleted"] == 1  # o/5, sent to neither
        state = admin.get("/v1/documents", params={"source": "inbox", "object": "o/5"})
        assert state.json()["state"] == "deleted"
        late = a.put(base + "/documents", json=page("o/5"))
        assert late.status_code == 409 and "completed" in late.json()["error"]
        assert a.post(base + ":abort").status_code == 409
        assert a.post("/v1/sources/inbox/sessions").status_code == 201
