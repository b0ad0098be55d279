"""Turning one connector item into a manifest change: the version gates applied.

``BatchBuilder`` runs each item of a batch through the gates (the pure rules of
``sync.decisions``: the skip rule ``decide``, the inferred-delete budget) and collects the
batch the runner commits. Ordering: an upsert older than the recorded source sequence,
or not newer than a tombstone's, is ``stale`` (invariant 5).

Nothing here writes the manifest, but it is not free of effects: for a document that
passes gate 1 it fetches the content through the connector (``fetch``, for a
``fetch_ref``) and stores the parsed text in the content store (``ContentStore.put``)
before the batch commits. Failures, deletes and tombstones, which need no content, are
decided by its base ``sync.batch.Batch``. The names of ``sync.decisions`` are
re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from headwater.errors import ConfigError, ItemError, TransientError
from headwater.identity import content_checksum
from headwater.manifest.records import (
    ACTIVE,
    DELETED,
    DocumentFields,
    DocumentWrite,
    RowVersion,
    StoredMetadata,
)
from headwater.pipeline.parse import PARSED_METADATA_KEYS, parse
from headwater.sync.batch import Batch
from headwater.sync.decisions import (
    DELETED_IN_SOURCE,
    EMPTIED,
    INFERRED_DELETED,
    Decision,
    InferredDeletes,
    Outcome,
    SourceIdentity,
    acl_only_write,
    decide,
    signature_of,
    stored_metadata_json,
)
from headwater.sync.unavailable import (
    UNAVAILABLE,
    UNAVAILABLE_CLASSES,
    stands_in,
    unavailable_document,
)
from headwater.types import Access, Failure, MetadataValue, SourceDocument

__all__ = [
    "DELETED_IN_SOURCE",
    "EMPTIED",
    "INFERRED_DELETED",
    "BatchBuilder",
    "Decision",
    "InferredDeletes",
    "Outcome",
    "SourceIdentity",
    "acl_only_write",
    "decide",
    "signature_of",
]


@dataclass
class BatchBuilder(Batch):
    """Accumulates the decisions for one batch of items: ``Batch`` and the version gates."""

    _default_acl: tuple[str, ...] | None = field(default=None, init=False, repr=False)

    def add_failure(self, failure: Failure) -> Outcome:
        """Record a connector's failure item (``Batch.add_failure``), and first a
        metadata-only document when it says what the object is (``document``: a container
        member, or a container read whole)."""
        if (doc := failure.document) is None:
            return super().add_failure(failure)
        error = ItemError(failure.error_class, failure.message, permanent=failure.permanent)
        access = doc.access if doc.access is not None else self.source.default_access
        record = self.existing.get(doc.object_id)
        try:
            self._stand_in(doc, record, tuple(access.principals()), error, doc.size)
        except ConfigError as exc:
            self.counts.seen += 1
            if failure.prefix:
                self.commit.seen_prefixes.append((self.source.source_id, failure.object_id))
            return self._refuse_access(doc, record, exc)
        return super().add_failure(failure)

    def add_document(self, doc: SourceDocument) -> Outcome:
        """Pass one document through both gates and add what they decide to the batch."""
        self.counts.seen += 1
        src = self.source
        record = self.existing.get(doc.object_id)
        doc_id = record.document_id if record is not None else src.document_id(doc.object_id)
        access = doc.access if doc.access is not None else src.default_access
        metadata = dict(doc.metadata)
        if record is not None and doc.sequence is not None:
            floor = (
                record.sequence
                if record.state == ACTIVE
                else self.tombstone_sequences.get(record.document_id)
            )
            if floor is not None and (
                doc.sequence < floor or (record.state == DELETED and doc.sequence <= floor)
            ):
                self.counts.stale += 1  # even with a bad ACL: a late old version changes nothing
                return Outcome.STALE
        try:
            acl = self._acl_of(access)
        except ConfigError as exc:  # an identity that could pass as another: never index it
            return self._refuse_access(doc, record, exc)
        dead = self.dead_versions.get(doc_id)
        # A dead entry at this very version is a hint skip too: `sync --full` reads it again
        # (a file whose permissions were fixed keeps its mtime and size).
        if self.trust_hints and dead is not None and dead == (doc.version, src.pipeline_version):
            self._mark_seen(doc.object_id)
            self.commit.still_failing.append(doc_id)
            self.counts.failed += 1
            return Outcome.FAILED
        gate = decide(record, doc, src.pipeline_version, trust_hint=self.trust_hints)
        if gate is Decision.SKIP_BY_HINT and record is not None:
            # Gate 1: the version hint proves the content unchanged; nothing is read. Not
            # for a metadata-only row: its hint proves only that the read failed, and a
            # failure still dead at this version was skipped above, so this is a redrive.
            title = doc.title or record.title
            if (
                acl == record.acl
                and metadata.get("content") != UNAVAILABLE
                and _as_stored(record, title, doc.locator, metadata)
            ):
                # the row holds what was listed: no metadata-only row, and its signature
                # is the one these would get, found without hashing them again
                return self._unchanged(record)
            if not _unreadable_row(record):
                assert record.checksum is not None
                _keep_parsed_keys(record, metadata)
                signature = signature_of(record.checksum, title, doc.locator, metadata)
                if signature == record.signature and acl == record.acl:
                    return self._unchanged(record)
                return self._write(doc, record, record.checksum, signature, acl, metadata, title)
        raw = doc.content
        if raw is None:
            if doc.fetch_ref is None or self.fetch is None:
                return self._fail(
                    doc,
                    "fetch",
                    "no_content",
                    f"{doc.locator}: the connector reported no content and the "
                    "manifest holds another version; run `headwater sync` again",
                    False,
                    doc.version,
                )
            try:
                self.fetched += 1
                raw = self.fetch(doc.fetch_ref)
            except ItemError as exc:
                return self._unreadable(doc, record, acl, "fetch", exc, None)
            except TransientError as exc:
                return self._fail(
                    doc, "fetch", "transient", str(exc), False, doc.version, doc.fetch_ref
                )
        try:
            parsed = parse(
                raw, name=doc.object_id, media_type=doc.media_type, options=src.parse_options
            )
        except ItemError as exc:
            if exc.error_class == "empty_document" and record is not None:
                # No text left (a file truncated to retract what it said) is the source's
                # true state: the old revision leaves every index, like a delete.
                self._empty(record, doc)
            return self._unreadable(doc, record, acl, "parse", exc, len(raw))
        checksum = content_checksum(parsed.text)
        self.content_store.put(checksum, parsed.text)
        if parsed.metadata:  # what the format says (an e-mail's headers); the connector wins
            metadata = {**parsed.metadata, **metadata}
        title = doc.title or parsed.title or doc.object_id
        signature = signature_of(checksum, title, doc.locator, metadata)
        gate = decide(record, doc, src.pipeline_version, checksum=checksum)
        if (
            gate is Decision.SKIP_BY_CHECKSUM
            and record is not None
            and record.signature == signature
            and record.acl == acl
        ):
            # Gate 2: same normalized content; remember the new hint, keep the revision.
            self.commit.writes.append(
                self._row(
                    doc, record, checksum, signature, acl, metadata, title, record.revision, False
                )
            )
            self.commit.seen_objects.append(record.object_id)
            self.commit.resolved.append(record.document_id)
            self.counts.unchanged += 1
            return Outcome.UNCHANGED
        return self._write(doc, record, checksum, signature, acl, metadata, title)

    def add_held(self, object_ids: list[str]) -> None:
        """Gate 1's skip of documents found held as listed before the gates (``sync.held``):
        counted unchanged and marked seen, as ``_unchanged`` does one by one."""
        self.counts.seen += len(object_ids)
        self.counts.unchanged += len(object_ids)
        self.commit.seen_objects.extend(object_ids)

    def _unchanged(self, record: DocumentFields) -> Outcome:
        """Gate 1's skip: the object was listed, its row stays as it is."""
        self.commit.seen_objects.append(record.object_id)
        self.counts.unchanged += 1
        return Outcome.UNCHANGED

    def _acl_of(self, access: Access) -> tuple[str, ...]:
        """``access``'s principals; the source's default access is computed once a batch
        (most documents of a source carry it)."""
        if access is not self.source.default_access:
            return tuple(access.principals())
        if self._default_acl is None:
            self._default_acl = tuple(access.principals())
        return self._default_acl

    def _unreadable(
        self,
        doc: SourceDocument,
        record: DocumentFields | None,
        acl: tuple[str, ...],
        stage: str,
        exc: ItemError,
        size: int | None,
    ) -> Outcome:
        """A failure record, and a metadata-only document standing for the file when its
        content is unavailable (``sync.unavailable``) and the source wants one."""
        self._stand_in(doc, record, acl, exc, size)
        return self._fail(
            doc, stage, exc.error_class, str(exc), exc.permanent, doc.version, doc.fetch_ref
        )

    def _stand_in(
        self,
        doc: SourceDocument,
        record: DocumentFields | None,
        acl: tuple[str, ...],
        exc: ItemError,
        size: int | None,
    ) -> None:
        """Write the metadata-only document of ``doc`` unless it is held as it is."""
        if (
            exc.error_class in UNAVAILABLE_CLASSES
            and self.source.parse_options.metadata_only_on_failure
            # a pushed document's sender is told of the failure (400) and sends again;
            # it gets no stand-in the sender never asked for
            and self.source.source_type != "push"
            and stands_in(record)
        ):
            found = unavailable_document(doc, exc.error_class, str(exc), size)
            checksum = content_checksum(found.text)
            signature = signature_of(checksum, found.title, doc.locator, found.metadata)
            held = record is not None and record.state == ACTIVE
            if not (held and record and (record.signature, record.acl) == (signature, acl)):
                self.content_store.put(checksum, found.text)
                row = (checksum, signature, acl, found.metadata, found.title)
                revision = 1 if record is None else record.revision + 1
                self.commit.writes.append(self._row(doc, record, *row, revision, record is None))
                if record is not None and record.state == DELETED:
                    self.commit.cleared_tombstones.append(record.document_id)
        self._mark_seen(doc.object_id)

    def _refuse_access(
        self, doc: SourceDocument, record: DocumentFields | None, exc: ConfigError
    ) -> Outcome:
        """An ACL naming an identity that could pass as another: only this document fails.

        A revision the manifest holds is withheld (an ACL-only revision visible to nobody,
        invariant 12) rather than served under an ACL the source no longer states. The
        failure keeps no version hint, so the next run reads the ACL again even when the
        source fixed it without a new version (a repository's collaborators).
        """
        if record is not None and record.state == ACTIVE and record.acl:
            self.commit.writes.append(acl_only_write(record, ()))
        message = (
            f"{doc.object_id}: its ACL names an identity that could pass as another, so "
            f"nobody sees this document until the source fixes it: {exc}"
        )
        return self._fail(doc, "fetch", "invalid_principal", message, True)

    def _write(
        self,
        doc: SourceDocument,
        record: DocumentFields | None,
        checksum: str,
        signature: str,
        acl: tuple[str, ...],
        metadata: dict[str, MetadataValue],
        title: str | None = None,
    ) -> Outcome:
        # content for the first time: a metadata-only document (sync.unavailable) is new
        is_new = record is None or record.state != ACTIVE or stands_in(record)
        revision = 1 if record is None else record.revision + 1
        row = self._row(
            doc,
            record,
            checksum,
            signature,
            acl,
            metadata,
            title or doc.title or doc.object_id,
            revision,
            record is None,
        )
        self.commit.writes.append(row)
        self.commit.resolved.append(row.document_id)
        if record is not None and record.state == DELETED:
            self.commit.cleared_tombstones.append(record.document_id)
        if is_new:
            self.counts.new += 1
            return Outcome.NEW
        self.counts.changed += 1
        return Outcome.CHANGED

    def _row(
        self,
        doc: SourceDocument,
        record: DocumentFields | None,
        checksum: str,
        signature: str,
        acl: tuple[str, ...],
        metadata: dict[str, MetadataValue],
        title: str,
        revision: int,
        is_new: bool,
    ) -> DocumentWrite:
        sequence = (
            doc.sequence if doc.sequence is not None else (record.sequence if record else None)
        )
        return DocumentWrite(
            document_id=self.source.document_id(doc.object_id),
            source_id=self.source.source_id,
            object_id=doc.object_id,
            locator=doc.locator,
            title=title,
            media_type=doc.media_type,
            source_version=doc.version,
            checksum=checksum,
            signature=signature,
            pipeline_version=self.source.pipeline_version,
            revision=revision,
            sequence=sequence,
            state=ACTIVE,
            acl=acl,
            metadata=metadata,
            last_seen_run=self.run_id,
            is_new=is_new,
            checked=True,
            expect=RowVersion.of(record) if record is not None else None,
        )


def _as_stored(
    record: DocumentFields, title: str, locator: str, metadata: dict[str, MetadataValue]
) -> bool:
    """Whether ``record`` holds this title, locator and metadata as they are: its signature
    is then the one they would get (``signature_of`` of the row's own fields), found
    without the hash (the metadata compared as the JSON text the manifest stores)."""
    held = record.metadata
    return (
        title == record.title
        and locator == record.locator
        and isinstance(held, StoredMetadata)
        and held.is_text(stored_metadata_json(metadata))
    )


def _keep_parsed_keys(record: DocumentFields, metadata: dict[str, MetadataValue]) -> None:
    """Copy into ``metadata`` the keys the parser set on ``record`` from its unchanged
    content (a stored row answers "none" from its text, without decoding it)."""
    held = record.metadata
    if not isinstance(held, StoredMetadata) or held.may_hold_any(PARSED_METADATA_KEYS):
        for key in PARSED_METADATA_KEYS & held.keys() - metadata.keys():
            metadata[key] = held[key]


def _unreadable_row(record: DocumentFields) -> bool:
    """An active metadata-only row (``sync.unavailable``): its content was never read."""
    return record.state == ACTIVE and record.metadata.get("content") == UNAVAILABLE
