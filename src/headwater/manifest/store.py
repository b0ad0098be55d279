"""The manifest facade: documents, and the one-transaction batch commit.

``Manifest`` owns the engine and groups the ledgers (runs, failures, index state, the
change-event outbox). The
sync runner hands it a ``BatchCommit`` per batch; everything in it (document rows,
tombstones, failures, resolutions, last-seen marks) lands in one transaction or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, select
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from headwater import failpoints
from headwater.clock import utcnow
from headwater.errors import TransientError, WriteConflict
from headwater.manifest import schema as t
from headwater.manifest.batch import write_batch
from headwater.manifest.counts import DocumentCounts, lock_sources_of
from headwater.manifest.db import begin_write, create_manifest_engine, migrate
from headwater.manifest.driver_sql import driver_statement
from headwater.manifest.failures import FailureLedger
from headwater.manifest.generations import PREVIOUS, Generations, generation_key
from headwater.manifest.groups import GroupLedger
from headwater.manifest.hints import HintQueue
from headwater.manifest.index_state import IndexState
from headwater.manifest.leases import Lease, fence
from headwater.manifest.liveness import Liveness
from headwater.manifest.lookups import active_acls, bound_ids, chunked, rows_by_object_ids
from headwater.manifest.outbox import Outbox
from headwater.manifest.prunes import CHUNK as CHUNK  # rows per query, here as before
from headwater.manifest.prunes import PruneLedger
from headwater.manifest.push_sessions import SessionLedger
from headwater.manifest.pushed_groups import PushedGroups
from headwater.manifest.records import (
    ACTIVE,
    DELETED,
    FIELD_COLUMNS,
    RECORD_COLUMNS,
    BatchCommit,
    DocumentFields,
    DocumentRecord,
    stored_acl,
)
from headwater.manifest.runs import RunLedger
from headwater.manifest.subscriptions import SubscriptionLedger
from headwater.manifest.throttles import RateLedger

LOCK_MARKERS = ("database is locked", "deadlock", "could not serialize", "lock timeout")


class Manifest:
    """The SQL manifest: the truth every index is a projection of."""

    def __init__(self, engine: Engine, *, max_attempts: int = 3) -> None:
        self.engine = engine
        self.runs = RunLedger(engine)
        self.failures = FailureLedger(engine, max_attempts=max_attempts)
        self.outbox = Outbox(engine)
        self.index_state = IndexState(engine, self.outbox)
        self.groups = GroupLedger(engine)
        self.generations = Generations(engine)
        self.prunes = PruneLedger(engine)
        self.sessions = SessionLedger(engine)  # full-replace push sessions
        self.pushed_groups = PushedGroups(engine)
        self.hints = HintQueue(engine)
        self.liveness = Liveness(engine)
        self.rates = RateLedger(engine)  # the rate-limit governor's shared budgets
        self.subscriptions = SubscriptionLedger(engine)  # vendor subscriptions kept alive

    @classmethod
    def open(cls, url: str, *, max_attempts: int = 3, lease_seconds: int = 60) -> Manifest:
        """Open (and migrate) the manifest at ``url``; ``lease_seconds`` bounds how long
        one of its transactions may block the others (``db.create_manifest_engine``)."""
        engine = create_manifest_engine(url, lease_seconds=lease_seconds)
        migrate(engine)
        return cls(engine, max_attempts=max_attempts)

    def close(self) -> None:
        """Close the manifest's database connections."""
        self.engine.dispose()

    @property
    def manifest_id(self) -> str:
        """The id generated when this manifest was created; every index is bound to it."""
        with self.engine.connect() as conn:
            return str(conn.execute(select(t.manifest_identity.c.manifest_id)).scalar_one())

    # -- documents -----------------------------------------------------------------

    def ensure_source(self, source_id: str, source_type: str) -> None:
        """Register a source once; two processes registering it at once both succeed."""
        try:
            with begin_write(self.engine) as conn:
                found = conn.execute(
                    select(t.sources.c.source_id).where(t.sources.c.source_id == source_id)
                ).first()
                if found is None:
                    conn.execute(
                        insert(t.sources).values(
                            source_id=source_id, type=source_type, created_at=utcnow()
                        )
                    )
        except IntegrityError:  # inserted by a concurrent process after our SELECT
            if self._source_missing(source_id):
                raise

    def _source_missing(self, source_id: str) -> bool:
        with self.engine.connect() as conn:
            return (
                conn.execute(
                    select(t.sources.c.source_id).where(t.sources.c.source_id == source_id)
                ).first()
                is None
            )

    def document(self, document_id: str) -> DocumentRecord | None:
        """The document ``document_id``, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.documents).where(t.documents.c.document_id == document_id)
            ).first()
        return DocumentRecord.from_row(row) if row else None

    def document_by_object(self, source_id: str, object_id: str) -> DocumentRecord | None:
        """The document of ``object_id`` in ``source_id``, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.documents).where(
                    t.documents.c.source_id == source_id, t.documents.c.object_id == object_id
                )
            ).first()
        return DocumentRecord.from_row(row) if row else None

    def documents_by_object_ids(
        self, source_id: str, object_ids: Sequence[str]
    ) -> dict[str, DocumentRecord]:
        """The documents of these object ids in ``source_id``, by object id."""
        rows = self.rows_by_object_ids(source_id, object_ids, RECORD_COLUMNS, listed=False)
        return {r.object_id: r for r in map(DocumentRecord.from_values, rows)}

    def fields_by_object_ids(
        self, source_id: str, object_ids: Sequence[str]
    ) -> dict[str, DocumentFields]:
        """``documents_by_object_ids`` without the rows' timestamps: what the sync gates
        decide from (a no-op re-sync reads one per object it lists)."""
        rows = self.rows_by_object_ids(source_id, object_ids, FIELD_COLUMNS, listed=False)
        return {r.object_id: r for r in map(DocumentFields.from_fields, rows)}

    def rows_by_object_ids(
        self, source_id: str, object_ids: Sequence[str], columns: Sequence[str], *, listed: bool
    ) -> Iterator[Sequence[Any]]:
        """The ``columns`` of these object ids' rows in ``source_id``, as tuples
        (``listed``: ids in about the index's order, ``lookups.rows_by_object_ids``)."""
        return rows_by_object_ids(self.engine, source_id, object_ids, columns, listed=listed)

    def documents_by_ids(self, document_ids: Sequence[str]) -> dict[str, DocumentRecord]:
        """The documents with these ids, by document id."""
        found: dict[str, DocumentRecord] = {}
        with self.engine.connect() as conn:
            for part in chunked(list(document_ids)):
                for row in conn.execute(
                    select(t.documents).where(t.documents.c.document_id.in_(part))
                ):
                    record = DocumentRecord.from_row(row)
                    found[record.document_id] = record
        return found

    def visible_to(self, document_ids: Sequence[str], principals: Sequence[str]) -> set[str]:
        """Those of ``document_ids`` that are active here with an ACL meeting ``principals``.

        Search checks its results against this, so a revoked or deleted document is never
        returned while an index still holds its old ACL (``sync --no-index``, an ACL update
        pending or dead-lettered, an index restored from an old copy)."""
        wanted = set(principals)
        visible: set[str] = set()
        dialect = self.engine.dialect
        # the ids bound as one value (``lookups.in_ids``), the statement compiled once and
        # read on the driver's connection (``driver_sql``): SQLAlchemy's per-execution work
        # cost more than the read. Each part is a read of its own: a document's ACL and
        # state are one row, so each is judged on one snapshot whatever the others'.
        query = driver_statement(dialect, "visible_to", lambda: active_acls(dialect.name))
        for part in chunked(list(dict.fromkeys(document_ids))):
            rows = query.read(self.engine, {"ids": bound_ids(part, dialect.name)})
            # an ACL decoded once per distinct text (``stored_acl``): documents share few
            visible.update(doc for doc, acl in rows if not wanted.isdisjoint(stored_acl(acl)))
        return visible

    def documents_after(self, after: str, limit: int) -> list[DocumentRecord]:
        """Documents in id order after ``after`` (keyset pagination, bounded memory)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(t.documents)
                .where(t.documents.c.document_id > after)
                .order_by(t.documents.c.document_id)
                .limit(limit)
            )
            return [DocumentRecord.from_row(r) for r in rows]

    def source_documents_after(
        self, source_id: str, after: str, limit: int
    ) -> list[DocumentRecord]:
        """Active documents of ``source_id`` in id order after ``after`` (keyset pages)."""
        d = t.documents
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(d)
                .where(d.c.source_id == source_id, d.c.state == ACTIVE, d.c.document_id > after)
                .order_by(d.c.document_id)
                .limit(limit)
            )
            return [DocumentRecord.from_row(r) for r in rows]

    def known_version(self, source_id: str, object_id: str, pipeline_version: str) -> str | None:
        """The stored version hint, only while it still certifies (same pipeline, active)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.documents.c.source_version).where(
                    t.documents.c.source_id == source_id,
                    t.documents.c.object_id == object_id,
                    t.documents.c.state == ACTIVE,
                    t.documents.c.pipeline_version == pipeline_version,
                )
            ).first()
        return row[0] if row else None

    def tombstone_sequences(self, document_ids: Sequence[str]) -> dict[str, int | None]:
        """The source sequence of each tombstone among ``document_ids``."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(t.tombstones.c.document_id, t.tombstones.c.sequence).where(
                    t.tombstones.c.document_id.in_(list(document_ids))
                )
            )
            return {r[0]: r[1] for r in rows}

    def count_documents(self, source_id: str, state: str = ACTIVE) -> int:
        """How many documents of ``source_id`` are in ``state`` (maintained counts)."""
        return DocumentCounts(self.engine).documents(source_id, state)

    def count_tombstones(self, source_id: str, reason: str) -> int:
        """The source's tombstones with ``reason`` still held: not yet purged after the
        retention, nor cleared by their document coming back."""
        tomb = t.tombstones
        with self.engine.connect() as conn:
            return int(
                conn.execute(
                    select(func.count()).where(
                        tomb.c.source_id == source_id, tomb.c.reason == reason
                    )
                ).scalar_one()
            )

    def record_enumeration(self, run_id: str, object_ids: Iterable[str]) -> int:
        """Store a full enumeration in batches (bounded memory); returns the count."""
        return self.prunes.record_enumeration(run_id, object_ids)

    def count_prune_candidates(self, source_id: str, run_id: str, *, by_enumeration: bool) -> int:
        """How many documents a prune after ``run_id`` would delete (one COUNT query)."""
        return self.prunes.count_prune_candidates(source_id, run_id, by_enumeration=by_enumeration)

    def prune_candidates(
        self,
        source_id: str,
        run_id: str,
        *,
        by_enumeration: bool,
        after: str = "",
        limit: int = CHUNK,
    ) -> list[DocumentRecord]:
        """One page of prune candidates in document_id order after ``after`` (keyset)."""
        return self.prunes.prune_candidates(
            source_id, run_id, by_enumeration=by_enumeration, after=after, limit=limit
        )

    def iter_prune_candidates(
        self, source_id: str, run_id: str, *, by_enumeration: bool, page: int = CHUNK
    ) -> Iterator[list[DocumentRecord]]:
        """Every prune candidate, a page at a time; never the whole list in memory."""
        return self.prunes.iter_prune_candidates(
            source_id, run_id, by_enumeration=by_enumeration, page=page
        )

    def collect_unseen(self, source_id: str, run_id: str) -> int:
        """Store what run ``run_id``'s complete read did not see as its prune candidates."""
        return self.prunes.collect_unseen(source_id, run_id)

    def clear_run_lists(self, run_id: str) -> None:
        """Delete the enumeration, seen lists and prune candidates stored for ``run_id``."""
        self.prunes.clear_run_lists(run_id)

    # -- the batch commit ------------------------------------------------------------

    def commit_batch(self, run_id: str, batch: BatchCommit, *, lease: Lease | None = None) -> None:
        """Apply one batch in a single transaction.

        With ``lease`` (every sync run passes its own), the transaction first fences it:
        if another process took the lease over, ``LeaseLost`` and nothing is written.
        A checked write (the version gates set them) applies only to the row it was decided
        from; a row changed meanwhile, or inserted by a concurrent batch, is a
        ``WriteConflict`` and nothing is written: read again and decide again.
        A lock timeout or serialization failure is a ``TransientError``: the runner retries
        the run from its last checkpoint, and the transaction left nothing behind. So is a
        connection the manifest server ended meanwhile (it ends a transaction left idle
        for ``lease_seconds`` + 5 s: this process was paused or cut off), unless another
        process took the lease over in the meantime: then ``LeaseLost``.
        """
        try:
            with begin_write(self.engine) as conn:
                if lease is not None:
                    fence(conn, lease)
                failpoints.failpoint(failpoints.INSIDE_BATCH_COMMIT)
                write_batch(conn, run_id, batch, self.failures, self.outbox)
        except IntegrityError as exc:
            raise WriteConflict(
                f"a concurrent batch wrote the same document first ({exc.orig}); "
                "nothing was written, decide again from the manifest"
            ) from exc
        except DBAPIError as exc:
            if lease is not None:
                self.runs.leases.check(lease)
            if exc.connection_invalidated:
                raise TransientError(
                    f"the manifest ended this batch's connection ({exc.orig}); this process "
                    "was probably paused or cut off from it for longer than [sync] "
                    "lease_seconds + 5 s. The batch will be retried from the last checkpoint"
                ) from exc
            text = str(exc.orig).lower()
            if isinstance(exc, OperationalError) and any(m in text for m in LOCK_MARKERS):
                raise TransientError(
                    f"the manifest was busy ({exc.orig}); the batch will be retried"
                ) from exc
            raise
        self.index_state.counts.note_write()  # committed: fold the count rows now and then

    # -- maintenance -------------------------------------------------------------------

    @staticmethod
    def _previous_keys(conn: Connection) -> list[str]:
        g = t.generations
        rows = conn.execute(select(g.c.index_name, g.c.generation).where(g.c.state == PREVIOUS))
        return [generation_key(r[0], int(r[1])) for r in rows]

    def purge_tombstones(self, retention_days: int) -> list[str]:
        """Forget completed tombstones older than the retention; returns their documents.

        The document row goes too, but its revision stays as a floor: a document
        re-created under the same id starts above it, so every index (which may still
        hold the tombstone) accepts it. Revisions of a document_id never go backwards.
        A tombstone is kept while a ``previous`` generation (which receives no writes)
        still holds its document: a rollback catches it up from this tombstone.
        """
        cutoff = utcnow() - timedelta(days=retention_days)
        tomb, di = t.tombstones, t.document_indexes
        with begin_write(self.engine) as conn:
            held = select(di.c.document_id).where(
                di.c.document_id == tomb.c.document_id,
                di.c.index_name.in_(self._previous_keys(conn)),
                di.c.applied_revision < tomb.c.revision,
            )
            old = [
                (r[0], int(r[1]))
                for r in conn.execute(
                    select(tomb.c.document_id, tomb.c.revision).where(
                        tomb.c.completed_at.is_not(None),
                        tomb.c.detected_at < cutoff,
                        ~held.exists(),
                    )
                )
            ]
            ids = [doc_id for doc_id, _ in old]
            lock_sources_of(conn, ids, shared=False)  # the counts' triggers' locks, in order
            revisions = dict(old)
            for part in chunked(ids):
                for doc_id, revision in conn.execute(
                    select(t.documents.c.document_id, t.documents.c.revision).where(
                        t.documents.c.document_id.in_(part)
                    )
                ):
                    revisions[doc_id] = max(revisions[doc_id], int(revision))
                conn.execute(
                    delete(t.revision_floors).where(t.revision_floors.c.document_id.in_(part))
                )
                conn.execute(
                    insert(t.revision_floors),
                    [{"document_id": d, "revision": revisions[d]} for d in part],
                )
                conn.execute(delete(t.tombstones).where(t.tombstones.c.document_id.in_(part)))
                conn.execute(
                    delete(t.document_indexes).where(t.document_indexes.c.document_id.in_(part))
                )
                conn.execute(
                    delete(t.documents).where(
                        t.documents.c.document_id.in_(part), t.documents.c.state == DELETED
                    )
                )
        return ids
