"""Writing one ``BatchCommit`` inside the manifest transaction ``Manifest.commit_batch`` opened.

Document rows, tombstones, failures, resolutions and last-seen marks of one batch land
together or not at all. A checked write (the version gates set them, see
``RowVersion``) applies only onto the row it was decided from: an update whose row
moved on matches nothing, an insert whose row exists (or is inserted concurrently: the
unique key) fails, and either is a ``WriteConflict`` that rolls the whole batch back.
So two processes deciding from the same read can never both win: the loser reads again
and decides again (invariant 5 across processes, not only within one). Each change that
moves a revision adds its event to the outbox in the same transaction (``outbox``).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from headwater.clock import utcnow
from headwater.errors import WriteConflict
from headwater.manifest import schema as t
from headwater.manifest.counts import lock_sources
from headwater.manifest.failures import FailureLedger
from headwater.manifest.outbox import ACCESS_CHANGED, UPSERTED, ChangeEvent, Outbox
from headwater.manifest.outbox import DELETED as DELETED_EVENT
from headwater.manifest.records import ACTIVE, DELETED, BatchCommit, DocumentWrite, RowVersion

CHUNK = 500


def _at(expect: RowVersion | None) -> list[Any]:
    """The WHERE terms that hold only while a documents row is still at ``expect``."""
    if expect is None:
        return []
    docs = t.documents.c
    return [
        docs.revision == expect.revision,
        docs.sequence.is_not_distinct_from(expect.sequence),
        docs.state == expect.state,
    ]


def _conflict(document_id: str) -> WriteConflict:
    return WriteConflict(
        f"document {document_id} changed in the manifest after this batch read it; "
        "nothing was written, decide again from the manifest"
    )


def _checked(result: Any, checked: bool, document_id: str) -> None:
    """A checked write that matched no row lost a race: the batch is a conflict."""
    if checked and result.rowcount != 1:
        raise _conflict(document_id)


def write_batch(
    conn: Connection,
    run_id: str,
    batch: BatchCommit,
    failures: FailureLedger,
    outbox: Outbox | None = None,
) -> None:
    """Every change of ``batch`` on ``conn`` (the caller commits or rolls back), and its
    events in ``outbox`` (when that is enabled)."""
    now = utcnow()
    events: list[ChangeEvent] | None = [] if outbox is not None and outbox.enabled else None
    # The counts' triggers lock each changed document's source; take them in order now.
    changed = [w.source_id for w in batch.writes] + [w.source_id for w in batch.tombstones]
    lock_sources(conn, changed, shared=False)
    floors: dict[str, int] = {}  # rows inserted here: the floor their revision starts above
    for write in batch.writes:
        floor = _write_document(conn, write, now, events)
        if floor is not None:
            floors[write.document_id] = floor
    mark_seen = (
        update(t.documents)
        .where(t.documents.c.document_id.in_(bindparam("ids", expanding=True)))
        .values(last_seen_run=run_id)
    )  # built once, its ids bound per part
    for start in range(0, len(batch.seen), CHUNK):
        conn.execute(mark_seen, {"ids": batch.seen[start : start + CHUNK]})
    for source_id, folder in batch.seen_prefixes:
        under = folder if folder.endswith("/") else folder + "/"
        conn.execute(
            update(t.documents)
            .where(
                t.documents.c.source_id == source_id,
                t.documents.c.state == ACTIVE,
                (t.documents.c.object_id == folder)
                | t.documents.c.object_id.startswith(under, autoescape=True),
            )
            .values(last_seen_run=run_id)
        )
    for doc_id in batch.cleared_tombstones:
        conn.execute(delete(t.tombstones).where(t.tombstones.c.document_id == doc_id))
    for tomb in batch.tombstones:
        revision = tomb.revision + floors.get(tomb.document_id, 0)
        # The row first: a concurrent delete of it waits on this row's lock, then finds
        # it changed (its condition fails) before it touches the tombstone.
        _checked(
            conn.execute(
                update(t.documents)
                .where(t.documents.c.document_id == tomb.document_id, *_at(tomb.expect))
                .values(
                    state=DELETED,
                    revision=revision,
                    sequence=tomb.sequence if tomb.sequence is not None else t.documents.c.sequence,
                    updated_at=now,
                )
            ),
            tomb.expect is not None,
            tomb.document_id,
        )
        conn.execute(delete(t.tombstones).where(t.tombstones.c.document_id == tomb.document_id))
        if events is not None:
            gone = ChangeEvent(
                DELETED_EVENT, tomb.source_id, tomb.object_id, tomb.document_id, revision
            )
            events.append(gone)
        conn.execute(
            insert(t.tombstones).values(
                document_id=tomb.document_id,
                source_id=tomb.source_id,
                object_id=tomb.object_id,
                revision=revision,
                sequence=tomb.sequence,
                reason=tomb.reason,
                detected_at=now,
                completed_at=None,
            )
        )
    failures.write(conn, batch.failures, run_id, now)
    failures.resolve_in(conn, batch.resolved, now)
    failures.touch_in(conn, batch.still_failing, run_id)
    if outbox is not None and events:
        outbox.add(conn, events)


def _write_document(
    conn: Connection, write: DocumentWrite, now: datetime, events: list[ChangeEvent] | None
) -> int | None:
    """Insert or update one row; a checked write only onto the row it was decided from.
    Returns the revision floor an inserted row started above (``None``: an update).
    Appends the write's event to ``events`` (None: no outbox)."""
    values = write.values()
    before = _before(conn, write.document_id)
    exists = before is not None
    if write.is_new and write.checked and exists:
        raise _conflict(write.document_id)
    if write.is_new and not exists:
        # A concurrent insert of the same id fails the unique key: a conflict.
        floor = _take_floor(conn, write.document_id)
        values["revision"] += floor
        conn.execute(insert(t.documents).values(created_at=now, updated_at=now, **values))
        if events is not None:
            events.append(_event_of(write, None, values["revision"]))
        return floor
    expect = write.expect if write.checked else None
    _checked(
        conn.execute(
            update(t.documents)
            .where(t.documents.c.document_id == write.document_id, *_at(expect))
            .values(updated_at=now, **values)
        ),
        write.checked,
        write.document_id,
    )
    if events is not None and (before is None or before.revision != write.revision):
        events.append(_event_of(write, before, write.revision))
    return None


