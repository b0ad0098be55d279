"""Conformance checks of a sink's failure and lifecycle behaviour.

A replace that dies half-way (fault injection through the ``fail_midway`` fixture),
``update_access`` of a document the sink does not hold, forgotten tombstones and the
binding to one manifest. Part of ``headwater.sinks.testing.SinkConformance``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest

from headwater.sinks._suite_base import EVERYONE, SuiteBase, make_chunks, make_document
from headwater.sinks.base import Sink, WriteOutcome
from headwater.types import Access, SearchMode


class LifecycleChecks(SuiteBase):
    """Conformance checks of failures and lifecycle: torn replace, absent documents, binding."""

    def test_failed_replace_leaves_the_old_revision_whole(
        self, sink: Sink, fail_midway: Callable[[Sink], AbstractContextManager[object]]
    ) -> None:
        """A replace that fails half-way leaves the old revision's chunks, all of them."""
        doc = make_document("fault", Access(public=True))
        old = make_chunks(doc, [f"fault old ember {i}" for i in range(4)])
        new = make_chunks(doc, [f"fault new frost {i}" for i in range(6)])  # same ids 0-3
        sink.replace(doc, old, 1)
        with fail_midway(sink), pytest.raises(Exception):  # noqa: B017 - any storage error
            sink.replace(doc, new, 2)
        assert sink.revision(doc.document_id) == 1
        assert sink.count(doc.document_id) == 4
        rows = [
            (r.revision, r.chunks) for r in sink.inventory() if r.document_id == doc.document_id
        ]
        assert rows == [(1, 4)]
        old_ids = {c.chunk.chunk_id for c in old}
        for mode in self.modes(sink):
            for query in ("fault old ember 2", "fault new frost 2", "fault new frost 5"):
                hits = self.find(sink, mode, query, EVERYONE)
                assert all(h.text.startswith("fault old ember") for h in hits), (mode, query)
                if mode is not SearchMode.KEYWORD or "old" in query:
                    assert {h.chunk_id for h in hits} == old_ids, (mode, query)
        assert sink.replace(doc, new, 2) is WriteOutcome.APPLIED  # the retry completes
        assert sink.count(doc.document_id) == 6 and sink.revision(doc.document_id) == 2
        for mode in self.modes(sink):
            hits = self.find(sink, mode, "fault old ember 2", EVERYONE)
            assert {h.text for h in hits} <= {f"fault new frost {i}" for i in range(6)}, mode
            assert len(hits) == 6 or mode is SearchMode.KEYWORD, mode

    def test_update_access_of_an_absent_document(self, sink: Sink) -> None:
        """``update_access`` of a document the sink lacks: ABSENT (STALE below a tombstone)."""
        never = make_document("absent", Access(public=True))
        assert sink.update_access(never.document_id, Access(public=True), 1) is WriteOutcome.ABSENT
        gone = make_document("absent-gone", Access(public=True))
        sink.replace(gone, make_chunks(gone, ["absent gone"]), 1)
        sink.delete(gone.document_id, 2)
        assert sink.update_access(gone.document_id, Access(public=True), 2) is WriteOutcome.STALE
        assert sink.update_access(gone.document_id, Access(public=True), 3) is WriteOutcome.ABSENT
        assert sink.count(gone.document_id) == 0 and sink.revision(gone.document_id) is None

    def test_forgotten_tombstones_no_longer_block(self, sink: Sink) -> None:
        """After ``forget_tombstones`` a re-created document is written again."""
        doc = make_document("forget", Access(public=True))
        live = make_document("forget-live", Access(public=True))
        sink.replace(doc, make_chunks(doc, ["forget me"]), 1)
        sink.replace(live, make_chunks(live, ["forget live"]), 4)
        sink.delete(doc.document_id, 5)
        assert sink.replace(doc, make_chunks(doc, ["forget again"]), 1) is WriteOutcome.STALE
        sink.forget_tombstones([doc.document_id, live.document_id])
        assert sink.revision(live.document_id) == 4 and sink.count(live.document_id) == 1
        assert sink.replace(live, make_chunks(live, ["older"]), 3) is WriteOutcome.STALE
        assert sink.replace(doc, make_chunks(doc, ["forget again"]), 1) is WriteOutcome.APPLIED
        assert sink.revision(doc.document_id) == 1

    def test_a_binding_changes_only_when_asked_and_empties_only_when_asked(
        self, sink: Sink, reopen: Callable[[], Sink] | None
    ) -> None:
        """The manifest binding is kept by writes and reopening; only ``bind`` changes it."""
        assert sink.bound_manifest() is None
        sink.bind("manifest-one")
        doc = make_document("bound", Access(public=True))
        sink.replace(doc, make_chunks(doc, ["bound pebble"]), 3)
        sink.delete(make_document("bound-tomb", Access()).document_id, 9)
        assert sink.bound_manifest() == "manifest-one" and sink.count(doc.document_id) == 1
        if reopen is not None:
            sink.close()
            sink = reopen()
        try:
            assert sink.bound_manifest() == "manifest-one" and sink.count(doc.document_id) == 1
            sink.bind("manifest-two")  # adopted: what it holds stays
            assert sink.bound_manifest() == "manifest-two" and sink.count(doc.document_id) == 1
            sink.bind("manifest-three", empty=True)
            assert sink.bound_manifest() == "manifest-three"
            assert sink.count(doc.document_id) == 0 and sink.revision(doc.document_id) is None
            assert list(sink.inventory()) == []
            for mode in self.modes(sink):
                assert self.find(sink, mode, "bound pebble", EVERYONE) == [], mode
            tomb = make_document("bound-tomb", Access(public=True))
            assert sink.replace(tomb, make_chunks(tomb, ["t"]), 1) is WriteOutcome.APPLIED
            assert sink.count(tomb.document_id) == 1
        finally:
            if reopen is not None:
                sink.close()
