"""Failure records and the dead-letter queue: one table, two views.

Every failed document becomes a row keyed by (document, stage). While it has attempts
left it is ``retrying`` (the next sync or index pass tries again); a permanent error, or
one that used up its attempts, is ``dead`` (the DLQ). A later success of the same
document and stage marks the row ``resolved``. Deletes carry a higher priority.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    and_,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    update,
)

from headwater.clock import utcnow
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.failure_groups import FailureGroup, GroupKey, entries_of, summarize
from headwater.manifest.lookups import bound_ids, in_ids
from headwater.manifest.records import SOURCE_STAGES, FailureRecord, FailureWrite

RETRYING = "retrying"
DEAD = "dead"
RESOLVED = "resolved"
OPEN = (RETRYING, DEAD)
DELETE_PRIORITY = 10
DEFAULT_PRIORITY = 0


def _chunks(items: Sequence[str], size: int = 500) -> list[Sequence[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class FailureLedger:
    """The failures table: record, resolve, list and drop failure records."""

    def __init__(self, engine: Engine, *, max_attempts: int = 3) -> None:
        self.engine = engine
        self.max_attempts = max_attempts

    def write(
        self, conn: Connection, failures: Sequence[FailureWrite], run_id: str | None, now: datetime
    ) -> None:
        """Record ``failures`` in ``conn``'s transaction, counting attempts up to dead."""
        for f in failures:
            row = conn.execute(
                select(
                    t.failures.c.entry_id,
                    t.failures.c.attempts,
                    t.failures.c.status,
                    t.failures.c.revision,
                ).where(t.failures.c.document_id == f.document_id, t.failures.c.stage == f.stage)
            ).first()
            newer = f.revision is not None and row is not None and (row[3] or 0) < f.revision
            previous = 0 if row is None or row[2] == RESOLVED or newer else int(row[1])
            attempts = previous + 1
            status = DEAD if f.permanent or attempts >= self.max_attempts else RETRYING
            values = {
                "source_id": f.source_id,
                "object_id": f.object_id,
                "locator": f.locator,
                "error_class": f.error_class,
                "message": f.message[:4000],
                "pipeline_version": f.pipeline_version,
                "source_version": f.source_version,
                "fetch_ref": f.fetch_ref,
                "attempts": attempts,
                "permanent": int(f.permanent),
                "status": status,
                "priority": DELETE_PRIORITY if f.stage.startswith("delete") else DEFAULT_PRIORITY,
                "last_failed_at": now,
                "resolved_at": None,
                "run_id": run_id,
                "revision": f.revision,
            }
            if row is None:
                conn.execute(
                    insert(t.failures).values(
                        document_id=f.document_id, stage=f.stage, first_failed_at=now, **values
                    )
                )
            else:
                if row[2] == RESOLVED or newer:
                    values["first_failed_at"] = now
                conn.execute(
                    update(t.failures).where(t.failures.c.entry_id == row[0]).values(**values)
                )

    def record(self, failures: Sequence[FailureWrite], run_id: str | None = None) -> None:
        """Record ``failures`` in a transaction of their own."""
        with begin_write(self.engine) as conn:
            self.write(conn, failures, run_id, utcnow())

    def resolve_in(
        self,
        conn: Connection,
        document_ids: Sequence[str],
        now: datetime,
        stages: Sequence[str] = SOURCE_STAGES,
    ) -> None:
        """Mark the open failures of ``document_ids`` at ``stages`` resolved, in ``conn``."""
        for part in _chunks(list(document_ids)):
            conn.execute(
                update(t.failures)
                .where(
                    t.failures.c.document_id.in_(part),
                    t.failures.c.stage.in_(list(stages)),
                    t.failures.c.status.in_(OPEN),
                )
                .values(status=RESOLVED, resolved_at=now)
            )

    def touch_in(self, conn: Connection, document_ids: Sequence[str], run_id: str) -> None:
        """Note that a run saw these still-failing objects (they still exist)."""
        for part in _chunks(list(document_ids)):
            conn.execute(
                update(t.failures)
                .where(
                    t.failures.c.document_id.in_(part),
                    t.failures.c.stage.in_(SOURCE_STAGES),
                    t.failures.c.status.in_(OPEN),
                )
                .values(run_id=run_id)
            )

    def resolve_vanished(self, source_id: str, run_id: str) -> int:
        """After a complete listing: source-stage failures of objects no longer listed."""
        with begin_write(self.engine) as conn:
            result = conn.execute(
                update(t.failures)
                .where(
                    t.failures.c.source_id == source_id,
                    t.failures.c.stage.in_(SOURCE_STAGES),
                    t.failures.c.status.in_(OPEN),
                    or_(t.failures.c.run_id.is_(None), t.failures.c.run_id != run_id),
                )
                .values(status=RESOLVED, resolved_at=utcnow())
            )
        return int(result.rowcount or 0)

    def resolve(self, document_ids: Sequence[str], stages: Sequence[str]) -> None:
        """Mark the open failures of ``document_ids`` at ``stages`` resolved."""
        with begin_write(self.engine) as conn:
            self.resolve_in(conn, document_ids, utcnow(), stages)

    def dead_source_versions(
        self, document_ids: Iterable[str], source_id: str | None = None
    ) -> dict[str, tuple[str | None, str]]:
        """For dead source-stage entries: document -> (source version, pipeline version).

        With ``source_id`` (every id one of its documents), one indexed probe first asks
        whether that source has any such entry at all: most batches of a no-op re-sync
        then cost one query, not one lookup per document, and ``document_ids`` (which
        may be a generator) is not even read."""
        found: dict[str, tuple[str | None, str]] = {}
        dialect = self.engine.dialect.name
        dead = (t.failures.c.status == DEAD, t.failures.c.stage.in_(SOURCE_STAGES))
        query = select(
            t.failures.c.document_id, t.failures.c.source_version, t.failures.c.pipeline_version
        ).where(in_ids(t.failures.c.document_id, dialect), *dead)
        with self.engine.connect() as conn:
            if source_id is not None:
                probe = select(literal(1)).where(t.failures.c.source_id == source_id, *dead)
                if conn.execute(probe.limit(1)).first() is None:
                    return found
            for part in _chunks(list(document_ids)):
                rows = conn.execute(query, {"ids": bound_ids(part, dialect)})
                for r in rows:
                    found[r[0]] = (r[1], r[2])
        return found

    def open_documents(self, stage_prefix: str) -> dict[str, int | None]:
        """Documents with a dead entry at a stage starting with ``stage_prefix``.

        Each maps to the revision that died (None when not recorded): a dead entry
        blocks that revision only, never a newer one.
        """
        found: dict[str, int | None] = {}
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(t.failures.c.document_id, t.failures.c.revision).where(
                    t.failures.c.status == DEAD, t.failures.c.stage.like(f"{stage_prefix}%")
                )
            )
            for doc_id, revision in rows:
                if doc_id in found and found[doc_id] is None:
                    continue
                found[doc_id] = (
                    None if revision is None else max(found.get(doc_id, 0) or 0, revision)
                )
        return found

    def list(
        self,
        *,
        source_id: str | None = None,
        stage: str | None = None,
        statuses: Sequence[str] = OPEN,
        limit: int = 1000,
    ) -> list[FailureRecord]:
        """Failure records with these statuses, optionally of one source and stage."""
        query = select(t.failures).where(t.failures.c.status.in_(list(statuses)))
        if source_id:
            query = query.where(t.failures.c.source_id == source_id)
        if stage:
            query = query.where(
                or_(t.failures.c.stage == stage, t.failures.c.stage.like(f"{stage}:%"))
            )
        query = query.order_by(t.failures.c.priority.desc(), t.failures.c.entry_id).limit(limit)
        with self.engine.connect() as conn:
            return [FailureRecord.from_row(r) for r in conn.execute(query)]

    def summary(self, source_id: str | None = None) -> Sequence[FailureGroup]:
        """Open failures grouped by source, stage, class (and extension), largest first:
        one streaming pass, so a share with 100k failures is summed in bounded memory."""
        with self.engine.connect() as conn:
            return summarize(conn, source_id=source_id, statuses=OPEN, dead_status=DEAD)

    def group_entries(self, key: GroupKey, statuses: Sequence[str] = OPEN) -> Sequence[int]:
        """The entry ids of one group's failures with one of ``statuses``."""
        with self.engine.connect() as conn:
            return entries_of(conn, key, statuses)

    def get(self, entry_id: int) -> FailureRecord | None:
        """The failure record with ``entry_id``, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(select(t.failures).where(t.failures.c.entry_id == entry_id)).first()
        return FailureRecord.from_row(row) if row else None

    def drop(self, entry_ids: Sequence[int]) -> int:
        """Delete the failure records ``entry_ids``; returns how many were deleted."""
        with begin_write(self.engine) as conn:
            result = conn.execute(
                delete(t.failures).where(t.failures.c.entry_id.in_(list(entry_ids)))
            )
        return int(result.rowcount or 0)

    def reopen(self, entry_ids: Sequence[int]) -> None:
        """Give DLQ entries fresh attempts (redrive): they no longer block the gate."""
        with begin_write(self.engine) as conn:
            conn.execute(
                update(t.failures)
                .where(t.failures.c.entry_id.in_(list(entry_ids)), t.failures.c.status == DEAD)
                .values(status=RETRYING, attempts=0)
            )

    def counts(self, source_id: str | None = None) -> dict[str, object]:
        """Open failures, DLQ depth, oldest DLQ entry time and failed deletes."""
        cond: list[ColumnElement[bool]] = [t.failures.c.status.in_(OPEN)]
        if source_id:
            cond.append(t.failures.c.source_id == source_id)
        with self.engine.connect() as conn:
            open_count = conn.execute(select(func.count()).where(and_(*cond))).scalar_one()
            dead = [t.failures.c.status == DEAD, *cond[1:]]
            depth, oldest = conn.execute(
                select(func.count(), func.min(t.failures.c.first_failed_at)).where(and_(*dead))
            ).one()
            deletes = conn.execute(
                select(func.count()).where(and_(*cond), t.failures.c.stage.like("delete%"))
            ).scalar_one()
        return {
            "open": int(open_count),
            "dlq": int(depth),
            "oldest": oldest,
            "deletes": int(deletes),
        }
