"""Writing one ``BatchCommit`` inside the manifest transaction ``Manifest.commit_batch`` opened.

Document rows, tombstones, failures, resolutions and the seen list of one batch land
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
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update

from headwater.clock import utcnow
from headwater.errors import WriteConflict
from headwater.manifest import schema as t
from headwater.manifest.counts import lock_sources
from headwater.manifest.failures import FailureLedger
from headwater.manifest.outbox import ACCESS_CHANGED, UPSERTED, ChangeEvent, Outbox
from headwater.manifest.outbox import DELETED as DELETED_EVENT
from headwater.manifest.records import (
    ACTIVE,
    DELETED,
    BatchCommit,
    DocumentFields,
    DocumentWrite,
    RowVersion,
    TombstoneWrite,
)

CHUNK = 500


def _at(revision: Any, sequence: Any, state: Any) -> list[Any]:
    """The WHERE terms that hold only while a documents row is still at this version
    (values, or bind parameters of an ``executemany``)."""
    docs = t.documents.c
    return [
        docs.revision == revision,
        docs.sequence.is_not_distinct_from(sequence),
        docs.state == state,
    ]


def _at_expected(expect: RowVersion | None) -> list[Any]:
    """``_at`` the row version a write was decided from; no terms for an unchecked one."""
    return [] if expect is None else _at(expect.revision, expect.sequence, expect.state)


def _conflict(document_id: str) -> WriteConflict:
    return WriteConflict(
        f"document {document_id} changed in the manifest after this batch read it; "
        "nothing was written, decide again from the manifest"
    )


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
    floors = _write_documents(conn, batch.writes, now, events)
    # The objects listed unchanged prove their presence as one row of the batch, not a
    # write of each document's row (a no-op writes nothing per object; manifest.prunes).
    # Sorted, as the manifest's (source_id, object_id) index is: the prune's anti-join
    # then meets them nearly in order.
    if batch.seen_objects:
        listed = json.dumps(sorted(batch.seen_objects), ensure_ascii=False)
        conn.execute(insert(t.seen_batches), {"run_id": run_id, "object_ids": listed})
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
    for start in range(0, len(batch.cleared_tombstones), CHUNK):
        part = batch.cleared_tombstones[start : start + CHUNK]
        conn.execute(delete(t.tombstones).where(t.tombstones.c.document_id.in_(part)))
    _write_tombstones(conn, batch.tombstones, floors, now, events)
    failures.write(conn, batch.failures, run_id, now)
    failures.resolve_in(conn, batch.resolved, now)
    failures.touch_in(conn, batch.still_failing, run_id)
    if outbox is not None and events:
        outbox.add(conn, events)


def _write_documents(
    conn: Connection, writes: list[DocumentWrite], now: datetime, events: list[ChangeEvent] | None
) -> dict[str, int]:
    """Insert or update the batch's rows; returns the revision floor each inserted row
    started above. The rows as they are and the floors of purged ids are read in one
    statement per ``CHUNK`` ids, the new rows inserted and the others updated in one
    ``executemany`` each: a statement per document would be most of a push's commit. A
    batch that names one document twice writes its rows one after another, each reading
    what the last wrote."""
    ids = [w.document_id for w in writes]
    floors: dict[str, int] = {}
    if len(set(ids)) != len(ids):
        for write in writes:
            doc_id = write.document_id
            before = _befores(conn, [doc_id]).get(doc_id)
            floor = _take_floors(conn, [doc_id]).get(doc_id, 0) if _inserts(write, before) else 0
            planned = _plan(write, before, floor, now, events)
            if planned.inserts:
                _execute(conn, [planned], [], now)
                floors[doc_id] = floor
            else:
                _execute(conn, [], [planned], now)
        return floors
    befores = _befores(conn, ids)
    inserted = [w.document_id for w in writes if _inserts(w, befores.get(w.document_id))]
    taken = _take_floors(conn, inserted)
    plans = [_plan(w, befores.get(w.document_id), taken.get(w.document_id, 0), now, events)
             for w in writes]  # fmt: skip
    _execute(conn, [p for p in plans if p.inserts], [p for p in plans if not p.inserts], now)
    return {p.document_id: taken.get(p.document_id, 0) for p in plans if p.inserts}


def _write_tombstones(
    conn: Connection,
    tombstones: list[TombstoneWrite],
    floors: dict[str, int],
    now: datetime,
    events: list[ChangeEvent] | None,
) -> None:
    """Mark the rows deleted and replace their tombstones, an ``executemany`` per
    ``CHUNK`` rows (one document named twice: one tombstone after another). The rows
    first: a concurrent delete of one waits on its row's lock, then finds it changed (its
    condition fails) before it touches the tombstone."""
    ids = [tomb.document_id for tomb in tombstones]
    if len(set(ids)) != len(ids):
        for tomb in tombstones:
            _write_tombstones(conn, [tomb], floors, now, events)
        return
    revisions = {tomb.document_id: tomb.revision + floors.get(tomb.document_id, 0)
                 for tomb in tombstones}  # fmt: skip
    for checked in (False, True):
        rows = [tomb for tomb in tombstones if (tomb.expect is not None) == checked]
        for start in range(0, len(rows), CHUNK):
            part = rows[start : start + CHUNK]
            params = [_deleted_params(tomb, revisions, now) for tomb in part]
            result = conn.execute(_delete_of(checked), params)
            if checked and result.rowcount != len(part):
                written = {p["w_id"]: (p["v_revision"], DELETED) for p in params}
                raise _conflict(_moved_on(conn, written))
    for start in range(0, len(ids), CHUNK):
        part_ids = ids[start : start + CHUNK]
        conn.execute(delete(t.tombstones).where(t.tombstones.c.document_id.in_(part_ids)))
    rows_of_tombstones = [
        dict(
            document_id=tomb.document_id,
            source_id=tomb.source_id,
            object_id=tomb.object_id,
            revision=revisions[tomb.document_id],
            sequence=tomb.sequence,
            reason=tomb.reason,
            detected_at=now,
            completed_at=None,
        )
        for tomb in tombstones
    ]  # fmt: skip
    for start in range(0, len(rows_of_tombstones), CHUNK):
        conn.execute(insert(t.tombstones), rows_of_tombstones[start : start + CHUNK])
    if events is not None:
        events.extend(
            ChangeEvent(DELETED_EVENT, tomb.source_id, tomb.object_id, tomb.document_id,
                        revisions[tomb.document_id])
            for tomb in tombstones
        )  # fmt: skip


def _delete_of(checked: bool) -> Any:
    """The UPDATE that marks one documents row deleted, by bind parameters: a tombstone
    without a sequence keeps the row's."""
    docs = t.documents.c
    sequence = func.coalesce(bindparam("v_sequence", type_=docs.sequence.type), docs.sequence)
    return (
        update(t.documents)
        .where(*_row_at(checked))
        .values(state=DELETED, revision=bindparam("v_revision"), sequence=sequence,
                updated_at=bindparam("v_updated_at"))
    )  # fmt: skip


