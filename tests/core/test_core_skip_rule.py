"""The skip rule (DESIGN invariant 3) as a table: ``decide(record, item, content_version)``.

Each row is one case of "skip only on proof": a hint or checksum proves the content
unchanged only at the same content version, and only for an active document.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from headwater.identity import content_checksum
from headwater.manifest.records import DocumentRecord
from headwater.sync.decisions import Decision, decide
from headwater.types import SourceDocument

V1, V2 = "content-v1", "content-v2"
TEXT = "Every employee gets 25 vacation days."
SUM = content_checksum(TEXT)
OTHER_SUM = content_checksum(TEXT + " Changed.")
MOMENT = datetime(2026, 1, 1, tzinfo=UTC)

RECORD = DocumentRecord(
    document_id="d" * 64,
    source_id="docs",
    object_id="a.md",
    locator="file:///a.md",
    title="A",
    media_type="text/markdown",
    source_version="etag-1",
    checksum=SUM,
    signature="s",
    pipeline_version=V1,
    revision=3,
    sequence=None,
    state="active",
    acl=("group:staff",),
    metadata={},
    last_seen_run=None,
    created_at=MOMENT,
    updated_at=MOMENT,
)
ITEM = SourceDocument(object_id="a.md", locator="file:///a.md", title="A", version="etag-1")
DELETED = replace(RECORD, state="deleted")
NEW_HINT = replace(ITEM, version="etag-2")

# (case, record, item, content version, checksum of the parsed text or None, trust_hint, expected)
CASES = [
    ("hint and version unchanged: skip, read nothing", RECORD, ITEM, V1, None, True,
     Decision.SKIP_BY_HINT),
    ("hint unchanged but content version changed: read", RECORD, ITEM, V2, None, True,
     Decision.FETCH),
    ("hint changed: read", RECORD, NEW_HINT, V1, None, True, Decision.FETCH),
    ("not in the manifest: read", None, ITEM, V1, None, True, Decision.FETCH),
    ("tombstoned with the same hint: read", DELETED, ITEM, V1, None, True, Decision.FETCH),
    ("full sync ignores an unchanged hint: read", RECORD, ITEM, V1, None, False,
     Decision.FETCH),
    ("checksum and version unchanged: skip", RECORD, NEW_HINT, V1, SUM, True,
     Decision.SKIP_BY_CHECKSUM),
    ("checksum unchanged but content version changed: reprocess", RECORD, NEW_HINT, V2, SUM,
     True, Decision.REPROCESS),
    ("checksum changed: reprocess", RECORD, NEW_HINT, V1, OTHER_SUM, True, Decision.REPROCESS),
    ("new document: reprocess", None, ITEM, V1, SUM, True, Decision.REPROCESS),
    ("tombstoned, same checksum: reprocess (resurrect)", DELETED, ITEM, V1, SUM, True,
     Decision.REPROCESS),
    ("full sync still skips an unchanged checksum", RECORD, ITEM, V1, SUM, False,
     Decision.SKIP_BY_CHECKSUM),
    # Volatile data (fetch time, request ids) is never in the checksum: an item that differs
    # only in its hint and timestamps, with the same normalized text, is skipped by checksum.
    ("only volatile fields differ: skip by checksum", RECORD,
     replace(NEW_HINT, updated_at=datetime(2026, 6, 1, tzinfo=UTC)), V1,
     content_checksum(TEXT), True, Decision.SKIP_BY_CHECKSUM),
]  # fmt: skip


@pytest.mark.parametrize(
    ("record", "item", "version", "checksum", "trust_hint", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_decide(
    record: DocumentRecord | None,
    item: SourceDocument,
    version: str,
    checksum: str | None,
    trust_hint: bool,
    expected: Decision,
) -> None:
    assert decide(record, item, version, checksum=checksum, trust_hint=trust_hint) is expected
