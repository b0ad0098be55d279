"""The status report: each source's counts, schedule and last run, the indexes' pending
work, the dead-letter queue, the executor and the event stream.

``status_report`` builds it from the parts it reads (the manifest, plain lists of the
configured sources and indexes, schedule and executor state as data), never from a
Workspace; ``headwater status --json`` prints ``as_dict()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select

from headwater.clock import as_utc, utcnow
from headwater.jsonview import JsonView
from headwater.manifest import schema as t
from headwater.manifest.hints import HintSourceState
from headwater.manifest.store import Manifest
from headwater.manifest.subscriptions import SubscriptionState
from headwater.ratelimit import Throttled
from headwater.sync.report import RunReport


@dataclass(frozen=True)
class IndexInfo:
    """One configured index as status shows it."""

    name: str
    type: str
    index_version: str  # the config's
    live_key: str = ""  # the live generation's name in the applied state ("" = name)
    live_version: str = ""  # the version the live generation is kept at ("" = index_version)


@dataclass(frozen=True, eq=False)
class LeaseHolder(JsonView):
    """The process holding a source's lease, and when the lease expires unrenewed."""

    owner: str
    expires_at: str | None

    def as_dict(self) -> dict[str, Any]:
        """The JSON the command prints."""
        return {"owner": self.owner, "expires_at": self.expires_at}


@dataclass(frozen=True, eq=False)
class SourceSchedule(JsonView):
    """A configured source's scheduling fields in ``status``."""

    paused: bool
    next_due_at: str | None
    backoff_until: str | None
    lease: LeaseHolder | None = None  # None: no run holds the source now

    def as_dict(self) -> dict[str, Any]:
        """The JSON the command prints."""
        return {
            "paused": self.paused,
            "next_due_at": self.next_due_at,
            "backoff_until": self.backoff_until,
            "lease": None if self.lease is None else self.lease.as_dict(),
        }


@dataclass(frozen=True, eq=False)
class EventsState(JsonView):
    """``[events]``: where change events go and how many wait in the outbox."""

    type: str
    outbox_depth: int
    last_error: str | None = None  # why this process's last drain stopped early

    def as_dict(self) -> dict[str, Any]:
        """``{"type", "outbox_depth", "last_error"}``."""
        return {"type": self.type, "outbox_depth": self.outbox_depth, "last_error": self.last_error}


@dataclass(frozen=True, eq=False)
class ExecutorState(JsonView):
    """Where write work runs; for Celery, what runs, waits and is claimed now."""

    type: str = "local"
    running: Mapping[str, str] | None = None  # source -> lease owner; None: not observed
    queued: Mapping[str, str] = field(default_factory=dict)  # source -> task id
    index_claims: Mapping[str, int] = field(default_factory=dict)  # owner -> documents
    checked_at: str | None = None
    queues: Mapping[str, int | None] | None = None  # queue -> messages waiting
    queues_error: str | None = None  # why the broker could not be asked

    def as_dict(self) -> dict[str, Any]:
        """The JSON the command prints (``{"type": "local"}`` when nothing is observed)."""
        if self.running is None:
            return {"type": self.type}
        out: dict[str, Any] = {
            "type": self.type,
            "running": dict(self.running),
            "queued": dict(self.queued),
            "index_claims": dict(self.index_claims),
            "checked_at": self.checked_at,
        }
        if self.queues_error is not None:
            out["queues"] = {"error": self.queues_error}
        elif self.queues is not None:
            out["queues"] = dict(self.queues)
        return out