def _deleted_params(
    tomb: TombstoneWrite, revisions: dict[str, int], now: datetime
) -> dict[str, Any]:
    """The bind parameters of ``_delete_of`` for one tombstone."""
    params: dict[str, Any] = {
        "w_id": tomb.document_id,
        "v_revision": revisions[tomb.document_id],
        "v_sequence": tomb.sequence,
        "v_updated_at": now,
    }
    if tomb.expect is not None:
        expect = tomb.expect
        params.update(w_revision=expect.revision, w_sequence=expect.sequence, w_state=expect.state)
    return params


def _inserts(write: DocumentWrite, before: Any) -> bool:
    """Whether ``write`` inserts its row (new, and no row read)."""
    return write.is_new and before is None


@dataclass(frozen=True)
class _Planned:
    """One documents row to insert, or to update (only onto ``expect`` when checked)."""

    document_id: str
    inserts: bool
    row: dict[str, Any]
    expect: RowVersion | None


def _plan(
    write: DocumentWrite, before: Any, floor: int, now: datetime, events: list[ChangeEvent] | None
) -> _Planned:
    """How ``write`` changes its row, read as ``before`` (None: no row): inserted with its
    revision above ``floor`` (the purged id's), or updated; a checked insert of a row
    that exists is a conflict. Appends the write's event to ``events`` (None: no outbox)."""
    values = write.values()
    exists = before is not None
    if write.is_new and write.checked and exists:
        raise _conflict(write.document_id)
    if write.is_new and not exists:
        values["revision"] += floor
        if events is not None:
            events.append(_event_of(write, None, values["revision"]))
        row = {"created_at": now, "updated_at": now, **values}
        return _Planned(write.document_id, True, row, None)
    if events is not None and (before is None or before.revision != write.revision):
        events.append(_event_of(write, before, write.revision))
    expect = write.expect if write.checked else None
    return _Planned(write.document_id, False, values, expect)


