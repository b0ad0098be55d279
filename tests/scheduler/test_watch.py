"""``watch = true`` with real inotify: the scheduler (``headwater run``'s loop, in a thread)
turns saves, new files and deletes into targeted reads (no new run record: no scan), a
new folder into a scan, and a watcher whose queue overflows into a scope hint.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from headwater.hints.watch import Watcher
from headwater.manifest.hints import SCOPE
from headwater.manifest.store import Manifest
from headwater.runtime import Runtime
from headwater.scheduler.daemon import Scheduler
from workspace_helpers import filesystem_source, write_config


def wait_for(check: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"not in {timeout}s: {what}")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    for name in ("a.md", "b.md"):
        (root / name).write_text(f"# {name}\n\nFirst words of {name}.\n")
    return root


@pytest.fixture
def config(tmp_path: Path, corpus: Path) -> Path:
    # refresh_every is long: after the first run, only hints can bring a change in
    extra = 'watch = true\nrefresh_every = "1h"'
    return write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus, extra=extra))


@pytest.fixture
def running(config: Path) -> Iterator[Scheduler]:
    scheduler = Scheduler(config)
    thread = threading.Thread(target=scheduler.serve, name="test-scheduler")
    thread.start()
    try:
        yield scheduler
    finally:
        scheduler.stop()
        thread.join(timeout=60)
        assert not thread.is_alive()


def test_saves_new_files_and_deletes_are_read_without_a_scan(
    running: Scheduler, corpus: Path
) -> None:
    manifest: Manifest = running.rt.manifest
    wait_for(lambda: manifest.count_documents("docs") == 2, "the first run")
    wait_for(lambda: manifest.runs.latest("docs").status == "succeeded", "the first run ends")  # type: ignore[union-attr]
    runs = len(manifest.runs.recent("docs"))
    before = manifest.document_by_object("docs", "a.md")
    assert before is not None

    (corpus / "c.md").write_text("# c\n\nA new file.\n")
    wait_for(lambda: manifest.document_by_object("docs", "c.md") is not None, "c.md read")
    (corpus / "a.md").write_text("# a\n\nSaved again.\n")

    def edited() -> bool:
        record = manifest.document_by_object("docs", "a.md")
        return record is not None and record.revision > before.revision

    wait_for(edited, "a.md re-read")
    (corpus / "b.md").unlink()

    def deleted() -> bool:
        record = manifest.document_by_object("docs", "b.md")
        return record is not None and record.state == "deleted"

    wait_for(deleted, "b.md tombstoned")
    assert len(manifest.runs.recent("docs")) == runs, "hints were read by targeted reads"
    wait_for(lambda: manifest.hints.states()["docs"].read >= 3, "three hints marked read")
    assert manifest.hints.states()["docs"].last_origin == "watch"
    # a folder appearing (its files come without events of their own) is a scan
    (corpus / "sub").mkdir()
    (corpus / "sub" / "d.md").write_text("# d\n\nIn a new folder.\n")
    wait_for(lambda: manifest.document_by_object("docs", "sub/d.md") is not None, "sub/d.md")
    wait_for(lambda: len(manifest.runs.recent("docs")) == runs + 1, "the scan's run")


def test_the_state_dir_under_the_root_makes_no_hints(tmp_path: Path) -> None:
    root = tmp_path
    (root / "a.md").write_text("# a\n\nWords.\n")
    sources = filesystem_source(root, extra="watch = true")  # state/ lies under the root
    config = write_config(tmp_path, manifest_url=None, sources=sources)
    rt = Runtime.open(config)
    watcher = Watcher(lambda: rt).start()
    try:
        rt.manifest.hints.drop("docs", 0)  # a write into state/manifest.db
        (rt.state_dir / "junk.txt").write_text("ignored")
        (root / "a.md").write_text("# a\n\nNew words.\n")
        wait_for(lambda: rt.manifest.hints.queued("docs"), "a.md's hint")
        watcher.flush()
        assert [h.object_id for h in rt.manifest.hints.queued("docs")] == ["a.md"]
    finally:
        watcher.stop()
        rt.close()


def test_a_watcher_that_overflows_schedules_a_scan(config: Path, corpus: Path) -> None:
    rt = Runtime.open(config)
    woken = threading.Event()
    watcher = Watcher(lambda: rt, on_queued=woken.set, limit=5).start()
    try:
        for i in range(20):
            (corpus / f"burst-{i}.md").write_text(f"# {i}\n")
        wait_for(woken.is_set, "the watcher's flush")
        wait_for(
            lambda: any(h.kind == SCOPE for h in rt.manifest.hints.queued("docs")), "a scope hint"
        )
        watcher.flush()
        kinds = [h.kind for h in rt.manifest.hints.queued("docs")]
        assert kinds.count(SCOPE) == 1
        assert len(kinds) < 21, kinds  # the paths past the limit were not queued one by one
    finally:
        watcher.stop()
        rt.close()
