"""A pushed batch's content: written side by side, and always before the rows point at it.

``headwater.sync.push`` stages a part's content while deciding it and writes it to the
content store on several threads just before the commit (one fsync after another made a
batch of 500 wait 500 fsyncs). These tests hold it to both halves, on both manifests:
the writes overlap (a store whose put waits for a second put in flight), and no row is
committed before its content, nor at all when a write fails.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.connectors.push import PushConnector
from headwater.manifest.content import FolderContentStore
from headwater.sync.push import PushOp, push
from headwater.types import SourceDocument
from headwater.workspace import Workspace
from workspace_helpers import write_config

SOURCE = '[[source]]\nid = "inbox"\ntype = "push"\naccess = { groups = ["staff"] }\n'


@pytest.fixture
def ws(tmp_path: Path, manifest_url: str) -> Iterator[Workspace]:
    config = write_config(tmp_path, manifest_url=manifest_url, sources=SOURCE)
    with Workspace.open(config, connector_types={"push": PushConnector}) as opened:
        yield opened


def upserts(count: int) -> list[PushOp]:
    ops = []
    for n in range(count):
        doc = SourceDocument(
            object_id=f"doc/{n}",
            locator=f"push://inbox/doc/{n}",
            title=f"doc {n}",
            version="1",
            content=f"document number {n} says something of its own".encode(),
            media_type="text/plain",
            sequence=1,
        )
        ops.append(PushOp("upsert", f"doc/{n}", 1, doc))
    return ops


class Recording(FolderContentStore):
    """A real folder store that checks, at every write, what the manifest holds then."""

    def __init__(self, root: Path, ws: Workspace, pair: threading.Barrier | None = None) -> None:
        super().__init__(root)
        self.ws, self.pair = ws, pair
        self.rows_at_put: list[int] = []
        self.fail_on: str | None = None

    def put(self, checksum: str, text: str) -> None:
        self.rows_at_put.append(self.ws.manifest.count_documents("inbox", "active"))
        if self.fail_on is not None and self.fail_on in text:
            raise OSError(28, "No space left on device")
        if self.pair is not None:
            self.pair.wait()  # returns only while another write is in flight too
        super().put(checksum, text)


def test_a_batch_writes_its_content_side_by_side(ws: Workspace, tmp_path: Path) -> None:
    # Two writes meet at the barrier only if they run at once; written one after the
    # other, the first waits alone and the barrier breaks (BrokenBarrierError).
    store = Recording(tmp_path / "content", ws, threading.Barrier(2, timeout=10))
    source = ws.sources.identity(ws.source_section("inbox"))
    results = push(ws.manifest, source, store, upserts(8))
    assert [r.status for r in results] == ["new"] * 8
    assert ws.manifest.count_documents("inbox", "active") == 8
    assert store.rows_at_put == [0] * 8  # every write came before the commit
    for n in range(8):
        record = ws.manifest.documents_by_object_ids("inbox", [f"doc/{n}"])[f"doc/{n}"]
        assert record.checksum is not None
        assert f"number {n} says" in store.get(record.checksum)


def test_a_failed_write_commits_nothing(ws: Workspace, tmp_path: Path) -> None:
    store = Recording(tmp_path / "content", ws)
    store.fail_on = "number 5 says"
    source = ws.sources.identity(ws.source_section("inbox"))
    with pytest.raises(OSError, match="No space left"):
        push(ws.manifest, source, store, upserts(8))
    assert ws.manifest.count_documents("inbox", "active") == 0
    # The batch sent again once the disk has room is committed whole.
    store.fail_on = None
    results = push(ws.manifest, source, store, upserts(8))
    assert [r.status for r in results] == ["new"] * 8
    assert ws.manifest.count_documents("inbox", "active") == 8
