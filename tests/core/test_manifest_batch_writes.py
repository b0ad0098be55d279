"""A batch's document rows are written in a fixed number of statements, on both manifests.

``manifest/batch.py`` reads the rows a batch touches and the floors of purged ids in one
statement per 500 ids and inserts the new rows in one ``executemany``; before, it sent
three statements per document, most of a push's commit on PostgreSQL. These tests pin the
statement count, and that batching changed nothing a reader sees: revisions above a purged
floor, one document named twice, a conflicting checked insert.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import event, insert, select

from headwater.errors import WriteConflict
from headwater.manifest import schema as t
from headwater.manifest.records import BatchCommit, DocumentWrite, RowVersion, TombstoneWrite
from headwater.manifest.store import Manifest


@pytest.fixture
def manifest(manifest_url: str) -> Iterator[Manifest]:
    opened = Manifest.open(manifest_url)
    opened.ensure_source("src", "filesystem")
    try:
        yield opened
    finally:
        opened.close()


def write_of(n: int, revision: int, *, is_new: bool, checked: bool = False) -> DocumentWrite:
    return DocumentWrite(
        document_id=f"doc-{n:05d}", source_id="src", object_id=f"obj/{n}", locator=f"file:///{n}",
        title=f"t{n} r{revision}", media_type="text/plain", source_version=f"v{revision}",
        checksum=f"{revision:064d}", signature=None, pipeline_version="pv1", revision=revision,
        sequence=None, state="active", acl=("group:staff",), metadata={}, last_seen_run=None,
        is_new=is_new, checked=checked,
    )  # fmt: skip


def commit(manifest: Manifest, *writes: DocumentWrite) -> None:
    batch = BatchCommit()
    batch.writes.extend(writes)
    manifest.commit_batch("run", batch)


def statements_of(manifest: Manifest, writes: list[DocumentWrite]) -> int:
    seen: list[str] = []

    def count(*args: Any) -> None:
        seen.append(args[2])

    event.listen(manifest.engine, "before_cursor_execute", count)
    try:
        commit(manifest, *writes)
    finally:
        event.remove(manifest.engine, "before_cursor_execute", count)
    return len(seen)


def revisions(manifest: Manifest) -> dict[str, int]:
    with manifest.engine.connect() as conn:
        rows = conn.execute(select(t.documents.c.document_id, t.documents.c.revision))
        return {doc_id: int(revision) for doc_id, revision in rows}


@pytest.mark.parametrize("manifest_url", ["sqlite", "postgres"], indirect=True)
def test_new_documents_and_edits_cost_the_same_statements_at_any_batch_size(
    manifest: Manifest,
) -> None:
    small = statements_of(manifest, [write_of(n, 1, is_new=True) for n in range(20)])
    large = statements_of(manifest, [write_of(n, 1, is_new=True) for n in range(20, 500)])
    assert small == large, (small, large)  # three a document before: 60 against 1,440
    assert revisions(manifest) == {f"doc-{n:05d}": 1 for n in range(500)}
    few = statements_of(manifest, [write_of(n, 2, is_new=False) for n in range(10)])
    many = statements_of(manifest, [write_of(n, 2, is_new=False) for n in range(10, 400)])
    assert few == many <= small, (few, many, small)  # edits: two a document before
    assert sorted(revisions(manifest).values()) == [1] * 100 + [2] * 400


@pytest.mark.parametrize("manifest_url", ["sqlite", "postgres"], indirect=True)
def test_a_checked_edit_of_a_row_that_moved_on_writes_nothing_and_names_it(
    manifest: Manifest,
) -> None:
    commit(manifest, *(write_of(n, 1, is_new=True) for n in range(5)))
    at_one = RowVersion(revision=1, sequence=None, state="active")
    at_two = RowVersion(revision=2, sequence=None, state="active")
    edits = [replace(write_of(n, 2, is_new=False), checked=True, expect=at_one) for n in range(5)]
    edits[3] = replace(edits[3], expect=at_two)  # decided from a version it no longer has
    with pytest.raises(WriteConflict, match="doc-00003"):
        commit(manifest, *edits)
    assert revisions(manifest) == {f"doc-{n:05d}": 1 for n in range(5)}
    commit(manifest, *edits[:3])
    assert sorted(revisions(manifest).values()) == [1, 1, 2, 2, 2]


@pytest.mark.parametrize("manifest_url", ["sqlite", "postgres"], indirect=True)
def test_re_created_documents_start_above_their_purged_floors(manifest: Manifest) -> None:
    with manifest.engine.begin() as conn:  # what purge_tombstones leaves behind
        conn.execute(
            insert(t.revision_floors),
            [
                {"document_id": "doc-00001", "revision": 7},
                {"document_id": "doc-00003", "revision": 2},
            ],
        )
    commit(manifest, *(write_of(n, 1, is_new=True) for n in range(5)))
    assert revisions(manifest) == {
        "doc-00000": 1, "doc-00001": 8, "doc-00002": 1, "doc-00003": 3, "doc-00004": 1
    }  # fmt: skip
    with manifest.engine.connect() as conn:
        assert conn.execute(select(t.revision_floors)).all() == []


@pytest.mark.parametrize("manifest_url", ["sqlite", "postgres"], indirect=True)
def test_a_batch_naming_one_document_twice_writes_it_in_order(manifest: Manifest) -> None:
    with manifest.engine.begin() as conn:
        conn.execute(insert(t.revision_floors), [{"document_id": "doc-00002", "revision": 4}])
    commit(
        manifest,
        write_of(1, 1, is_new=True),
        write_of(2, 1, is_new=True),
        write_of(1, 2, is_new=False),
    )
    assert revisions(manifest) == {"doc-00001": 2, "doc-00002": 5}
    assert manifest.document("doc-00001").title == "t1 r2"  # type: ignore[union-attr]


@pytest.mark.parametrize("manifest_url", ["sqlite", "postgres"], indirect=True)
def test_a_checked_insert_of_a_row_that_exists_writes_nothing_of_its_batch(
    manifest: Manifest,
) -> None:
    commit(manifest, write_of(1, 1, is_new=True))
    with pytest.raises(WriteConflict, match="doc-00001"):
        commit(manifest, write_of(2, 1, is_new=True), write_of(1, 1, is_new=True, checked=True))
    assert revisions(manifest) == {"doc-00001": 1}


@pytest.mark.parametrize("manifest_url", ["sqlite", "postgres"], indirect=True)
def test_tombstones_cost_the_same_statements_at_any_batch_size_and_keep_sequences(
    manifest: Manifest,
) -> None:
    commit(manifest, *(replace(write_of(n, 1, is_new=True), sequence=n) for n in range(300)))

    def tombstones(numbers: range, sequence: int | None) -> int:
        batch = BatchCommit()
        batch.tombstones.extend(
            TombstoneWrite(f"doc-{n:05d}", "src", f"obj/{n}", 2, sequence, "pruned")
            for n in numbers
        )
        seen: list[str] = []
        listen = lambda *args: seen.append(args[2])  # noqa: E731
        event.listen(manifest.engine, "before_cursor_execute", listen)
        try:
            manifest.commit_batch("run", batch)
        finally:
            event.remove(manifest.engine, "before_cursor_execute", listen)
        return len(seen)

    assert tombstones(range(10), None) == tombstones(range(10, 300), 1000)
    with manifest.engine.connect() as conn:
        rows = {r.document_id: r for r in conn.execute(select(t.documents))}
        tombs = {r.document_id: r for r in conn.execute(select(t.tombstones))}
    assert {r.state for r in rows.values()} == {"deleted"} and len(tombs) == 300
    assert rows["doc-00007"].sequence == 7 and rows["doc-00042"].sequence == 1000  # kept, set
    assert tombs["doc-00007"].sequence is None and tombs["doc-00042"].sequence == 1000
    assert {r.revision for r in rows.values()} == {2} == {r.revision for r in tombs.values()}


@pytest.mark.parametrize("manifest_url", ["sqlite", "postgres"], indirect=True)
def test_a_checked_tombstone_of_a_row_that_moved_on_writes_nothing(manifest: Manifest) -> None:
    commit(manifest, *(write_of(n, 1, is_new=True) for n in range(3)))
    at_one = RowVersion(revision=1, sequence=None, state="active")
    batch = BatchCommit()
    batch.tombstones.extend(
        TombstoneWrite(f"doc-{n:05d}", "src", f"obj/{n}", 2, None, "deleted", expect=at_one)
        for n in range(3)
    )
    commit(manifest, replace(write_of(1, 2, is_new=False)))  # doc-00001 moves on
    with pytest.raises(WriteConflict, match="doc-00001"):
        manifest.commit_batch("run", batch)
    assert revisions(manifest) == {"doc-00000": 1, "doc-00001": 2, "doc-00002": 1}
    with manifest.engine.connect() as conn:
        assert conn.execute(select(t.tombstones)).all() == []
