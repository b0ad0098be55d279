"""One batch's commit in the making: its inputs and counts, and the entries that need no
content: failure records, seen marks and tombstones.

``Batch`` holds what the runner read from the manifest for a batch of items (their
records, tombstone sequences, dead failures) and collects the ``BatchCommit``. Here are
the items decided without reading anything: a connector's failure, a delete (stale when
older than the row's sequence, held back past the inferred-delete budget) and the
tombstones. ``sync.gates.BatchBuilder`` adds the version gates for documents.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from headwater.manifest.content import ContentStore
from headwater.manifest.records import (
    ACTIVE,
    BatchCommit,
    DocumentFields,
    FailureWrite,
    RowVersion,
    RunCounts,
    TombstoneWrite,
)
from headwater.sync.decisions import (
    DELETED_IN_SOURCE,
    EMPTIED,
    INFERRED_DELETED,
    InferredDeletes,
    Outcome,
    SourceIdentity,
)
from headwater.types import Deleted, Failure, SourceDocument


@dataclass
class Batch:
    """One batch's commit in the making, with the entries that need no content."""

    source: SourceIdentity
    run_id: str
    existing: Mapping[str, DocumentFields]  # the rows the items were decided from
    tombstone_sequences: dict[str, int | None]
    dead_versions: dict[str, tuple[str | None, str]]
    content_store: ContentStore
    fetch: Callable[[str], bytes] | None
    counts: RunCounts
    commit: BatchCommit = field(default_factory=BatchCommit)
    fetched: int = 0
    trust_hints: bool = True
    inferred: InferredDeletes | None = None

    def _fail(
        self,
        item: SourceDocument | Failure,
        stage: str,
        exc_class: str,
        message: str,
        permanent: bool,
        version: str | None = None,
        fetch_ref: str | None = None,
    ) -> Outcome:
        doc_id = self.source.document_id(item.object_id)
        self.commit.failures.append(
            FailureWrite(
                source_id=self.source.source_id,
                object_id=item.object_id,
                document_id=doc_id,
                locator=item.locator,
                stage=stage,
                error_class=exc_class,
                message=message,
                pipeline_version=self.source.pipeline_version,
                source_version=version,
                fetch_ref=fetch_ref,
                permanent=permanent,
            )
        )
        self._mark_seen(item.object_id)
        self.counts.failed += 1
        return Outcome.FAILED

    def _mark_seen(self, object_id: str) -> None:
        record = self.existing.get(object_id)
        if record is not None and record.state == ACTIVE:
            self.commit.seen_objects.append(record.object_id)

    def add_failure(self, failure: Failure) -> Outcome:
        """Record a connector's failure item: a failure record, its object kept as present."""
        self.counts.seen += 1
        if failure.prefix:  # an unreadable folder: everything known under it is present
            self.commit.seen_prefixes.append((self.source.source_id, failure.object_id))
        return self._fail(
            failure, failure.stage, failure.error_class, failure.message, failure.permanent
        )

    def add_deleted(self, item: Deleted) -> Outcome:
        """Decide a delete item: tombstone, stale, or ignored (unknown, or over budget)."""
        record = self.existing.get(item.object_id)
        if record is None or record.state != ACTIVE:
            return Outcome.IGNORED
        if (
            item.sequence is not None
            and record.sequence is not None
            and item.sequence < record.sequence
        ):
            self.counts.stale += 1
            return Outcome.STALE
        reason = DELETED_IN_SOURCE
        if item.inferred and self.inferred is not None:
            if not self.inferred.allow():
                self._mark_seen(item.object_id)  # kept active: it counts as present
                return Outcome.IGNORED
            reason = DELETED_IN_SOURCE if self.inferred.force else INFERRED_DELETED
        elif item.inferred:
            reason = INFERRED_DELETED
        self.tombstone(record, reason, item.sequence)
        return Outcome.DELETED

    def _empty(self, record: DocumentFields, doc: SourceDocument) -> None:
        """Tombstone an active document whose new content has no text (``empty_document``);
        its failure record says why, and text coming back makes it active again."""
        if record.state == ACTIVE:
            self.tombstone(record, EMPTIED, doc.sequence)

    def tombstone(self, record: DocumentFields, reason: str, sequence: int | None = None) -> None:
        """Add a tombstone of ``record`` for ``reason`` to the batch."""
        self.commit.tombstones.append(
            TombstoneWrite(
                document_id=record.document_id,
                source_id=record.source_id,
                object_id=record.object_id,
                revision=record.revision + 1,
                sequence=sequence,
                reason=reason,
                expect=RowVersion.of(record),
            )
        )
        self.counts.deleted += 1
