"""Full-replace push sessions: "this is the whole set now, delete the rest".

A sender opens a session of a push source (one open per source), sends its documents in
pages (each page goes through ``sync.push`` exactly like a batch, versions and all, and
its object ids are added to the session's sent set in the manifest first), then completes
it: the source's active documents the session did not send are deleted, each with a
tombstone at the version it held (reason ``replaced_by_session``). Like a prune, the
complete stops and reports when it would delete more than the source's
``prune_max_fraction`` (unless forced); the session then stays open. An abort deletes
nothing; a session nothing touched for ``[api] push_session_timeout`` expires, deleting
nothing. All state is in the manifest, so any process (``serve --workers N``) may take
any request of a session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from headwater.clock import iso
from headwater.errors import NotFoundError, PushConflict, TransientError
from headwater.manifest.content import ContentStore
from headwater.manifest.push_sessions import (
    ABORTED,
    COMPLETED,
    COMPLETING,
    OPEN,
    SessionRecord,
)
from headwater.manifest.records import BatchCommit, RunCounts
from headwater.manifest.store import Manifest
from headwater.sync.gates import BatchBuilder, SourceIdentity
from headwater.sync.push import PushOp, PushResult, push

REASON = "replaced_by_session"
PAGE_ATTEMPTS = 20
STEP_ATTEMPTS = 20


@dataclass(frozen=True)
class CompleteReport:
    """What ``:complete`` did: ``completed`` (with ``deleted``) or ``blocked`` (nothing
    deleted: ``candidates`` of ``active`` documents, past ``max_fraction``)."""

    session_id: str
    status: str
    candidates: int
    active: int
    fraction: float
    max_fraction: float
    deleted: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "status": self.status,
            "candidates": self.candidates,
            "active": self.active,
            "fraction": round(self.fraction, 6),
            "max_fraction": self.max_fraction,
            "deleted": self.deleted,
        }


def session_dict(record: SessionRecord, idle: timedelta) -> dict[str, Any]:
    """A session as the API answers it."""
    return {
        "session_id": record.session_id,
        "source": record.source_id,
        "state": record.state,
        "opened_at": iso(record.opened_at),
        "touched_at": iso(record.touched_at),
        "expires_at": iso(record.expires_at(idle)),
        "closed_at": iso(record.closed_at),
        "sent": record.sent,
        "deleted": record.deleted,
    }


class PushSessions:
    """The sessions of one push source."""

    def __init__(
        self,
        manifest: Manifest,
        source: SourceIdentity,
        content_store: ContentStore,
        *,
        idle: timedelta,
        max_fraction: float,
    ) -> None:
        self.manifest, self.source, self.content_store = manifest, source, content_store
        self.ledger = manifest.sessions
        self.idle, self.max_fraction = idle, max_fraction

    @property
    def source_id(self) -> str:
        return self.source.source_id

    def open(self) -> SessionRecord:
        """Open a session; ``PushConflict`` (409) naming the open one if there is one."""
        self.manifest.ensure_source(self.source_id, self.source.source_type)
        self.ledger.expire_idle(self.source_id, self.idle)
        opened = self.ledger.open(self.source_id)
        if opened is not None:
            return opened
        live = self.ledger.active(self.source_id)
        which = (
            f"session {live.session_id!r} (opened {iso(live.opened_at)}, {live.state})"
            if live is not None
            else "another session"
        )
        raise PushConflict(
            f"source {self.source_id!r} has an open push session already: {which}; "
            "complete or abort it (POST .../sessions/ID:complete or :abort), or wait until "
            f"it expires after {self.idle} without requests"
        )

    def get(self, session_id: str) -> SessionRecord:
        """The session (expired first if it is idle past the timeout); 404 if unknown."""
        record = self.ledger.get(session_id)
        if record is None or record.source_id != self.source_id:
            raise NotFoundError(
                f"push session {session_id!r} of source {self.source_id!r} does not exist; "
                f"open one with POST /v1/sources/{self.source_id}/sessions"
            )
        if self.ledger.expire_idle(self.source_id, self.idle) == session_id:
            return self.get(session_id)
        return record

    def _require_open(self, record: SessionRecord, action: str) -> None:
        if record.state != OPEN:
            raise PushConflict(
                f"push session {record.session_id!r} is {record.state}, not open, so it cannot "
                f"{action}; open a new session with POST /v1/sources/{self.source_id}/sessions"
            )

    def send(self, session_id: str, ops: Sequence[PushOp]) -> list[PushResult]:
        """Add a page of documents to the session and push them; one result per op."""
        ids = [op.object_id for op in ops]
        self._while_open(
            session_id, "take documents", lambda: self.ledger.record_sent(session_id, ids)
        )
        return push(self.manifest, self.source, self.content_store, ops)

    def abort(self, session_id: str) -> SessionRecord:
        """End the session without deleting anything."""
        self._while_open(
            session_id, "be aborted", lambda: self.ledger.close(session_id, OPEN, ABORTED)
        )
        return self.get(session_id)

    def _while_open(self, session_id: str, action: str, step: Callable[[], bool]) -> None:
        """Run ``step`` (a write conditional on the session being open) until it applies;
        409 once the session is not open. A session another process is completing may
        come back open (its complete was blocked), so a refused step is tried again."""
        for _ in range(STEP_ATTEMPTS):
            self._require_open(self.get(session_id), action)
            if step():
                return
        raise PushConflict(
            f"push session {session_id!r} kept changing state ({STEP_ATTEMPTS} attempts); "
            "another request completes it meanwhile: send this one again"
        )

    def complete(self, session_id: str, *, force: bool = False) -> CompleteReport:
        """Delete the source's documents the session did not send, within the fraction."""
        self._while_open(
            session_id,
            "be completed",
            lambda: self.ledger.transition(session_id, OPEN, COMPLETING),
        )
        try:
            active = self.manifest.count_documents(self.source_id)
            candidates = self.ledger.count_unsent(self.source_id, session_id)
            fraction = candidates / max(active, 1)
            report = CompleteReport(
                session_id, "blocked", candidates, active, fraction, self.max_fraction
            )
            if fraction > self.max_fraction and candidates > 1 and not force:
                self.ledger.transition(session_id, COMPLETING, OPEN)
                return report
            deleted = self._delete_unsent(session_id)
        except BaseException:
            self.ledger.transition(session_id, COMPLETING, OPEN)
            raise
        self.ledger.close(session_id, COMPLETING, COMPLETED, deleted)
        return CompleteReport(
            session_id, "completed", candidates, active, fraction, self.max_fraction, deleted
        )

    def _delete_unsent(self, session_id: str) -> int:
        """Tombstone the unsent documents a page per transaction; a page that lost a race
        with a push of one of its documents is read again."""
        builder = BatchBuilder(
            source=self.source,
            run_id=session_id,
            existing={},
            tombstone_sequences={},
            dead_versions={},
            content_store=self.content_store,
            fetch=None,
            counts=RunCounts(),
        )
        deleted = 0
        for _ in range(PAGE_ATTEMPTS):
            try:
                for page in self.ledger.unsent(self.source_id, session_id):
                    builder.commit = BatchCommit()
                    for doc in page:
                        builder.tombstone(doc, REASON, doc.sequence)
                    self.manifest.commit_batch(session_id, builder.commit)
                    deleted += len(page)
                return deleted
            except TransientError:  # a WriteConflict: a document of the page changed
                continue
        raise TransientError(
            f"documents of {self.source_id!r} kept changing while session {session_id!r} "
            f"completed ({PAGE_ATTEMPTS} attempts); {deleted} were deleted; complete it again"
        )
