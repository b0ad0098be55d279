"""Gate 1 finds an unchanged document without hashing its signature again, and decides
exactly as the hash would.

A no-op re-sync asks, per object whose version hint is unchanged, whether what a sink
shows changed (``signature_of`` of checksum, title, locator and metadata). When the row
holds that title, locator and metadata as they are (the metadata as the very JSON text
the manifest stores), its signature is the one they would get: ``BatchBuilder`` then skips
the hash. These tests hold that shortcut to the hash's answer on every kind of change,
and show that the shortcut is taken.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headwater.manifest.content import FolderContentStore
from headwater.manifest.records import DocumentFields, RunCounts
from headwater.sync import gates
from headwater.sync.decisions import SourceIdentity, signature_of, stored_metadata_json
from headwater.sync.gates import BatchBuilder, Outcome
from headwater.types import Access, MetadataValue, SourceDocument

CHECKSUM = "c" * 64
STORED_META: dict[str, MetadataValue] = {"path": "d/a.md", "hierarchy": "d/a.md", "k": ["x", "é"]}
SOURCE = SourceIdentity("t", "memory", "s", Access(public=True), "pv")


def _row(
    metadata_text: str, *, title: str = "A", acl: str = '["public"]', signature: str | None = None
) -> DocumentFields:
    """A stored row, as the manifest reads it back (its metadata as stored JSON text)."""
    signed = signature or signature_of(CHECKSUM, title, "/r/d/a.md", json.loads(metadata_text))
    return DocumentFields.from_fields(
        ("doc1", "s", "d/a.md", "/r/d/a.md", title, None, "v1", CHECKSUM, signed, "pv", 1, None,
         "active", acl, metadata_text, "run0")
    )  # fmt: skip


def _decide(record: DocumentFields, doc: SourceDocument, tmp_path: Path) -> Outcome:
    builder = BatchBuilder(
        source=SOURCE,
        run_id="run1",
        existing={record.object_id: record},
        tombstone_sequences={},
        dead_versions={},
        content_store=FolderContentStore(tmp_path / "content"),
        fetch=None,
        counts=RunCounts(),
    )
    return builder.add_document(doc)


def _doc(**changes: object) -> SourceDocument:
    values: dict[str, object] = {
        "object_id": "d/a.md",
        "locator": "/r/d/a.md",
        "title": "",
        "version": "v1",
        "metadata": dict(STORED_META),
    }
    values.update(changes)
    return SourceDocument(**values)  # type: ignore[arg-type]


STORED_TEXTS = [
    json.dumps(STORED_META, sort_keys=True),  # as the manifest writes it
    json.dumps(STORED_META, sort_keys=True, ensure_ascii=False),  # another writer's JSON
    json.dumps(STORED_META, sort_keys=True, separators=(",", ":")),
    json.dumps(dict(reversed(list(STORED_META.items())))),  # keys unsorted
]
LISTED = [
    _doc(),
    _doc(title="A"),  # the title the row holds, now given by the connector
    _doc(title="B"),
    _doc(locator="/r/moved/a.md"),
    _doc(metadata={**STORED_META, "k": ["x"]}),
    _doc(metadata={**STORED_META, "extra": "1"}),
    _doc(metadata={"path": "d/a.md", "hierarchy": "d/a.md"}),
    _doc(metadata={**STORED_META, "k": ("x", "é")}),  # a tuple: the encoder's own form
    _doc(metadata={**STORED_META, "n": 1}),
    _doc(access=Access(groups=("staff",))),
]


@pytest.mark.parametrize("stored", STORED_TEXTS, ids=["as-written", "raw", "compact", "unsorted"])
@pytest.mark.parametrize("doc", LISTED, ids=range(len(LISTED)))
def test_the_skip_without_the_hash_decides_as_the_hash(
    stored: str, doc: SourceDocument, tmp_path: Path
) -> None:
    record = _row(stored)
    signed = signature_of(CHECKSUM, doc.title or "A", doc.locator, dict(doc.metadata))
    acl = tuple((doc.access or SOURCE.default_access).principals())
    unchanged = signed == record.signature and acl == record.acl
    wanted = Outcome.UNCHANGED if unchanged else Outcome.CHANGED
    assert _decide(record, doc, tmp_path) == wanted


def test_a_row_as_stored_is_skipped_without_hashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_hash(*args: object) -> str:
        raise AssertionError("signature_of called for a row that holds the listing as it is")

    monkeypatch.setattr(gates, "signature_of", no_hash)
    stored = json.dumps(STORED_META, sort_keys=True)
    assert stored_metadata_json(STORED_META) == stored
    assert _decide(_row(stored), _doc(), tmp_path) == Outcome.UNCHANGED
    assert _decide(_row(stored), _doc(title="A"), tmp_path) == Outcome.UNCHANGED
    # stored in another form, the same metadata is compared through the hash
    other = json.dumps(STORED_META, sort_keys=True, separators=(",", ":"))
    with pytest.raises(AssertionError, match="signature_of called"):
        _decide(_row(other), _doc(), tmp_path)


def test_a_changed_acl_is_never_skipped(tmp_path: Path) -> None:
    stored = json.dumps(STORED_META, sort_keys=True)
    record = _row(stored, acl='["group:staff"]')
    assert _decide(record, _doc(), tmp_path) == Outcome.CHANGED


@pytest.mark.parametrize("listed_content", [True, False])
def test_a_metadata_only_row_is_read_again_even_as_stored(
    listed_content: bool, tmp_path: Path
) -> None:
    """A row standing for a file whose read failed (``content: unavailable``) proves
    nothing by its hint: the file is read again (here it has no content to read: the
    connector gave none), never skipped as unchanged."""
    held = {**STORED_META, "content": "unavailable"}
    listed = held if listed_content else dict(STORED_META)
    record = _row(json.dumps(held, sort_keys=True))
    assert _decide(record, _doc(metadata=dict(listed)), tmp_path) == Outcome.FAILED
