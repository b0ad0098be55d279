"""Full-replace push sessions and group push through a real server: open, pages,
complete, the guard, abort; pushed memberships expanded at search, versioned.

Each test has a push source of its own (a complete deletes every document of its source
that the session did not send).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from api_support import Server, make_workspace, wait_for

from ports import free_port

SOURCES = ("inbox", "full", "guarded", "scrap", "people")
EXTRA = "".join(f'\n[[source]]\nid = "{s}"\ntype = "push"\n' for s in SOURCES[1:])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("sessions")
    config = make_workspace(root, EXTRA, ingest_sources=SOURCES)
    with Server(config, free_port(), root / "server.log") as srv:
        yield srv


def doc(object_id: str, version: int, text: str) -> dict[str, Any]:
    return {
        "object_id": object_id,
        "version": version,
        "title": object_id,
        "text": text,
        "access": {"groups": ["staff"]},
    }


def push_all(client: httpx.Client, source: str, ids: list[str]) -> None:
    ops = [{"op": "upsert", **doc(o, 1, f"{o} first text about herons")} for o in ids]
    answer = client.post(f"/v1/sources/{source}/documents:batch", json={"operations": ops})
    assert answer.status_code == 200, answer.text
    assert {r["status"] for r in answer.json()["results"]} == {"new"}


def state_of(client: httpx.Client, source: str, object_id: str) -> str | None:
    answer = client.get("/v1/documents", params={"source": source, "object": object_id})
    return answer.json()["state"] if answer.status_code == 200 else None


def test_a_completed_session_deletes_what_it_did_not_send(server: Server) -> None:
    ids = [f"kb/{n}" for n in range(10)]
    with server.client("ingest") as ingest, server.client() as admin:
        push_all(ingest, "full", ids)
        opened = ingest.post("/v1/sources/full/sessions")
        assert opened.status_code == 201, opened.text
        session = opened.json()
        assert session["state"] == "open" and session["source"] == "full"
        assert session["expires_at"] > session["touched_at"]  # an hour after the last request
        base = f"/v1/sources/full/sessions/{session['session_id']}"

        second = ingest.post("/v1/sources/full/sessions")
        assert second.status_code == 409
        assert session["session_id"] in second.json()["error"]

        page1 = ingest.put(
            base + "/documents",
            json={"documents": [doc(o, 1, f"{o} first text about herons") for o in ids[:4]]},
        )
        assert page1.status_code == 200, page1.text
        assert [r["status"] for r in page1.json()["results"]] == ["unchanged"] * 4
        page2 = [doc(o, 1, f"{o} first text about herons") for o in ("kb/5", "kb/7", "kb/8")]
        page2 += [doc("kb/6", 2, "kb/6 now about egrets"), doc("kb/new", 1, "new")]
        answer = ingest.put(base + "/documents", json={"documents": page2})
        assert [r["status"] for r in answer.json()["results"]] == [
            "unchanged",
            "unchanged",
            "unchanged",
            "changed",
            "new",
        ]
        assert ingest.get(base).json()["sent"] == 9

        done = ingest.post(base + ":complete")
        assert done.status_code == 200, done.text
        body = done.json()  # kb/4 and kb/9 were not sent: 2 of 11 (18%) <= 20%
        assert body["status"] == "completed"
        assert (body["deleted"], body["candidates"], body["active"]) == (2, 2, 11)
        for gone in ("kb/4", "kb/9"):
            assert state_of(admin, "full", gone) == "deleted"
        for kept in ("kb/0", "kb/3", "kb/6", "kb/8", "kb/new"):
            assert state_of(admin, "full", kept) == "active"
        closed = ingest.get(base).json()
        assert closed["state"] == "completed" and closed["deleted"] == 2
        assert closed["expires_at"] is None
        late = ingest.put(base + "/documents", json={"documents": [doc("kb/9", 3, "late")]})
        assert late.status_code == 409 and "completed" in late.json()["error"]
        assert ingest.post("/v1/sources/full/sessions").status_code == 201  # a new one


def test_the_prune_fraction_blocks_a_complete_until_forced(server: Server) -> None:
    ids = [f"g/{n}" for n in range(10)]
    with server.client("ingest") as ingest, server.client() as admin:
        push_all(ingest, "guarded", ids)
        sid = ingest.post("/v1/sources/guarded/sessions").json()["session_id"]
        base = f"/v1/sources/guarded/sessions/{sid}"
        ingest.put(
            base + "/documents",
            json={"documents": [doc(o, 1, f"{o} first text about herons") for o in ids[:6]]},
        )
        blocked = ingest.post(base + ":complete")
        assert blocked.status_code == 409, blocked.text
        numbers = blocked.json()
        assert numbers["status"] == "blocked"
        assert (numbers["candidates"], numbers["active"]) == (4, 10)
        assert numbers["fraction"] == pytest.approx(0.4) and numbers["max_fraction"] == 0.2
        assert "force" in numbers["error"] and numbers["deleted"] == 0
        assert all(state_of(admin, "guarded", o) == "active" for o in ids)
        assert ingest.get(base).json()["state"] == "open"  # still open: send more, or force

        forced = ingest.post(base + ":complete", json={"force": True})
        assert forced.status_code == 200, forced.text
        assert forced.json()["deleted"] == 4
        assert [state_of(admin, "guarded", o) for o in ids[6:]] == ["deleted"] * 4

        # A pushed version at or below the one deleted is refused; a newer one is back.
        again = ingest.put("/v1/sources/guarded/documents/g/9", json={"version": 1, "text": "x"})
        assert again.status_code == 409
        newer = ingest.put("/v1/sources/guarded/documents/g/9", json={"version": 2, "text": "x"})
        assert newer.json()["status"] == "new"


def test_an_aborted_session_deletes_nothing(server: Server) -> None:
    with server.client("ingest") as ingest, server.client() as admin:
        push_all(ingest, "scrap", ["s/1", "s/2"])
        sid = ingest.post("/v1/sources/scrap/sessions").json()["session_id"]
        base = f"/v1/sources/scrap/sessions/{sid}"
        ingest.put(base + "/documents", json={"documents": [doc("s/3", 1, "third")]})
        aborted = ingest.post(base + ":abort")
        assert aborted.status_code == 200 and aborted.json()["state"] == "aborted"
        assert [state_of(admin, "scrap", o) for o in ("s/1", "s/2", "s/3")] == ["active"] * 3
        assert ingest.post(base + ":complete").status_code == 409  # closed
        assert ingest.post(base + ":abort").status_code == 409
        assert ingest.post("/v1/sources/scrap/sessions").status_code == 201


def test_sessions_are_scoped_like_pushes(server: Server) -> None:
    with server.client("ingest") as ingest, server.client() as admin:
        assert ingest.post("/v1/sources/docs/sessions").status_code == 403  # not its source
        assert admin.post("/v1/sources/docs/sessions").status_code == 409  # not a push source
        assert admin.post("/v1/sources/nope/sessions").status_code == 404
        missing = ingest.get("/v1/sources/inbox/sessions/no-such-session")
        assert missing.status_code == 404
        sid = ingest.post("/v1/sources/inbox/sessions").json()["session_id"]
        # another source's path does not reach the session
        assert ingest.post(f"/v1/sources/full/sessions/{sid}:abort").status_code == 404
        assert ingest.post(f"/v1/sources/inbox/sessions/{sid}:abort").status_code == 200


def test_a_session_page_is_indexed_like_a_push(server: Server) -> None:
    with server.client("ingest") as ingest, server.client("backend") as backend:
        sid = ingest.post("/v1/sources/inbox/sessions").json()["session_id"]
        base = f"/v1/sources/inbox/sessions/{sid}"
        page = {"documents": [doc("heron", 1, "The grey heron stands in the shallows.")]}
        assert ingest.put(base + "/documents", json=page).status_code == 200

        def found() -> bool:
            hits = backend.post(
                "/v1/search", json={"query": "grey heron", "groups": ["staff"], "mode": "keyword"}
            ).json()["results"]
            return any(h["title"] == "heron" for h in hits)

        wait_for(found)
        assert ingest.post(base + ":complete").status_code == 200


def test_a_pushed_group_opens_documents_to_its_members(server: Server) -> None:
    group = "/v1/groups/people/eng"
    with server.client("ingest") as ingest, server.client("backend") as backend:
        note = {
            "version": 1,
            "title": "release plan",
            "text": "The kingfisher release ships in May.",
            "access": {"groups": ["people:group:eng"]},
        }
        assert ingest.put("/v1/sources/people/documents/plan", json=note).status_code == 200

        def sees(user: str) -> bool:
            hits = backend.post(
                "/v1/search", json={"query": "kingfisher release", "user": user, "mode": "keyword"}
            ).json()["results"]
            return any(h["title"] == "release plan" for h in hits)

        put = ingest.put(group, json={"version": 1, "members": ["Ann@Acme.test"]})
        assert put.status_code == 200, put.text
        assert put.json() == {
            "source": "people",
            "group": "eng",
            "principal": "people:group:eng",
            "version": 1,
            "status": "new",
            "members": 1,
            "groups": 0,
        }
        wait_for(lambda: sees("ann@acme.test"))
        assert not sees("bob@acme.test")
        replay = ingest.put(group, json={"version": 1, "members": ["ann@acme.test"]})
        assert replay.json()["status"] == "unchanged"
        stale = ingest.put(group, json={"version": 0, "members": ["eve@acme.test"]})
        assert stale.status_code == 409 and stale.json()["current_version"] == 1
        moved = ingest.put(group, json={"version": 2, "members": ["bob@acme.test"]})
        assert moved.json()["status"] == "changed"
        assert sees("bob@acme.test") and not sees("ann@acme.test")  # at once, no re-index
        gone = ingest.delete(group, params={"version": 3})
        assert gone.status_code == 200 and gone.json()["status"] == "deleted"
        assert not sees("bob@acme.test")
        late = ingest.put(group, json={"version": 2, "members": ["bob@acme.test"]})
        assert late.status_code == 409 and late.json()["current_version"] == 3
        bad = ingest.put(group, json={"version": 4, "members": [" bob@acme.test"]})
        assert bad.status_code == 400 and "whitespace" in bad.json()["error"]


def test_group_push_is_scoped_to_the_keys_push_sources(server: Server) -> None:
    body = {"version": 1, "members": ["ann@acme.test"]}
    with server.client("ingest") as ingest, server.client() as admin:
        assert ingest.put("/v1/groups/docs/eng", json=body).status_code == 403
        assert admin.put("/v1/groups/docs/eng", json=body).status_code == 409  # not push
        assert admin.put("/v1/groups/nope/eng", json=body).status_code == 404
