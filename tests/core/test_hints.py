"""Hints in: the durable queue and the targeted read, on SQLite and PostgreSQL.

A hint leads to exactly the targeted read of its objects (the connector's calls are
counted), a burst of hints is one read, a delete hint for an object that still exists
deletes nothing, an out-of-scope hint is dropped and counted, a replayed hint changes
nothing, a scope hint runs a sync, and a hint for a leased source waits in the queue.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest

from headwater import Workspace
from headwater.connectors.filesystem import FilesystemConnector
from headwater.hints.queue import queue, read_due
from headwater.manifest.hints import DELETED
from headwater.types import Deleted, Failure, SourceDocument
from workspace_helpers import filesystem_source, write_config

NOW = timedelta(0)


class CountingFs(FilesystemConnector):
    """The filesystem connector, counting what a targeted read asks of it."""

    refetched: ClassVar[list[list[str]]] = []
    fetched: ClassVar[list[str]] = []

    def refetch(self, object_ids: Sequence[str]) -> Iterator[SourceDocument | Deleted | Failure]:
        CountingFs.refetched.append(list(object_ids))
        return super().refetch(object_ids)

    def fetch(self, ref: str) -> bytes:
        CountingFs.fetched.append(ref)
        return super().fetch(ref)


@pytest.fixture
def ws(tmp_path: Path, manifest_url: str) -> Iterator[Workspace]:
    root = tmp_path / "corpus"
    (root / "secret").mkdir(parents=True)
    for name in ("a.md", "b.md", "c.md"):
        (root / name).write_text(f"# {name}\n\nThe text of {name}.\n")
    (root / "secret" / "x.md").write_text("hidden")
    config = write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(root, extra='exclude = ["secret/**"]'),
    )
    CountingFs.refetched.clear()
    CountingFs.fetched.clear()
    with Workspace.open(config, connector_types={"filesystem": CountingFs}) as workspace:
        assert workspace.sync(index=False).runs[0].counts.new == 3
        CountingFs.fetched.clear()
        yield workspace


def _edit(ws: Workspace, name: str, text: str) -> None:
    path = Path(ws.source_section("docs").model_extra["root"]) / name  # type: ignore[index]
    path.write_text(text)


def _revision(ws: Workspace, object_id: str) -> tuple[str, int] | None:
    record = ws.manifest.document_by_object("docs", object_id)
    return None if record is None else (record.state, record.revision)


def test_a_hint_reads_exactly_its_objects(ws: Workspace) -> None:
    before_b = _revision(ws, "b.md")
    _edit(ws, "a.md", "# a\n\nEdited.\n")
    _edit(ws, "b.md", "# b\n\nEdited too, but nobody said so.\n")
    assert queue(ws.runtime, "docs", ["a.md"], origin="test", debounce=NOW) == 1
    read = read_due(ws.runtime, "docs")
    assert read is not None and read.mode == "targeted", read
    assert CountingFs.refetched == [["a.md"]]
    assert len(CountingFs.fetched) == 1 and '"a.md"' in CountingFs.fetched[0]
    assert read.counts is not None and read.counts["changed"] == 1
    assert _revision(ws, "b.md") == before_b  # not hinted: not read, not changed
    assert ws.manifest.hints.queued("docs") == []
    state = ws.manifest.hints.states()["docs"]
    assert (state.received, state.read, state.dropped) == (1, 1, 0)
    assert state.last_lag_s is not None and state.last_lag_s >= 0
    assert read_due(ws.runtime, "docs") is None  # nothing left: no second read


def test_a_burst_of_hints_is_one_read(ws: Workspace) -> None:
    _edit(ws, "a.md", "# a\n\nSaved many times.\n")
    for _ in range(20):
        queue(ws.runtime, "docs", ["a.md"], origin="test", debounce=timedelta(seconds=0.5))
    (hint,) = ws.manifest.hints.queued("docs")
    assert hint.count == 20
    assert read_due(ws.runtime, "docs") is None  # still within the debounce
    deadline = time.monotonic() + 10
    while not ws.manifest.hints.due("docs") and time.monotonic() < deadline:
        time.sleep(0.05)
    read = read_due(ws.runtime, "docs")
    assert read is not None and read.hints == 1
    assert CountingFs.refetched == [["a.md"]] and len(CountingFs.fetched) == 1


def test_a_delete_hint_for_an_object_that_exists_deletes_nothing(ws: Workspace) -> None:
    before = _revision(ws, "a.md")
    queue(ws.runtime, "docs", ["a.md"], kind=DELETED, origin="test", debounce=NOW)
    read = read_due(ws.runtime, "docs")
    assert read is not None and read.counts is not None
    assert read.counts["deleted"] == 0 and read.counts["unchanged"] == 1, read.counts
    assert _revision(ws, "a.md") == before
    # once the file is really gone, the connector confirms it and the tombstone is written
    (Path(ws.source_section("docs").model_extra["root"]) / "a.md").unlink()  # type: ignore[index]
    queue(ws.runtime, "docs", ["a.md"], kind=DELETED, origin="test", debounce=NOW)
    read = read_due(ws.runtime, "docs")
    assert read is not None and read.counts is not None and read.counts["deleted"] == 1
    state = _revision(ws, "a.md")
    assert state is not None and state[0] == "deleted"


def test_a_hint_outside_the_scope_is_dropped_and_counted(ws: Workspace) -> None:
    assert queue(ws.runtime, "docs", ["secret/x.md"], origin="test", debounce=NOW) == 0
    assert ws.manifest.hints.queued("docs") == []
    # selected by the globs, but not a path a listing could yield: dropped by the read
    assert queue(ws.runtime, "docs", ["../escape.md"], origin="test", debounce=NOW) == 1
    read = read_due(ws.runtime, "docs")
    assert read is not None and read.dropped == 1
    assert ws.manifest.document_by_object("docs", "secret/x.md") is None
    assert ws.manifest.document_by_object("docs", "../escape.md") is None
    assert ws.manifest.hints.states()["docs"].dropped == 2
    assert CountingFs.fetched == []


def test_replayed_and_late_hints_are_harmless(ws: Workspace) -> None:
    before = _revision(ws, "c.md")
    for _ in range(2):  # the same hint delivered twice, one read after the other
        queue(ws.runtime, "docs", ["c.md"], origin="test", debounce=NOW)
        read = read_due(ws.runtime, "docs")
        assert read is not None and read.counts is not None and read.counts["unchanged"] == 1
    assert _revision(ws, "c.md") == before and CountingFs.fetched == []
    # a "created" hint arriving after the file was deleted and tombstoned: nothing revives
    (Path(ws.source_section("docs").model_extra["root"]) / "c.md").unlink()  # type: ignore[index]
    queue(ws.runtime, "docs", ["c.md"], kind=DELETED, origin="test", debounce=NOW)
    read_due(ws.runtime, "docs")
    queue(ws.runtime, "docs", ["c.md"], origin="test", debounce=NOW)
    read = read_due(ws.runtime, "docs")
    assert read is not None and read.counts is not None and read.counts["new"] == 0
    state = _revision(ws, "c.md")
    assert state is not None and state[0] == "deleted"


def test_a_new_file_hinted_is_created(ws: Workspace) -> None:
    _edit(ws, "d.md", "# d\n\nBrand new.\n")
    queue(ws.runtime, "docs", ["d.md"], origin="test", debounce=NOW)
    read = read_due(ws.runtime, "docs")
    assert read is not None and read.counts is not None and read.counts["new"] == 1
    assert read.changed
    record = ws.manifest.document_by_object("docs", "d.md")
    assert record is not None and record.acl == ("group:staff",)


def test_a_scope_hint_runs_a_sync(ws: Workspace) -> None:
    runs_before = len(ws.manifest.runs.recent("docs"))
    _edit(ws, "e.md", "# e\n\nFound by the scan.\n")
    queue(ws.runtime, "docs", origin="test", scope=True, debounce=NOW)
    read = read_due(ws.runtime, "docs")
    assert read is not None and read.mode == "scan"
    assert CountingFs.refetched == []
    assert len(ws.manifest.runs.recent("docs")) == runs_before + 1
    assert ws.manifest.document_by_object("docs", "e.md") is not None


def test_a_hint_for_a_leased_source_stays_queued(ws: Workspace) -> None:
    leases = ws.manifest.runs.leases
    lease = leases.acquire("docs", "another-host:1:abc", 60)
    try:
        queue(ws.runtime, "docs", ["a.md"], origin="test", debounce=NOW)
        read = read_due(ws.runtime, "docs")
        assert read is not None and read.mode == "busy"
        assert [h.object_id for h in ws.manifest.hints.queued("docs")] == ["a.md"]
        assert CountingFs.refetched == []
    finally:
        leases.release(lease)


def test_the_queue_keeps_a_hint_that_came_during_its_read(ws: Workspace) -> None:
    queue(ws.runtime, "docs", ["a.md"], origin="test", debounce=NOW)
    taken = ws.manifest.hints.due("docs")
    queue(ws.runtime, "docs", ["a.md"], origin="test", debounce=NOW)  # during the read
    ws.manifest.hints.done("docs", taken)
    (left,) = ws.manifest.hints.queued("docs")
    assert left.count == 2
    status: Any = ws.status().as_dict()
    (row,) = [s for s in status["sources"] if s["id"] == "docs"]
    assert row["hints"]["queued"] == 1 and row["hints"]["last_origin"] == "test"
