"""The targeted read: named objects of one source read again, as a sync would read them.

A hint names objects; ``TargetedRead`` asks the connector's ``refetch`` for exactly those
(content *and* ACL), and puts what it yields through the sync's own parts: the version
gates (``BatchBuilder``: an unchanged version is skipped, an older one is ``stale``), one
manifest transaction per batch, fenced by the source's lease (taken here, so a targeted
read never runs beside a sync of the source). Nothing else: no window, no checkpoint,
no run record, no prune. A delete is written only from a ``Deleted`` the connector
yields, i.e. when it confirmed the object is gone; a hint that said "deleted" for an
object that still exists reads it like any change and deletes nothing. Ids outside the
source's scope (``Scoped.in_scope``, or yielding nothing) are dropped and counted.

While an interrupted run of the source waits to be resumed, the batches are labelled
with that run, so what a targeted read saw counts as seen by the run that resumes (its
set-difference prune must not delete an object the targeted read just confirmed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from headwater.connectors.base import Connector, LazyFetching, Refetching, Scoped
from headwater.manifest.content import ContentStore
from headwater.manifest.leases import LEASE_SECONDS, Heartbeat, Lease
from headwater.manifest.records import RunCounts
from headwater.manifest.runs import lease_owner
from headwater.manifest.store import Manifest
from headwater.retry import RetryPolicy, call_with_retry
from headwater.sync.gates import BatchBuilder, SourceIdentity
from headwater.sync.settings import SourceSettings
from headwater.types import Deleted, Failure, SourceDocument

log = logging.getLogger(__name__)

HINT_RUN = "hint"  # the run label of a targeted read's batches (no run record exists)

Item = SourceDocument | Deleted | Failure


@dataclass
class TargetedReport:
    """What one targeted read did."""

    source: str
    requested: int = 0
    dropped: int = 0  # out of the source's scope
    counts: RunCounts = field(default_factory=RunCounts)
    fetched: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "source": self.source,
            "requested": self.requested,
            "dropped": self.dropped,
            "counts": self.counts.as_dict(),
            "fetched": self.fetched,
        }

    @property
    def changed_anything(self) -> bool:
        """Whether new revisions wait for the indexer."""
        return bool(self.counts.new + self.counts.changed + self.counts.deleted)


def _parts(items: list[Item]) -> Iterator[list[Item]]:
    """``items`` split so no object appears twice in one part."""
    part: list[Item] = []
    ids: set[str] = set()
    for item in items:
        if item.object_id in ids:
            yield part
            part, ids = [], set()
        part.append(item)
        ids.add(item.object_id)
    if part:
        yield part


class TargetedRead:
    """Reads named objects of one source through the sync's gates, under its lease."""

    def __init__(
        self,
        manifest: Manifest,
        content_store: ContentStore,
        source: SourceIdentity,
        settings: SourceSettings,
        connector: Connector,
        fetch_policy: RetryPolicy | None = None,
    ) -> None:
        if not isinstance(connector, Refetching):
            raise TypeError(f"{type(connector).__name__} has no refetch(object_ids)")
        self.manifest = manifest
        self.content_store = content_store
        self.source = source
        self.settings = settings
        self.connector: Refetching = connector
        self.policy = fetch_policy or RetryPolicy()

    def run(self, object_ids: Sequence[str], lease_seconds: int = LEASE_SECONDS) -> TargetedReport:
        """Read ``object_ids`` again and commit what changed; FatalError if leased."""
        sid = self.source.source_id
        report = TargetedReport(sid)
        ids = list(dict.fromkeys(object_ids))
        report.requested = len(ids)
        if isinstance(self.connector, Scoped):
            wanted = [i for i in ids if self.connector.in_scope(i)]
        else:
            wanted = ids
        self.manifest.ensure_source(sid, self.source.source_type)
        leases = self.manifest.runs.leases
        lease = leases.acquire(sid, lease_owner(), lease_seconds)
        heartbeat = Heartbeat(leases, lease).start()
        try:
            interrupted = self.manifest.runs.interrupted(sid)
            label = interrupted.run_id if interrupted is not None else HINT_RUN
            answered: set[str] = set()
            pending: list[Item] = []
            for item in self.connector.refetch(wanted) if wanted else iter(()):
                answered.add(item.object_id)
                pending.append(item)
                if len(pending) >= self.settings.batch_size:
                    self._commit(label, pending, report, heartbeat, lease)
                    pending = []
            self._commit(label, pending, report, heartbeat, lease)
            report.dropped = len([i for i in ids if i not in answered])
        finally:
            heartbeat.stop()
            leases.release(lease)
        log.info("targeted read of %s: %s", sid, report.as_dict())
        return report

    def _commit(
        self,
        label: str,
        items: list[Item],
        report: TargetedReport,
        heartbeat: Heartbeat,
        lease: Lease,
    ) -> None:
        if not items:
            return
        heartbeat.check()
        for part in _parts(items):
            builder = self._builder(label, part, report.counts)
            for item in part:
                if isinstance(item, SourceDocument):
                    builder.add_document(item)
                elif isinstance(item, Deleted):
                    builder.add_deleted(item)
                else:
                    builder.add_failure(item)
            report.fetched += builder.fetched
            self.manifest.commit_batch(label, builder.commit, lease=lease)

    def _builder(self, label: str, part: list[Item], counts: RunCounts) -> BatchBuilder:
        ids = [i.object_id for i in part]
        existing = self.manifest.documents_by_object_ids(self.source.source_id, ids)
        deleted_ids = [r.document_id for r in existing.values() if r.state != "active"]
        tombs = self.manifest.tombstone_sequences(deleted_ids) if deleted_ids else {}
        dead = self.manifest.failures.dead_source_versions(
            [self.source.document_id(o) for o in ids], self.source.source_id
        )
        fetch: Callable[[str], bytes] | None = None
        if isinstance(self.connector, LazyFetching):
            lazy, policy = self.connector, self.policy

            def fetch(ref: str) -> bytes:
                return call_with_retry(lambda: lazy.fetch(ref), policy)

        return BatchBuilder(
            source=self.source,
            run_id=label,
            existing=existing,
            tombstone_sequences=tombs,
            dead_versions=dead,
            content_store=self.content_store,
            fetch=fetch,
            counts=counts,
        )
