"""Push: documents a caller sends with its own per-object version, committed like a batch.

Each operation becomes a ``SourceDocument`` (or a delete) whose ``sequence`` is the
caller's ``version``; a ``BatchBuilder`` applies the version gates the sync runner uses
and ``Manifest.commit_batch`` writes them in one transaction (so an acknowledged push is
durable). On top of the gates: a replay of the version the manifest holds is a no-op
(``unchanged``), an older one is ``stale`` (with the current version), and a delete
writes a tombstone at its version, for an object the manifest never held too, so any
older upsert arriving late is refused.

Across processes (``serve --workers N``, several hosts on one PostgreSQL manifest) the
decision and the write are one manifest transaction: every write is conditional on the
row it was decided from (``RowVersion``), so a concurrent commit of the same object makes
this one a ``WriteConflict`` that wrote nothing, and the part is read and decided again.
No acknowledged version is ever replaced by an older one; a lost race is answered from
the newer state (``stale``), never a server error.

The content of a part is staged while it is decided and written to the content store
just before the commit, on several threads at once (``manifest/staged.py``): every object is
still written (and fsynced) before the manifest row that points at it, but a batch of 500
waits for its fsyncs side by side instead of one after another.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from headwater.errors import TransientError
from headwater.manifest.content import ContentStore
from headwater.manifest.records import ACTIVE, DELETED, DocumentWrite, RunCounts, TombstoneWrite
from headwater.manifest.staged import StagedContent
from headwater.manifest.store import Manifest
from headwater.sync.gates import BatchBuilder, Outcome, SourceIdentity
from headwater.types import Deleted, SourceDocument

MAX_ATTEMPTS = 50  # a conflict means another commit won: each retry sees a newer state


@dataclass(frozen=True)
class PushOp:
    """One pushed operation: ``upsert`` (with its document) or ``delete``, at ``version``."""

    op: str
    object_id: str
    version: int
    doc: SourceDocument | None = None


@dataclass
class PushResult:
    """What one operation did: new, changed, unchanged, deleted, stale, failed or conflict."""

    object_id: str
    document_id: str
    version: int
    status: str = ""
    current_version: int | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict."""
        out: dict[str, Any] = {
            "object_id": self.object_id,
            "document_id": self.document_id,
            "version": self.version,
            "status": self.status,
        }
        if self.status == "stale":
            out["current_version"] = self.current_version
        if self.error is not None:
            out["error"] = self.error
        return out


def dead_letter_message(version: int) -> str:
    """The message for a push of a version that is in the dead-letter queue."""
    return (
        f"version {version} of this document failed before and is in the dead-letter "
        "queue, so it is not read again; push a higher version, or drop the entry "
        "(GET /v1/dlq, then DELETE /v1/dlq/{id}) and push this one again"
    )


def push(
    manifest: Manifest,
    source: SourceIdentity,
    content_store: ContentStore,
    ops: Sequence[PushOp],
) -> list[PushResult]:
    """Apply and commit ``ops`` in order; one result per op (``status`` says what happened)."""
    manifest.ensure_source(source.source_id, source.source_type)
    results: list[PushResult] = []
    for part in _parts(ops):
        results.extend(_commit_part(manifest, source, content_store, part))
    return results


def _parts(ops: Sequence[PushOp]) -> list[list[PushOp]]:
    """Split so no object appears twice in one part (each part sees the one before)."""
    parts: list[list[PushOp]] = [[]]
    ids: set[str] = set()
    for op in ops:
        if op.object_id in ids:
            parts.append([])
            ids = set()
        parts[-1].append(op)
        ids.add(op.object_id)
    return [p for p in parts if p]


def _commit_part(
    manifest: Manifest, source: SourceIdentity, content_store: ContentStore, part: list[PushOp]
) -> list[PushResult]:
    """Decide ``part`` from a fresh read and commit it; decide again after a lost race."""
    last: TransientError | None = None
    for attempt in range(MAX_ATTEMPTS):
        staged = StagedContent(content_store)
        builder, results = _decide(manifest, source, staged, part)
        staged.flush()  # before the commit: a row never points at content not written
        if builder.commit.is_empty():
            return results
        try:
            manifest.commit_batch(builder.run_id, builder.commit)
            return results
        except TransientError as exc:  # a WriteConflict, a deadlock, a busy manifest
            last = exc
            time.sleep(random.uniform(0, 0.002 * (attempt + 1)))  # let the winner finish
    message = (
        f"the manifest kept changing under this push ({MAX_ATTEMPTS} attempts, last: {last}); "
        "other writers push the same objects at the same time: send it again"
    )
    return [
        PushResult(
            op.object_id, source.document_id(op.object_id), op.version, "conflict", None, message
        )
        for op in part
    ]


