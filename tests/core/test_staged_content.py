"""Content staged per batch (``manifest/staged.py``): written side by side before the
commit that points at it, bounded in memory, and a failed write stops the commit."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.manifest.content import FolderContentStore
from headwater.manifest.records import BatchCommit
from headwater.manifest.staged import StagedContent
from headwater.manifest.store import Manifest
from workspace_helpers import filesystem_source, write_config


def test_flush_writes_every_staged_text_and_reads_see_staged_first(tmp_path: Path) -> None:
    store = FolderContentStore(tmp_path / "content")
    staged = StagedContent(store)
    for n in range(20):
        staged.put(f"{n:064x}", f"text {n}")
    assert staged.get(f"{3:064x}") == "text 3" and store.prefixes() == []  # nothing written yet
    staged.flush()
    assert all(store.get(f"{n:064x}") == f"text {n}" for n in range(20))
    assert staged.pending == {}


def test_a_put_past_the_limit_flushes_what_is_staged(tmp_path: Path) -> None:
    store = FolderContentStore(tmp_path / "content")
    staged = StagedContent(store, limit_chars=10)
    staged.put("a" * 64, "12345")
    assert store.prefixes() == []
    staged.put("b" * 64, "678901")  # 11 chars staged: over the limit
    assert store.get("a" * 64) == "12345" and store.get("b" * 64) == "678901"


class FailingStore(FolderContentStore):
    """Counts writes started and ended; the text "bad" fails its write."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.started = self.ended = 0
        self.lock = threading.Lock()

    def put(self, checksum: str, text: str) -> None:
        with self.lock:
            self.started += 1
        try:
            if text == "bad":
                raise OSError(28, "No space left on device")
            super().put(checksum, text)
        finally:
            with self.lock:
                self.ended += 1


def test_a_failed_write_is_raised_after_the_writes_in_flight(tmp_path: Path) -> None:
    store = FailingStore(tmp_path / "content")
    staged = StagedContent(store)
    for n in range(30):
        staged.put(f"{n:064x}", "bad" if n == 4 else f"text {n}")
    with pytest.raises(OSError, match="No space left"):
        staged.flush()
    # raised only once no write is in flight (writes not yet started may be dropped)
    assert store.started == store.ended >= 5


def test_every_text_a_sync_commits_is_in_the_store_at_its_commit(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    missing: list[str] = []
    commits = 0
    real = Manifest.commit_batch

    def checked(self: Manifest, run_id: str, batch: BatchCommit, **kwargs: object) -> None:
        nonlocal commits
        commits += 1
        for write in batch.writes:
            if write.checksum and not store.path(write.checksum).is_file():
                missing.append(write.object_id)
        real(self, run_id, batch, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Manifest, "commit_batch", checked)
    with Workspace.open(config) as ws:
        store = ws.content_store
        assert isinstance(store, FolderContentStore)
        run = ws.sync(index=False).runs[0]
    assert commits and run.counts.new == 5 and missing == []