def _execute(
    conn: Connection, inserts: list[_Planned], updates: list[_Planned], now: datetime
) -> None:
    """Insert, then update, the planned rows, ``CHUNK`` rows an ``executemany``. A
    concurrent insert of a row inserted here fails the unique key; a checked update
    whose row moved on matches nothing, and the batch is a ``WriteConflict``."""
    for start in range(0, len(inserts), CHUNK):
        conn.execute(insert(t.documents), [p.row for p in inserts[start : start + CHUNK]])
    for checked in (False, True):
        planned = [p for p in updates if (p.expect is not None) == checked]
        for start in range(0, len(planned), CHUNK):
            part = planned[start : start + CHUNK]
            result = conn.execute(_update_of(checked), [_params(p, now) for p in part])
            if checked and result.rowcount != len(part):
                written = {p.document_id: (p.row["revision"], p.row["state"]) for p in part}
                raise _conflict(_moved_on(conn, written))


def _row_at(checked: bool) -> list[Any]:
    """The WHERE terms of an ``executemany`` over documents rows by bind parameters: the
    row ``w_id``, and when ``checked`` only while it is at ``w_revision``, ``w_sequence``
    and ``w_state``."""
    where = [t.documents.c.document_id == bindparam("w_id")]
    if checked:
        where += _at(bindparam("w_revision"), bindparam("w_sequence"), bindparam("w_state"))
    return where


def _update_of(checked: bool) -> Any:
    """The UPDATE of one documents row by bind parameters (``_params``)."""
    columns = [f.name for f in fields(DocumentFields)] + ["updated_at"]
    values: dict[str, Any] = {c: bindparam(f"v_{c}") for c in columns}
    return update(t.documents).where(*_row_at(checked)).values(values)


def _params(planned: _Planned, now: datetime) -> dict[str, Any]:
    """The bind parameters of ``_update_of`` for one planned update."""
    params = {f"v_{name}": value for name, value in planned.row.items()}
    params.update(w_id=planned.document_id, v_updated_at=now)
    if planned.expect is not None:
        expect = planned.expect
        params.update(w_revision=expect.revision, w_sequence=expect.sequence, w_state=expect.state)
    return params


def _moved_on(conn: Connection, written: dict[str, tuple[int, str]]) -> str:
    """The document a checked ``executemany`` did not match, to name in the conflict: the
    first of ``written`` (id: the revision and state written) whose row is not at what
    was written (the first of all if every row is)."""
    now_at = _befores(conn, list(written))
    for document_id, version in written.items():
        row = now_at.get(document_id)
        if row is None or (row.revision, row.state) != version:
            return document_id
    return next(iter(written))


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


def _take_floors(conn: Connection, document_ids: list[str]) -> dict[str, int]:
    """The revisions purged documents of these ids reached (an id never purged: absent);
    they now live in the rows about to be inserted, so their floors are deleted."""
    floors = t.revision_floors
    found: dict[str, int] = {}
    for start in range(0, len(document_ids), CHUNK):
        part = document_ids[start : start + CHUNK]
        query = select(floors.c.document_id, floors.c.revision)
        for doc_id, revision in conn.execute(query.where(floors.c.document_id.in_(part))):
            found[doc_id] = int(revision)
    if found:
        conn.execute(delete(floors).where(floors.c.document_id.in_(sorted(found))))
    return found


def _befores(conn: Connection, document_ids: list[str]) -> dict[str, Any]:
    """Each existing row's revision, state, signature and ACL as it is now, by id."""
    docs = t.documents.c
    rows: dict[str, Any] = {}
    for start in range(0, len(document_ids), CHUNK):
        part = document_ids[start : start + CHUNK]
        query = select(docs.document_id, docs.revision, docs.state, docs.signature, docs.acl)
        rows.update(
            (row.document_id, row) for row in conn.execute(query.where(docs.document_id.in_(part)))
        )
    return rows
