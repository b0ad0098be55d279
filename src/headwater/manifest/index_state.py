"""Per-index applied revisions: the manifest is the outbox.

Work pending for an index is exactly the documents whose manifest revision is ahead of
the revision that index confirmed (or whose index pipeline version is outdated). An
applied revision is recorded only after the sink confirmed the write (invariant 4), and
in the same transaction its ``applied`` event enters the change-event outbox.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, and_, delete, func, insert, or_, select, update

from headwater.clock import utcnow
from headwater.manifest import schema as t
from headwater.manifest.counts import DocumentCounts, lock_sources, lock_sources_of
from headwater.manifest.db import begin_write
from headwater.manifest.outbox import APPLIED, ChangeEvent, Outbox
from headwater.manifest.records import ACTIVE, DELETED, DocumentRecord

d = t.documents
di = t.document_indexes


@dataclass(frozen=True)
class PendingWork:
    """A document an index must apply, with the revision and signature it applied last."""

    document: DocumentRecord
    applied_revision: int | None
    applied_signature: str | None
    applied_pipeline: str | None


@dataclass(frozen=True)
class Applied:
    """What a sink confirmed for one document: revision, signature, pipeline and chunks."""

    document_id: str
    revision: int
    signature: str | None
    pipeline_version: str
    chunks: int


def _applied_events(
    conn: Connection, index_name: str, applied: Sequence[Applied]
) -> list[ChangeEvent]:
    """The ``applied`` events of what one index (a generation key) confirmed."""
    name, _, number = index_name.partition("@")
    generation = int(number) if number.isdigit() else 1
    where: dict[str, tuple[str, str]] = {}
    ids = [a.document_id for a in applied]
    for start in range(0, len(ids), 500):
        rows = conn.execute(
            select(d.c.document_id, d.c.source_id, d.c.object_id).where(
                d.c.document_id.in_(ids[start : start + 500])
            )
        )
        where.update({r[0]: (r[1], r[2]) for r in rows})
    return [
        ChangeEvent(
            APPLIED,
            where[a.document_id][0],
            where[a.document_id][1],
            a.document_id,
            a.revision,
            index_name=name,
            generation=generation,
        )
        for a in applied
        if a.document_id in where
    ]


class IndexState:
    """Which revision of each document each index applied (``document_index``)."""

    def __init__(self, engine: Engine, outbox: Outbox | None = None) -> None:
        self.engine = engine
        self.outbox = outbox
        self.counts = DocumentCounts(engine)

    def _pending_condition(self, index_version: str):  # type: ignore[no-untyped-def]
        return or_(
            and_(
                d.c.state == ACTIVE,
                or_(
                    di.c.applied_revision.is_(None),
                    di.c.applied_revision < d.c.revision,
                    di.c.pipeline_version != index_version,
                ),
            ),
            and_(
                d.c.state == DELETED,
                di.c.applied_revision.is_not(None),
                di.c.applied_revision < d.c.revision,
            ),
        )

    def pending(
        self,
        index_name: str,
        index_version: str,
        *,
        limit: int,
        after: str = "",
        only: Sequence[str] | None = None,
    ) -> list[PendingWork]:
        """Up to ``limit`` documents pending for the index, by document id after ``after``."""
        join = d.outerjoin(
            di, and_(di.c.document_id == d.c.document_id, di.c.index_name == index_name)
        )
        query = (
            select(
                d, di.c.applied_revision, di.c.applied_signature, di.c.pipeline_version.label("ipv")
            )
            .select_from(join)
            .where(self._pending_condition(index_version), d.c.document_id > after)
            .order_by(d.c.document_id)
            .limit(limit)
        )
        if only is not None:
            query = query.where(d.c.document_id.in_(list(only)))
        with self.engine.connect() as conn:
            return [
                PendingWork(
                    document=DocumentRecord.from_row(row),
                    applied_revision=row._mapping["applied_revision"],
                    applied_signature=row._mapping["applied_signature"],
                    applied_pipeline=row._mapping["ipv"],
                )
                for row in conn.execute(query)
            ]

    def pending_count(self, index_name: str, index_version: str) -> int:
        """How many documents are pending for the index: read from the maintained
        ``document_counts`` (migration 0020), not counted from the documents."""
        return self.counts.pending(index_name, index_version)

    def record_applied(self, index_name: str, applied: Sequence[Applied]) -> None:
        """Record what the index's sink confirmed for these documents."""
        if not applied:
            return
        now = utcnow()
        ids = [a.document_id for a in applied]
        with begin_write(self.engine) as conn:
            lock_sources_of(conn, ids, shared=True)  # the counts' triggers' locks, in order
            conn.execute(delete(di).where(di.c.index_name == index_name, di.c.document_id.in_(ids)))
            conn.execute(
                insert(di),
                [
                    {
                        "document_id": a.document_id,
                        "index_name": index_name,
                        "applied_revision": a.revision,
                        "applied_signature": a.signature,
                        "pipeline_version": a.pipeline_version,
                        "chunks": a.chunks,
                        "applied_at": now,
                    }
                    for a in applied
                ],
            )
            if self.outbox is not None and self.outbox.enabled:
                self.outbox.add(conn, _applied_events(conn, index_name, applied))
        self.counts.note_write()

    def for_document(self, document_id: str) -> dict[str, tuple[int, int]]:
        """Each index's applied revision and chunk count for ``document_id``."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(di.c.index_name, di.c.applied_revision, di.c.chunks).where(
                    di.c.document_id == document_id
                )
            )
            return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def applied_map(
        self, index_name: str, document_ids: Sequence[str]
    ) -> dict[str, tuple[int, int]]:
        """The applied revision and chunk count of these documents in one index."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(di.c.document_id, di.c.applied_revision, di.c.chunks).where(
                    di.c.index_name == index_name, di.c.document_id.in_(list(document_ids))
                )
            )
            return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def complete_tombstones(self, document_ids: Sequence[str], index_names: Sequence[str]) -> None:
        """Mark tombstones complete once every index confirmed the delete."""
        now = utcnow()
        with begin_write(self.engine) as conn:
            for doc_id in document_ids:
                tomb = conn.execute(
                    select(t.tombstones.c.revision).where(
                        t.tombstones.c.document_id == doc_id, t.tombstones.c.completed_at.is_(None)
                    )
                ).first()
                if tomb is None:
                    continue
                done = conn.execute(
                    select(func.count()).where(
                        di.c.document_id == doc_id,
                        di.c.index_name.in_(list(index_names)),
                        di.c.applied_revision >= tomb[0],
                    )
                ).scalar_one()
                never = conn.execute(
                    select(func.count()).where(
                        di.c.document_id == doc_id, di.c.index_name.in_(list(index_names))
                    )
                ).scalar_one()
                # An index that never held the document has nothing to delete.
                if done + (len(index_names) - never) >= len(index_names):
                    conn.execute(
                        update(t.tombstones)
                        .where(t.tombstones.c.document_id == doc_id)
                        .values(completed_at=now)
                    )

    def incomplete_tombstones(self) -> list[str]:
        """The document ids of tombstones not yet completed."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(t.tombstones.c.document_id).where(t.tombstones.c.completed_at.is_(None))
            )
            return [r[0] for r in rows]

    def forget(self, index_name: str, document_ids: Sequence[str]) -> None:
        """Drop applied rows so the documents are pending again (reconcile repair)."""
        with begin_write(self.engine) as conn:
            lock_sources_of(conn, list(document_ids), shared=True)
            conn.execute(
                delete(di).where(
                    di.c.index_name == index_name, di.c.document_id.in_(list(document_ids))
                )
            )

    def forget_index(self, index_name: str) -> None:
        """Drop every applied row of an index (it was emptied): all of it is pending."""
        with begin_write(self.engine) as conn:
            held = conn.execute(
                select(t.document_counts.c.scope).where(t.document_counts.c.kind == "docs")
            )
            lock_sources(conn, [r[0] for r in held], shared=True)
            conn.execute(delete(di).where(di.c.index_name == index_name))

    def totals(self, index_name: str) -> tuple[int, int]:
        """(live documents, chunks) recorded as applied for an index (generation key)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(func.count(), func.coalesce(func.sum(di.c.chunks), 0))
                .select_from(di.join(d, d.c.document_id == di.c.document_id))
                .where(
                    di.c.index_name == index_name,
                    di.c.applied_signature.is_not(None),
                    d.c.state == ACTIVE,
                )
            ).one()
            return int(row[0]), int(row[1])

    def active_documents(self) -> int:
        """How many active documents the manifest holds (what every index must hold)."""
        return self.counts.active()