def _event_of(write: DocumentWrite, before: Any, revision: int) -> ChangeEvent:
    """The event of a document write that moved the revision: ``deleted`` (a row written
    as deleted), ``access_changed`` (an active row whose ACL alone changed: same
    signature) or ``upserted``."""
    kind = UPSERTED
    if write.state == DELETED:
        kind = DELETED_EVENT
    elif (
        before is not None
        and before.state == ACTIVE
        and before.signature == write.signature
        and tuple(json.loads(before.acl)) != tuple(write.acl)
    ):
        kind = ACCESS_CHANGED
    acl = tuple(write.acl) if kind == ACCESS_CHANGED else None
    return ChangeEvent(kind, write.source_id, write.object_id, write.document_id, revision, acl)


def _take_floor(conn: Connection, document_id: str) -> int:
    """The revision a purged document reached (0 if none); it now lives in its row."""
    floors = t.revision_floors
    floor = conn.execute(
        select(floors.c.revision).where(floors.c.document_id == document_id)
    ).scalar()
    if floor is None:
        return 0
    conn.execute(delete(floors).where(floors.c.document_id == document_id))
    return int(floor)


def _before(conn: Connection, document_id: str) -> Any:
    """The row's revision, state, signature and ACL as it is now (None: no row)."""
    docs = t.documents.c
    return conn.execute(
        select(docs.revision, docs.state, docs.signature, docs.acl).where(
            docs.document_id == document_id
        )
    ).first()
