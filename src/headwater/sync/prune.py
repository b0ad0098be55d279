"""Deletes by set difference (invariant 9), streamed.

A prune never holds its candidate list: one COUNT query (plus one streamed pass when the
connector can say what the config now excludes) decides against the safety fraction, then
keyset pages of ``PRUNE_BATCH`` documents (by document_id) are tombstoned, one
transaction per page. A dry run lists only the first ``DRY_RUN_LISTED`` object ids.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Protocol

from headwater.clock import utcnow
from headwater.connectors.base import Connector, Enumerating
from headwater.errors import Cancelled, LeaseLost, ListingCapped
from headwater.manifest.content import ContentStore
from headwater.manifest.leases import Lease
from headwater.manifest.records import BatchCommit, RunCounts
from headwater.manifest.store import Manifest
from headwater.sync.decisions import InferredDeletes, SourceIdentity
from headwater.sync.gates import BatchBuilder
from headwater.sync.report import PruneReport, PruneResult
from headwater.sync.settings import SourceSettings
from headwater.types import COUNT_EVERY, CountProgress

log = logging.getLogger(__name__)

PRUNE_BATCH = 500  # tombstones per transaction when pruning
DRY_RUN_LISTED = 1000  # object ids a dry-run prune lists
EXCLUDED_BY_CONFIG = "excluded_by_config"  # a deliberate change of scope: never blocked


class PruneOptions(Protocol):
    """What a prune needs of the run's options (``SyncOptions`` has both)."""

    @property
    def force_prune(self) -> bool:
        """Whether to prune past the safety fraction."""

    @property
    def on_batch(self) -> Callable[[], None] | None:
        """Called after each committed batch of deletes, if set."""


class ReadPruneOptions(PruneOptions, Protocol):
    """What a prune after a read needs of the run's options (``SyncOptions`` has it all)."""

    @property
    def prune(self) -> bool:
        """Whether to enumerate for deletes after a read that lists only changes."""

    @property
    def cancel(self) -> threading.Event:
        """Set to stop the enumeration."""


class _Forced:
    def __init__(self, force_prune: bool) -> None:
        self.force_prune = force_prune
        self.on_batch: Callable[[], None] | None = None


def enumerate_objects(
    connector: Enumerating,
    check_lease: Callable[[], None] = lambda: None,
    *,
    progress: CountProgress | None = None,
    name: str = "prune",
    cancel: threading.Event | None = None,
) -> Iterator[str]:
    """The connector's enumeration, checking the run's lease at every object (a lost lease
    stops a long enumeration at once) and counting objects to ``progress``; a set
    ``cancel`` (SIGTERM, Ctrl-C) stops it with ``Cancelled``: a partial listing deletes
    nothing."""
    count = 0
    for object_id in connector.enumerate():
        check_lease()
        if cancel is not None and cancel.is_set():
            raise Cancelled("cancelled while enumerating for deletes; nothing was deleted")
        count += 1
        if progress is not None and count % COUNT_EVERY == 0:
            progress(name, count, False)
        yield object_id
    if progress is not None:
        progress(name, count, True)


