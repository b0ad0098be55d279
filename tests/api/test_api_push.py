"""Push ingestion semantics through a real server: versions, tombstones, batches, durability."""

from __future__ import annotations

import base64
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from api_support import Server, make_workspace, server_env, wait_for

from ports import free_port

DOC = "/v1/sources/inbox/documents/"


def test_upsert_replay_stale_and_search(server: Server) -> None:
    with server.client("ingest") as ingest, server.client("backend") as backend:
        body = {
            "version": 2,
            "title": "Kayak rental",
            "text": "Kayaks rent for 30 euros.",
            "access": {"groups": ["sales"]},
            "metadata": {"team": "sales"},
        }
        first = ingest.put(DOC + "crm/notes/kayak", json=body)
        assert first.status_code == 200 and first.json()["status"] == "new"
        replay = ingest.put(DOC + "crm/notes/kayak", json=body)
        assert replay.json()["status"] == "unchanged"
        stale = ingest.put(DOC + "crm/notes/kayak", json={**body, "version": 1, "text": "old"})
        assert stale.status_code == 409 and stale.json()["current_version"] == 2
        assert "older than the current version 2" in stale.json()["error"]
        newer = ingest.put(
            DOC + "crm/notes/kayak",
            json={**body, "version": 3, "text": "Kayaks rent for 35 euros."},
        )
        assert newer.json()["status"] == "changed"

        def found() -> bool:
            hits = backend.post(
                "/v1/search", json={"query": "kayaks rent", "groups": ["sales"], "mode": "keyword"}
            )
            return any("35 euros" in h["chunk"] for h in hits.json()["results"])

        wait_for(found)  # the background drain indexed it
        none = backend.post("/v1/search", json={"query": "kayaks rent", "groups": ["other"]})
        assert none.json()["results"] == []
    with server.client() as admin:
        doc = admin.get(
            "/v1/documents", params={"source": "inbox", "object": "crm/notes/kayak"}
        ).json()
        assert doc["access"]["groups"] == ["sales"] and doc["metadata"] == {"team": "sales"}
        assert doc["source_version"] == "3"


def test_delete_tombstone_blocks_a_late_older_upsert(server: Server) -> None:
    with server.client("ingest") as ingest:
        assert (
            ingest.put(DOC + "late", json={"version": 1, "text": "first"}).json()["status"] == "new"
        )
        gone = ingest.delete(DOC + "late", params={"version": 3})
        assert gone.status_code == 200 and gone.json()["status"] == "deleted"
        late = ingest.put(DOC + "late", json={"version": 2, "text": "late upsert"})
        assert late.status_code == 409 and late.json()["current_version"] == 3
        assert ingest.delete(DOC + "late", params={"version": 3}).json()["status"] == "unchanged"
        again = ingest.put(DOC + "late", json={"version": 4, "text": "back again"})
        assert again.json()["status"] == "new"
        old_delete = ingest.delete(DOC + "late", params={"version": 2})
        assert old_delete.status_code == 409 and old_delete.json()["current_version"] == 4
        assert ingest.delete(DOC + "late").status_code == 422  # version is required


def test_a_delete_of_a_never_held_object_refuses_its_late_older_create(server: Server) -> None:
    with server.client("ingest") as ingest, server.client() as admin:
        gone = ingest.delete(DOC + "erased/post", params={"version": 5})
        assert gone.status_code == 200 and gone.json()["status"] == "deleted"
        late = ingest.put(DOC + "erased/post", json={"version": 3, "text": "the accidental post"})
        assert late.status_code == 409 and late.json()["current_version"] == 5
        same = ingest.put(DOC + "erased/post", json={"version": 5, "text": "the accidental post"})
        assert same.status_code == 409 and same.json()["current_version"] == 5
        doc = admin.get("/v1/documents", params={"source": "inbox", "object": "erased/post"})
        assert doc.json()["state"] == "deleted"
        assert ingest.delete(DOC + "erased/post", params={"version": 5}).json()["status"] == (
            "unchanged"
        )
        back = ingest.put(DOC + "erased/post", json={"version": 6, "text": "a real post"})
        assert back.status_code == 200 and back.json()["status"] == "new"


def test_a_newer_delete_of_a_deleted_document_moves_its_tombstone_up(server: Server) -> None:
    with server.client("ingest") as ingest:
        assert ingest.put(DOC + "twice", json={"version": 1, "text": "one"}).status_code == 200
        assert ingest.delete(DOC + "twice", params={"version": 2}).json()["status"] == "deleted"
        moved = ingest.delete(DOC + "twice", params={"version": 5})
        assert moved.status_code == 200 and moved.json()["status"] == "deleted"
        late = ingest.put(DOC + "twice", json={"version": 4, "text": "between the deletes"})
        assert late.status_code == 409 and late.json()["current_version"] == 5
        older = ingest.delete(DOC + "twice", params={"version": 3})
        assert older.status_code == 409 and older.json()["current_version"] == 5
        assert ingest.delete(DOC + "twice", params={"version": 5}).json()["status"] == "unchanged"
        back = ingest.put(DOC + "twice", json={"version": 6, "text": "back"})
        assert back.status_code == 200 and back.json()["status"] == "new"