def _decide(
    manifest: Manifest, source: SourceIdentity, content_store: ContentStore, part: list[PushOp]
) -> tuple[BatchBuilder, list[PushResult]]:
    existing = manifest.documents_by_object_ids(source.source_id, [o.object_id for o in part])
    deleted = [r.document_id for r in existing.values() if r.state != ACTIVE]
    tombs = manifest.tombstone_sequences(deleted) if deleted else {}
    dead = manifest.failures.dead_source_versions(
        [source.document_id(o.object_id) for o in part], source.source_id
    )
    builder = BatchBuilder(
        source=source,
        run_id=str(uuid.uuid4()),
        existing=existing,
        tombstone_sequences=tombs,
        dead_versions=dead,
        content_store=content_store,
        fetch=None,
        counts=RunCounts(),
    )
    results = []
    for op in part:
        record = existing.get(op.object_id)
        result = PushResult(op.object_id, source.document_id(op.object_id), op.version)
        active = record is not None and record.state == ACTIVE
        if record is None:
            current = None
        elif active:
            current = record.sequence
        else:
            current = tombs.get(record.document_id)
        if current is not None and op.version < current:
            result.status, result.current_version = "stale", current
        elif op.doc is not None and active and op.version == current:
            result.status = "unchanged"  # a replay of what the manifest holds
        elif op.doc is not None:
            if not active and current is not None and op.version == current:
                result.status, result.current_version = "stale", current  # deleted at it
            else:
                failures_before = len(builder.commit.failures)
                outcome = builder.add_document(op.doc)
                result.status = outcome.value
                if outcome == Outcome.FAILED:
                    result.error = _failure_message(builder, failures_before, op)
        elif record is None:
            # Never held: a tombstone at this version, so its create arriving late is stale.
            tombstone_unheld(builder, op.object_id, _locator(source, op), op.version)
            result.status = "deleted"
        elif not active and (current is None or op.version > current):
            # Deleted already, at an older version: the tombstone moves up to this one, so
            # an upsert between the two versions arriving late is refused too.
            builder.tombstone(record, "deleted_in_source", op.version)
            result.status = "deleted"
        elif not active:
            result.status = "unchanged"  # deleted at this version already
        else:
            outcome = builder.add_deleted(Deleted(object_id=op.object_id, sequence=op.version))
            result.status = outcome.value
        if op.doc is None and result.status in ("deleted", "unchanged"):
            _resolve_dead(builder, dead, result.document_id, op.version)
        results.append(result)
    return builder, results


def _locator(source: SourceIdentity, op: PushOp) -> str:
    return f"push://{source.source_id}/{op.object_id}"


def _resolve_dead(
    builder: BatchBuilder, dead: dict[str, tuple[str | None, str]], document_id: str, version: int
) -> None:
    """A delete at ``version`` settles the dead letter of a version at or below it: the
    object is gone, and nothing else (no listing, no redrive) would ever resolve it."""
    failed_at = (dead.get(document_id) or (None, ""))[0]
    if failed_at is not None and failed_at.isdigit() and int(failed_at) <= version:
        builder.commit.resolved.append(document_id)


def _failure_message(builder: BatchBuilder, before: int, op: PushOp) -> str:
    """Why ``op`` failed: its own new failure record, or the dead letter of its version."""
    if len(builder.commit.failures) > before:
        return builder.commit.failures[-1].message
    return dead_letter_message(op.version)


def tombstone_unheld(builder: BatchBuilder, object_id: str, locator: str, sequence: int) -> None:
    """A delete at ``sequence`` of an object the manifest never held: a deleted row and
    its tombstone, so a create older than the delete arriving late is stale (invariant
    5); the tombstone completes at the next drain and is purged like any other."""
    source = builder.source
    doc_id = source.document_id(object_id)
    builder.commit.writes.append(
        DocumentWrite(
            document_id=doc_id,
            source_id=source.source_id,
            object_id=object_id,
            locator=locator,
            title=object_id,
            media_type=None,
            source_version=str(sequence),
            checksum=None,
            signature=None,
            pipeline_version=source.pipeline_version,
            revision=1,
            sequence=sequence,
            state=DELETED,
            acl=(),
            metadata={},
            last_seen_run=builder.run_id,
            is_new=True,
            checked=True,
        )
    )
    builder.commit.tombstones.append(
        TombstoneWrite(doc_id, source.source_id, object_id, 1, sequence, "deleted_in_source")
    )
    builder.counts.deleted += 1
