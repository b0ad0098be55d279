"""Text the API refuses up front (422), and push refusals that say what really happened.

Found by hand against a real server: a lone surrogate (JSON ``\\ud800``) in a pushed
document's metadata was committed and then failed every background index drain, so no
other document was indexed again; in a title or media type it was a 500 "bug". A NUL in
an object id, title or query was a 500 with the SQL text on PostgreSQL. A percent-encoded
object id that is not UTF-8 was silently decoded with U+FFFD, so distinct ids collided.
"""

from __future__ import annotations

import re

import httpx
from api_support import KEYS, Server, wait_for

SURROGATE_TITLE = b'{"version": 1, "title": "\\ud800", "text": "x"}'
SURROGATE_META = b'{"version": 1, "text": "x", "metadata": {"k": "\\ud800"}}'
JSON = {"content-type": "application/json"}


def test_lone_surrogates_are_refused_and_never_block_indexing(server: Server) -> None:
    with server.client("ingest") as ingest, server.client() as admin:
        for name, body in (("t1", SURROGATE_TITLE), ("t2", SURROGATE_META)):
            r = ingest.put(f"/v1/sources/inbox/documents/{name}", content=body, headers=JSON)
            assert r.status_code == 422 and "surrogate" in r.json()["error"], r.text
        r = admin.post("/v1/dlq/redrive", content=b'{"stage": "\\ud800"}', headers=JSON)
        assert r.status_code == 422, r.text
        ok = ingest.put(
            "/v1/sources/inbox/documents/after",
            json={"version": 1, "text": "okapi", "access": {"public": True}},
        )
        assert ok.status_code == 200
        wait_for(lambda: admin.get("/v1/indexes").json()["indexes"]["main"]["pending"] == 0)
    assert "Traceback" not in server.log.read_text()


def test_nul_and_non_utf8_urls_are_refused(server: Server) -> None:
    with server.client("ingest") as ingest, server.client() as admin:
        for path in ("a%00b", "%FF", "caf%E9"):  # NUL; not UTF-8 (latin-1 é)
            r = ingest.put(f"/v1/sources/inbox/documents/{path}", json={"version": 1, "text": "x"})
            assert r.status_code == 422 and "path" in r.json()["error"], r.text
        r = ingest.delete("/v1/sources/inbox/documents/a%00b", params={"version": 1})
        assert r.status_code == 422
        r = ingest.put(
            "/v1/sources/inbox/documents/t3", json={"version": 1, "title": "a\x00", "text": "x"}
        )
        assert r.status_code == 422 and "NUL" in r.json()["error"]
        r = admin.get("/v1/documents", params={"source": "inbox", "object": "a\x00"})
        assert r.status_code == 422 and "NUL" in r.json()["error"]
        assert admin.get("/v1/failures?source=%00").status_code == 422
        # The UTF-8 spelling of the same id is accepted, and nothing else was committed.
        ok = ingest.put("/v1/sources/inbox/documents/caf%C3%A9", json={"version": 1, "text": "x"})
        assert ok.status_code == 200 and ok.json()["object_id"] == "café"
        inbox = next(s for s in admin.get("/v1/sources").json()["sources"] if s["id"] == "inbox")
        assert inbox["documents"] == 2  # "after" (above) and "café"


def test_a_dead_lettered_version_is_named_in_its_own_result(server: Server) -> None:
    bad_pdf = {"content_base64": "eA==", "media_type": "application/pdf"}
    with server.client("ingest") as ingest:
        first = ingest.put("/v1/sources/inbox/documents/d1", json={"version": 1, **bad_pdf})
        assert first.status_code == 400 and "failure record" in first.json()["error"]
        again = ingest.put("/v1/sources/inbox/documents/d1", json={"version": 1, "text": "fine"})
        assert again.status_code == 400
        assert "dead-letter" in again.json()["error"]
        assert "failure record was written" not in again.json()["error"]
        ops = [
            {"object_id": "d2", "version": 1, **bad_pdf},
            {"object_id": "d1", "version": 1, "text": "fine"},
        ]
        batch = ingest.post("/v1/sources/inbox/documents:batch", json={"operations": ops})
        results = batch.json()["results"]
        assert [r["status"] for r in results] == ["failed", "failed"]
        assert "pdf" in results[0]["error"]
        assert "dead-letter" in results[1]["error"] and "pdf" not in results[1]["error"]
        newer = ingest.put("/v1/sources/inbox/documents/d1", json={"version": 2, "text": "fine"})
        assert newer.json()["status"] == "new"