class Pruner:
    """Prunes one source: compare the manifest with a complete read or enumeration."""

    def __init__(
        self,
        manifest: Manifest,
        content_store: ContentStore,
        source: SourceIdentity,
        settings: SourceSettings,
        connector: Connector,
        *,
        lease_of: Callable[[], Lease | None] = lambda: None,
        check_lease: Callable[[], None] = lambda: None,
    ) -> None:
        self.manifest = manifest
        self.content_store = content_store
        self.source = source
        self.settings = settings
        self.connector = connector
        self._lease_of = lease_of  # the run's fenced lease: every prune commit checks it
        self._check_lease = check_lease

    def prune_only(
        self, *, dry_run: bool = False, force: bool = False, progress: CountProgress | None = None
    ) -> PruneResult:
        """``headwater prune``: enumerate, compare, and delete (or only report)."""
        source_id = self.source.source_id
        if not isinstance(self.connector, Enumerating):
            return PruneResult(source_id, PruneReport(status="unsupported"))
        self.manifest.ensure_source(source_id, self.source.source_type)
        run_id = str(uuid.uuid4())
        try:
            self.manifest.record_enumeration(
                run_id,
                enumerate_objects(
                    self.connector,
                    self._check_lease,
                    progress=progress,
                    name=f"prune {source_id}",
                ),
            )
            if dry_run:
                report = self._assess(run_id, True, force)
                first = self.manifest.prune_candidates(
                    source_id, run_id, by_enumeration=True, limit=DRY_RUN_LISTED
                )
                return PruneResult(
                    source_id,
                    report if report.status == "blocked" else replace(report, status="dry_run"),
                    tuple(c.object_id for c in first),
                )
            result = self.apply(run_id, True, RunCounts(), _Forced(force))
            return PruneResult(source_id, result)
        finally:
            self.manifest.clear_run_lists(run_id)

    def _excluded(self, object_id: str) -> bool:
        """True when the config now excludes the object (a deliberate change)."""
        in_scope = getattr(self.connector, "in_scope", None)
        return callable(in_scope) and not in_scope(object_id)

    def _assess(self, run_id: str, by_enumeration: bool, force: bool) -> PruneReport:
        """Count the candidates (never listing them all) and apply the safety fraction.

        Documents the config now excludes are a deliberate change, not a broken listing:
        only the rest count against the fraction. Status ``blocked`` or ``ready``.
        """
        sid = self.source.source_id
        active = self.manifest.count_documents(sid)
        total = self.manifest.count_prune_candidates(sid, run_id, by_enumeration=by_enumeration)
        excluded = 0
        if total and callable(getattr(self.connector, "in_scope", None)):
            for page in self.manifest.iter_prune_candidates(
                sid, run_id, by_enumeration=by_enumeration
            ):
                excluded += sum(1 for r in page if self._excluded(r.object_id))
        missing = total - excluded
        fraction = missing / max(active, 1)
        limit = self.settings.prune_max_fraction
        blocked = fraction > limit and missing > 1 and not force
        return PruneReport(
            status="blocked" if blocked else "ready",
            candidates=missing if blocked else total,
            active=active,
            fraction=fraction,
            max_fraction=limit,
        )

    def apply(
        self, run_id: str, by_enumeration: bool, counts: RunCounts, options: PruneOptions
    ) -> PruneReport:
        """Delete what the complete read or enumeration did not see, within the safety fraction."""
        sid = self.source.source_id
        self.manifest.runs.set_last_prune_at(sid, utcnow())
        report = self._assess(run_id, by_enumeration, options.force_prune)
        if report.status == "blocked":
            log.warning(
                "prune of %s blocked: %d of %d documents (%.0f%% > %.0f%%)",
                sid,
                report.candidates,
                report.active,
                report.fraction * 100,
                report.max_fraction * 100,
            )
            return report
        if not report.candidates:
            return PruneReport(status="done", candidates=0, active=report.active)
        builder = BatchBuilder(
            source=self.source,
            run_id=run_id,
            existing={},
            tombstone_sequences={},
            dead_versions={},
            content_store=self.content_store,
            fetch=None,
            counts=counts,
        )
        deleted = 0
        # Keyset pages of PRUNE_BATCH: each page is tombstoned and committed before the next
        # is read, so memory holds one page, never the whole candidate list.
        for page in self.manifest.iter_prune_candidates(
            sid, run_id, by_enumeration=by_enumeration, page=PRUNE_BATCH
        ):
            builder.commit = BatchCommit()
            for record in page:
                reason = EXCLUDED_BY_CONFIG if self._excluded(record.object_id) else "pruned"
                builder.tombstone(record, reason)
            self.manifest.commit_batch(run_id, builder.commit, lease=self._lease_of())
            deleted += len(page)
            if options.on_batch:
                options.on_batch()
        return replace(report, status="done", deleted=deleted)

    def after_read(
        self, run_id: str, counts: RunCounts, options: ReadPruneOptions
    ) -> PruneReport | None:
        """Prune after a complete read: by its listing, or by enumeration when asked."""
        caps = self.connector.capabilities
        if caps.full_listing:
            self.manifest.failures.resolve_vanished(self.source.source_id, run_id)
            self.manifest.collect_unseen(self.source.source_id, run_id)
            return self.apply(run_id, False, counts, options)
        if not isinstance(self.connector, Enumerating):
            return PruneReport(status="unsupported")
        if options.prune:
            try:
                return self.by_enumeration(run_id, counts, options)
            except (LeaseLost, Cancelled):
                raise
            except ListingCapped as exc:  # incomplete as configured: no deletes, no failure
                log.info(
                    "enumeration of %s capped; nothing deleted: %s", self.source.source_id, exc
                )
                return PruneReport(status="capped", error=str(exc))
            except Exception as exc:  # a partial enumeration deletes nothing
                log.warning(
                    "enumeration of %s failed; nothing deleted: %s", self.source.source_id, exc
                )
                counts.failed += 1
                return PruneReport(
                    status="enumeration_failed", error=f"{type(exc).__name__}: {exc}"
                )
        return None

    def by_enumeration(
        self, run_id: str, counts: RunCounts, options: ReadPruneOptions
    ) -> PruneReport:
        """Prune by the connector's list of every object, when it can enumerate."""
        if not isinstance(self.connector, Enumerating):
            return PruneReport(status="unsupported")
        listed = self.manifest.record_enumeration(
            run_id, enumerate_objects(self.connector, self._check_lease, cancel=options.cancel)
        )
        log.info("enumerated %d objects of %s", listed, self.source.source_id)
        return self.apply(run_id, True, counts, options)


def inferred_blocked_report(source_id: str, inferred: InferredDeletes) -> PruneReport:
    """The prune report of a run whose inferred deletes went past the safety fraction."""
    wanted = inferred.applied + inferred.blocked
    log.warning(
        "%s: %d of %d inferred deletes (404/410) not applied: past the safety fraction "
        "(%d inferred earlier, within the tombstone retention)",
        source_id,
        inferred.blocked,
        wanted,
        inferred.held,
    )
    earlier = f" ({inferred.held} more were applied by earlier runs)" if inferred.held else ""
    return PruneReport(
        status="blocked",
        candidates=wanted,
        active=inferred.active,
        fraction=(inferred.held + wanted) / max(inferred.base, 1),
        max_fraction=inferred.max_fraction,
        deleted=inferred.applied,
        error=(
            f"{inferred.blocked} inferred deletes (404/410) were not applied: past "
            f"prune_max_fraction of the source{earlier}; if the pages are really gone, "
            "`headwater sync --force` applies them"
        ),
    )
