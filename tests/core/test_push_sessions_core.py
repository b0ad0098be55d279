"""Push sessions and pushed groups in the sync core, on both manifests: expiry, a second
open racing the first, group versions and expansion at search."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.clock import utcnow
from headwater.connectors.push import PushConnector
from headwater.errors import ConfigError, PushConflict
from headwater.manifest.push_sessions import EXPIRED, OPEN
from headwater.sync.push import PushOp
from headwater.types import SourceDocument
from headwater.workspace import Workspace
from workspace_helpers import write_config

PUSH_SOURCE = '[[source]]\nid = "inbox"\ntype = "push"\naccess = { groups = ["staff"] }\n'
QUICK = '[api]\npush_session_timeout = "1s"\n'


@pytest.fixture
def ws(tmp_path: Path, manifest_url: str) -> Iterator[Workspace]:
    config = write_config(tmp_path, manifest_url=manifest_url, sources=PUSH_SOURCE, extra=QUICK)
    with Workspace.open(config, connector_types={"push": PushConnector}) as opened:
        yield opened


def upsert(object_id: str, version: int = 1) -> PushOp:
    doc = SourceDocument(
        object_id=object_id,
        locator=f"push://inbox/{object_id}",
        title=object_id,
        version=str(version),
        content=f"{object_id} at version {version}".encode(),
        media_type="text/plain",
        sequence=version,
    )
    return PushOp("upsert", object_id, version, doc)


def test_an_idle_session_expires_and_deletes_nothing(ws: Workspace) -> None:
    ws.push("inbox", [upsert("a"), upsert("b")])
    sessions = ws.push_sessions("inbox")
    first = sessions.open()
    sessions.send(first.session_id, [upsert("c")])
    expires = first.expires_at(sessions.idle)
    assert expires is not None
    while utcnow() <= sessions.get(first.session_id).touched_at + sessions.idle:
        threading.Event().wait(0.05)  # until the timeout has passed since the last page
    assert sessions.get(first.session_id).state == EXPIRED
    with pytest.raises(PushConflict, match="expired"):
        sessions.complete(first.session_id)
    with pytest.raises(PushConflict, match="expired"):
        sessions.send(first.session_id, [upsert("d")])
    assert ws.manifest.count_documents("inbox") == 3  # a, b and c: nothing deleted
    second = sessions.open()  # the expired one no longer holds the source
    assert second.state == OPEN and second.session_id != first.session_id


def test_one_of_two_racing_opens_wins(ws: Workspace) -> None:
    sessions = ws.push_sessions("inbox")
    results: list[str] = []
    start = threading.Barrier(2)

    def attempt() -> None:
        start.wait(timeout=10)
        try:
            results.append(sessions.open().session_id)
        except PushConflict as exc:
            results.append(f"refused: {exc}")

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    refused = [r for r in results if r.startswith("refused")]
    won = [r for r in results if not r.startswith("refused")]
    assert len(won) == 1 and len(refused) == 1, results
    assert won[0] in refused[0]  # the refusal names the open session


def test_pushed_groups_are_versioned_and_expanded_at_search(ws: Workspace) -> None:
    first = ws.push_group("inbox", "eng", ["Ann@Acme.test", "bob@acme.test"], 1)
    assert (first.status, first.members, first.group) == ("new", 2, "inbox:group:eng")
    groups = ws.principals_of("ann@acme.test").groups
    assert "inbox:group:eng" in groups
    assert ws.push_group("inbox", "eng", ["bob@acme.test", "ann@acme.test"], 1).status == (
        "unchanged"
    )
    stale = ws.push_group("inbox", "eng", ["eve@acme.test"], 0)
    assert (stale.status, stale.current_version) == ("stale", 1)
    assert ws.push_group("inbox", "eng", ["bob@acme.test"], 2).status == "changed"
    assert "inbox:group:eng" not in ws.principals_of("ann@acme.test").groups
    assert ws.push_group("inbox", "eng", None, 3).status == "deleted"
    assert "inbox:group:eng" not in ws.principals_of("bob@acme.test").groups
    late = ws.push_group("inbox", "eng", ["bob@acme.test"], 2)  # older than the delete
    assert late.status == "stale" and late.current_version == 3
    assert ws.push_group("inbox", "eng", ["bob@acme.test"], 4).status == "new"
    with pytest.raises(ConfigError, match="U\\+"):
        ws.push_group("inbox", "eng", ["bob@acme.test\u200b"], 5)  # refused, never folded


def test_a_stale_document_sent_in_a_session_counts_as_sent(ws: Workspace) -> None:
    ws.push("inbox", [upsert("kept", 5), upsert("gone", 1)])
    sessions = ws.push_sessions("inbox")
    opened = sessions.open()
    [stale] = sessions.send(opened.session_id, [upsert("kept", 3)])
    assert (stale.status, stale.current_version) == ("stale", 5)
    report = sessions.complete(opened.session_id)
    assert (report.status, report.deleted) == ("completed", 1)  # "gone" only
    kept = ws.manifest.document_by_object("inbox", "kept")
    assert kept is not None and kept.state == "active" and kept.sequence == 5
    gone = ws.manifest.document_by_object("inbox", "gone")
    assert gone is not None and gone.state == "deleted"