def test_batch_in_order_with_per_item_results(server: Server) -> None:
    ops = [
        {"op": "upsert", "object_id": f"batch/{i}", "version": 1, "text": f"batch document {i}"}
        for i in range(20)
    ]
    ops += [
        {"op": "upsert", "object_id": "batch/0", "version": 2, "text": "batch document zero, v2"},
        {"op": "delete", "object_id": "batch/1", "version": 2},
        {"op": "upsert", "object_id": "batch/1", "version": 1, "text": "late"},
        {
            "op": "upsert",
            "object_id": "batch/pdf",
            "version": 1,
            "content_base64": base64.b64encode(b"%PDF-1.4 broken").decode(),
            "media_type": "application/pdf",
        },
    ]
    with server.client("ingest") as ingest:
        results = ingest.post("/v1/sources/inbox/documents:batch", json={"operations": ops}).json()[
            "results"
        ]
        statuses = [r["status"] for r in results]
        assert statuses[:20] == ["new"] * 20
        assert statuses[20:] == ["changed", "deleted", "stale", "failed"]
        assert "pdf" in results[-1]["error"]
        too_many = [{"object_id": f"x{i}", "version": 1, "text": "x"} for i in range(501)]
        assert (
            ingest.post(
                "/v1/sources/inbox/documents:batch", json={"operations": too_many}
            ).status_code
            == 422
        )
    with server.client() as admin:
        fails = admin.get("/v1/failures", params={"source": "inbox"}).json()["failures"]
        assert [f["object_id"] for f in fails] == ["batch/pdf"]  # bad content: a failure record
        assert (
            admin.get("/v1/documents", params={"source": "inbox", "object": "batch/1"}).json()[
                "state"
            ]
            == "deleted"
        )


def test_push_only_to_push_sources(server: Server) -> None:
    with server.client("admin") as admin:  # an admin key may name any source
        r = admin.put("/v1/sources/docs/documents/x", json={"version": 1, "text": "x"})
        assert r.status_code == 409 and "only `push` sources" in r.json()["error"]
        assert (
            admin.put("/v1/sources/nope/documents/x", json={"version": 1, "text": "x"}).status_code
            == 404
        )
    with server.client("ingest") as ingest:
        both = ingest.put(DOC + "x", json={"version": 1, "text": "x", "content_base64": "eA=="})
        assert both.status_code == 400 and "exactly one" in both.json()["error"]
        bad = ingest.put(
            DOC + "x", json={"version": 1, "content_base64": "%%%", "media_type": "text/plain"}
        )
        assert bad.status_code == 400 and "base64" in bad.json()["error"]
        unreadable = ingest.put(
            DOC + "y.pdf",
            json={"version": 1, "content_base64": "JVBERg==", "media_type": "application/pdf"},
        )
        assert unreadable.status_code == 400 and "failure record" in unreadable.json()["error"]


def test_a_2xx_survives_sigkill(tmp_path: Path) -> None:
    srv = Server(make_workspace(tmp_path), free_port(), tmp_path / "server.log").start()
    try:
        with srv.client("ingest") as ingest:
            r = ingest.put(DOC + "durable/one", json={"version": 7, "text": "durable words"})
            assert r.status_code == 200
        srv.stop(signal.SIGKILL)  # right after the 2xx: no shutdown, no drain
        srv.start()
        with srv.client() as admin:
            doc = admin.get("/v1/documents", params={"source": "inbox", "object": "durable/one"})
            assert doc.status_code == 200 and doc.json()["source_version"] == "7"
            # the pending index work is picked up by the new process
            wait_for(lambda: admin.get("/v1/indexes").json()["indexes"]["main"]["pending"] == 0)
        with srv.client("backend") as backend:
            hits = backend.post("/v1/search", json={"query": "durable", "mode": "keyword"})
            assert hits.json()["results"] == []  # default ACL of inbox: nobody
    finally:
        srv.stop()


@pytest.mark.parametrize("host", ["0.0.0.0"])
def test_non_loopback_without_keys_refuses_to_start(tmp_path: Path, host: str) -> None:
    config = make_workspace(tmp_path)
    text = config.read_text()
    config.write_text(text[: text.index("[[api.keys]]")])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "headwater",
            "-c",
            str(config),
            "serve",
            "--host",
            host,
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=120,
    )
    assert done.returncode == 2
    assert "no API key is configured" in " ".join(done.stderr.split())