@dataclass(frozen=True, eq=False)
class SourceStatus(JsonView):
    """One source in ``status``: its documents, open failures, last run and schedule."""

    id: str
    type: str
    documents: int
    deleted: int
    failures_open: int
    last_run: RunReport | None
    configured: bool = True
    schedule: SourceSchedule | None = None  # None: not planned (unconfigured)
    hints: HintSourceState | None = None  # None: no hint ever came for it
    # the end of the block a 429 put on the source's credential (None: not throttled)
    throttled_until: datetime | None = None
    # vendor subscriptions the scheduler keeps alive (a source with notification_url)
    subscriptions: tuple[SubscriptionState, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The JSON the command prints."""
        row: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "documents": self.documents,
            "deleted": self.deleted,
            "failures_open": self.failures_open,
            "last_run": self.last_run.as_dict() if self.last_run else None,
        }
        if self.schedule is not None:
            row.update(self.schedule.as_dict())
        row["hints"] = self.hints.as_dict() if self.hints is not None else None
        row["configured"] = self.configured
        until = self.throttled_until
        row["throttled_until"] = until.isoformat() if until is not None else None
        if self.subscriptions:
            row["subscriptions"] = [s.as_dict() for s in self.subscriptions]
        return row


@dataclass(frozen=True, eq=False)
class IndexStatus(JsonView):
    """One index in ``status``: its type, the config's version, the version of the live
    generation (what searches read now, which a rebuild switched in, perhaps from another
    process) and its pending work."""

    type: str
    index_version: str
    pending: int
    live_version: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The JSON the command prints."""
        return {
            "type": self.type,
            "index_version": self.index_version,
            "live_version": self.live_version or self.index_version,
            "pending": self.pending,
        }


@dataclass(frozen=True, eq=False)
class DlqStatus(JsonView):
    """The dead-letter queue in ``status``."""

    depth: int
    oldest_age_s: float | None
    failed_deletes: int

    def as_dict(self) -> dict[str, Any]:
        """The JSON the command prints."""
        return {
            "depth": self.depth,
            "oldest_age_s": self.oldest_age_s,
            "failed_deletes": self.failed_deletes,
        }


@dataclass(frozen=True, eq=False)
class StatusReport(JsonView):
    """Sources (configured, then unconfigured ones the manifest still holds), versions,
    indexes with their pending work, and the dead-letter queue."""

    sources: Sequence[SourceStatus]
    pipeline_version: str
    content_version: str
    indexes: Mapping[str, IndexStatus]
    dlq: DlqStatus
    executor: ExecutorState = field(default_factory=ExecutorState)
    events: EventsState | None = None  # None: no [events] table

    def as_dict(self) -> dict[str, Any]:
        """The JSON the command prints."""
        return {
            "sources": [s.as_dict() for s in self.sources],
            "executor": self.executor.as_dict(),
            "pipeline_version": self.pipeline_version,
            "content_version": self.content_version,
            "indexes": {name: info.as_dict() for name, info in self.indexes.items()},
            "dlq": self.dlq.as_dict(),
            "events": None if self.events is None else self.events.as_dict(),
        }


def _source_row(
    manifest: Manifest,
    source_id: str,
    source_type: str,
    *,
    configured: bool,
    schedule: SourceSchedule | None = None,
    hints: HintSourceState | None = None,
    throttled_until: datetime | None = None,
    subscriptions: Sequence[SubscriptionState] = (),
    docs: Mapping[tuple[str, str, str], int] | None = None,
) -> SourceStatus:
    """``docs``: the maintained document counts, read once for every row (None: read)."""
    record = manifest.runs.latest(source_id)
    if docs is None:
        docs = manifest.index_state.counts.totals("docs")
    return SourceStatus(
        id=source_id,
        type=source_type,
        documents=docs.get(("docs", source_id, "active"), 0),
        deleted=docs.get(("docs", source_id, "deleted"), 0),
        failures_open=_count(manifest.failures.counts(source_id)["open"]),
        last_run=RunReport.from_record(record, source_type) if record else None,
        configured=configured,
        schedule=schedule,
        hints=hints,
        throttled_until=throttled_until,
        subscriptions=tuple(subscriptions),
    )


def _count(value: object) -> int:
    assert isinstance(value, int)  # counts() gives ints for its count keys
    return value


def known_sources(manifest: Manifest) -> dict[str, str]:
    """Every source the manifest remembers (registered, or holding active documents),
    mapped to its type ("" when only documents name it): the sources with documents come
    from the maintained counts, not from a walk of the documents table."""
    found = dict.fromkeys(manifest.index_state.counts.sources_with_active(), "")
    with manifest.engine.connect() as conn:
        found.update(
            {r[0]: r[1] for r in conn.execute(select(t.sources.c.source_id, t.sources.c.type))}
        )
    return found


def unconfigured_sources(
    manifest: Manifest,
    configured: set[str],
    docs: Mapping[tuple[str, str, str], int] | None = None,
) -> list[SourceStatus]:
    """Sources the manifest still holds but the config no longer names (never searched;
    `headwater source remove ID` deletes them)."""
    return [
        _source_row(manifest, source_id, source_type, configured=False, docs=docs)
        for source_id, source_type in sorted(known_sources(manifest).items())
        if source_id not in configured
    ]


def status_report(
    manifest: Manifest,
    sources: Sequence[tuple[str, str]],
    schedule: Mapping[str, SourceSchedule],
    indexes: Sequence[IndexInfo],
    *,
    pipeline_version: str,
    content_version: str,
    executor: ExecutorState | None = None,
    events: EventsState | None = None,
    throttled: Mapping[str, Throttled] | None = None,
) -> StatusReport:
    """``sources`` are the configured (id, type) pairs, ``schedule`` their schedule
    fields by id; ``throttled`` the blocked sources of the governor's store (default: the
    manifest's)."""
    hints = manifest.hints.states()
    if throttled is None:
        throttled = manifest.rates.throttled()
    kept = manifest.subscriptions.states()
    docs = manifest.index_state.counts.totals("docs")  # one read for every source's counts
    rows = [
        _source_row(
            manifest,
            source_id,
            source_type,
            configured=True,
            schedule=schedule.get(source_id),
            hints=hints.get(source_id),
            throttled_until=throttled[source_id].until if source_id in throttled else None,
            subscriptions=[k for k in kept if k.source_id == source_id],
            docs=docs,
        )
        for source_id, source_type in sources
    ]
    rows.extend(unconfigured_sources(manifest, {source_id for source_id, _ in sources}, docs))
    totals = manifest.failures.counts()
    oldest = totals["oldest"]
    age = None
    if oldest is not None:
        age = round((utcnow() - as_utc(oldest)).total_seconds(), 1)  # type: ignore[arg-type]
    return StatusReport(
        sources=rows,
        pipeline_version=pipeline_version,
        content_version=content_version,
        indexes={
            i.name: IndexStatus(
                i.type,
                i.index_version,
                manifest.index_state.pending_count(
                    i.live_key or i.name, i.live_version or i.index_version
                ),
                i.live_version or i.index_version,
            )
            for i in indexes
        },
        dlq=DlqStatus(_count(totals["dlq"]), age, _count(totals["deletes"])),
        executor=executor or ExecutorState(),
        events=events,
    )