def test_an_upsert_at_the_delete_version_is_not_called_older(server: Server) -> None:
    with server.client("ingest") as ingest:
        ingest.put("/v1/sources/inbox/documents/e1", json={"version": 1, "text": "x"})
        ingest.delete("/v1/sources/inbox/documents/e1", params={"version": 3})
        r = ingest.put("/v1/sources/inbox/documents/e1", json={"version": 3, "text": "y"})
        assert r.status_code == 409 and r.json()["current_version"] == 3
        assert "not newer than the current version 3" in r.json()["error"]


def test_admin_dlq_action_on_an_out_of_range_id_is_not_a_500(server: Server) -> None:
    with httpx.Client(base_url=server.url, follow_redirects=False) as browser:
        form = browser.get("/admin/login").text
        token = re.search(r'name="csrf" value="([^"]+)"', form)
        assert token is not None
        browser.post("/admin/login", data={"key": KEYS["admin"], "csrf": token.group(1)})
        page = browser.get("/admin/dlq").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page)
        assert csrf is not None
        r = browser.post(f"/admin/dlq/{10**25}/drop", data={"csrf": csrf.group(1)})
        assert r.status_code == 422, r.text
        # A redrive the workspace refuses is said on the page (the flash was an unquoted
        # query: a "#" in it cut the rest off), not answered as a JSON error.
        with server.client("ingest") as ingest, server.client() as admin:
            ingest.put(
                "/v1/sources/inbox/documents/f1",
                json={"version": 1, "content_base64": "eA==", "media_type": "application/pdf"},
            )
            entry = next(
                e for e in admin.get("/v1/dlq").json()["entries"] if e["object_id"] == "f1"
            )
        r = browser.post(f"/admin/dlq/{entry['id']}/redrive", data={"csrf": csrf.group(1)})
        assert r.status_code == 303
        page = browser.get(r.headers["location"]).text
        assert f"DLQ entry #{entry['id']}" in page and "drop the entry" in page


def test_a_pushed_documents_parse_failure_is_not_redriven_into_limbo(server: Server) -> None:
    # A redrive reopened it ("retrying"), re-synced the push source (which reads nothing)
    # and left it open forever: gone from the DLQ, never retried, never resolved.
    bad_pdf = {"content_base64": "eA==", "media_type": "application/pdf"}
    with server.client("ingest") as ingest, server.client() as admin:
        ingest.put("/v1/sources/inbox/documents/r1", json={"version": 1, **bad_pdf})
        entry = next(e for e in admin.get("/v1/dlq").json()["entries"] if e["object_id"] == "r1")
        named = admin.post("/v1/dlq/redrive", json={"ids": [entry["id"]]})
        assert named.status_code == 400 and "push the document again" in named.json()["error"]
        everything = admin.post("/v1/dlq/redrive", json={"all": True})
        assert everything.status_code == 200
        assert admin.get(f"/v1/dlq/{entry['id']}").json()["status"] == "dead"


def test_deleting_a_pushed_document_settles_its_dead_letter(server: Server) -> None:
    # The object was gone but its DLQ entry stayed dead forever (push has no listing).
    bad_pdf = {"content_base64": "eA==", "media_type": "application/pdf"}
    with server.client("ingest") as ingest, server.client() as admin:

        def dead(object_id: str) -> bool:
            return any(e["object_id"] == object_id for e in admin.get("/v1/dlq").json()["entries"])

        ingest.put("/v1/sources/inbox/documents/g1", json={"version": 4, **bad_pdf})
        ingest.put("/v1/sources/inbox/documents/g2", json={"version": 1, "text": "fine"})
        ingest.put("/v1/sources/inbox/documents/g2", json={"version": 2, **bad_pdf})
        assert dead("g1") and dead("g2")
        # g1 was never held: each delete writes (then moves up) its tombstone.
        older = ingest.delete("/v1/sources/inbox/documents/g1", params={"version": 3})
        assert older.json()["status"] == "deleted" and dead("g1")  # a later version failed
        never_held = ingest.delete("/v1/sources/inbox/documents/g1", params={"version": 4})
        assert never_held.json()["status"] == "deleted" and not dead("g1")
        held = ingest.delete("/v1/sources/inbox/documents/g2", params={"version": 3})
        assert held.json()["status"] == "deleted" and not dead("g2")
