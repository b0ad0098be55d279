"""The sync runner: one run of one source, from window to final checkpoint.

Per run: a fixed window (start = end of the last successful run's window, end = now;
a resumed run reuses its window), batches of items, both version gates, one manifest
transaction per batch, and a checkpoint saved only after that commit (invariant 11).
Transient connector errors retry the run from its last checkpoint; any other exception
the connector raises fails the run. After a complete read or enumeration, documents the
source no longer has are deleted by set difference, within the safety fraction.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from headwater import failpoints
from headwater.clock import as_utc, utcnow
from headwater.connectors.base import Connector, Enumerating, ExpectingTotal, LazyFetching
from headwater.errors import Cancelled, HeadwaterError, LeaseLost, TransientError
from headwater.manifest.content import ContentStore
from headwater.manifest.leases import LEASE_SECONDS, Heartbeat, Lease
from headwater.manifest.records import ACTIVE, RunCounts
from headwater.manifest.runs import (
    CANCELLED,
    COMPLETED_WITH_ERRORS,
    FAILED,
    SUCCEEDED,
    lease_owner,
)
from headwater.manifest.staged import StagedContent
from headwater.manifest.store import Manifest
from headwater.retry import call_with_retry
from headwater.sync.decisions import INFERRED_DELETED, InferredDeletes, SourceIdentity
from headwater.sync.garbage import fewer_collections
from headwater.sync.gates import BatchBuilder
from headwater.sync.held import HeldAsListed
from headwater.sync.known import ManifestVersions
from headwater.sync.phases import COMMIT, FETCH_PARSE, PRUNE, PhaseTimes
from headwater.sync.prune import EXCLUDED_BY_CONFIG, Pruner, inferred_blocked_report
from headwater.sync.report import PruneReport, PruneResult, RunReport, record_unstarted_run
from headwater.sync.settings import (
    BatchLimit,
    Progress,
    SourceSettings,
    SyncOptions,
    distinct_parts,
)
from headwater.sync.storable import storable_item
from headwater.types import (
    Checkpoint,
    CountProgress,
    Deleted,
    Failure,
    SourceDocument,
    SourceItem,
    Window,
)

log = logging.getLogger(__name__)

__all__ = ["Progress", "SyncOptions", "SyncRunner", "record_unstarted_run"]


class SyncRunner:
    """Runs one source: reads it in batches through the gates and commits each batch."""

    def __init__(
        self,
        manifest: Manifest,
        content_store: ContentStore,
        source: SourceIdentity,
        settings: SourceSettings,
        connector: Connector,
    ) -> None:
        self.manifest = manifest
        self.content_store = content_store
        self.source = source
        self.settings = settings
        self.connector = connector
        self.fetched = 0
        self.lease: Lease | None = None
        self._heartbeat: Heartbeat | None = None
        self._full = False
        self._known: ManifestVersions | None = None  # the reading run's, for its flushes
        self._held: HeldAsListed | None = None  # gate 1 for a batch at once (not on --full)
        self._started = utcnow()
        self.phases = PhaseTimes()
        self.pruner = Pruner(
            manifest,
            content_store,
            source,
            settings,
            connector,
            lease_of=lambda: self.lease,
            check_lease=self._check_lease,
        )
        self._inferred = InferredDeletes(active=0, max_fraction=settings.prune_max_fraction)

    def run(self, options: SyncOptions) -> RunReport:
        """One run under the source's lease; ``LeaseLost`` if another process took it over."""
        self.manifest.ensure_source(self.source.source_id, self.source.source_type)
        with fewer_collections(), self._holding_lease(options.lease_seconds) as lease:
            return self._run(options, lease.owner)

    @contextmanager
    def _holding_lease(self, seconds: int) -> Iterator[Lease]:
        """Take the lease, renew it from a heartbeat thread, release it at the end.

        Every commit of the run passes ``self.lease`` and fences it in its transaction.
        """
        leases = self.manifest.runs.leases
        lease = self.lease = leases.acquire(self.source.source_id, lease_owner(), seconds)
        heartbeat = self._heartbeat = Heartbeat(leases, lease).start()
        try:
            yield lease
        finally:
            heartbeat.stop()
            leases.release(lease)
            self.lease, self._heartbeat = None, None

    def _check_lease(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.check()

    def _window_and_run(self, full: bool) -> tuple[str, Window, RunCounts, bool]:
        runs = self.manifest.runs
        sid = self.source.source_id
        interrupted = runs.interrupted(sid)
        if interrupted is not None and full:
            runs.finish(
                interrupted.run_id,
                CANCELLED,
                interrupted.counts,
                interrupted.duration_s,
                error="superseded by a full sync (`headwater sync --full`)",
            )
            self.manifest.clear_run_lists(interrupted.run_id)
        elif interrupted is not None:
            runs.mark_resumed(interrupted.run_id)
            window = Window(
                as_utc(interrupted.window_start) if interrupted.window_start else None,
                as_utc(interrupted.window_end),
            )
            log.warning("resuming interrupted run %s of %s", interrupted.run_id, sid)
            return interrupted.run_id, window, interrupted.counts, True
        last = None if full else runs.last_successful(sid)
        window = Window(as_utc(last.window_end) if last else None, utcnow())
        return runs.start(sid, window.start, window.end), window, RunCounts(), False

    def _run(self, options: SyncOptions, owner: str) -> RunReport:
        started = time.monotonic()
        run_id, window, counts, resumed = self._window_and_run(options.full)
        runs, sid = self.manifest.runs, self.source.source_id
        log.info("run %s of %s started, window %s to %s", run_id, sid, window.start, window.end)
        self._full = options.full
        self._started = utcnow()  # "modified_before = '30d'" is measured from here
        self.phases = PhaseTimes()
        self._inferred = InferredDeletes(
            active=self.manifest.count_documents(sid),
            max_fraction=self.settings.prune_max_fraction,
            force=options.force_prune,
            held=self.manifest.count_tombstones(sid, INFERRED_DELETED),
        )
        status, error, final = SUCCEEDED, None, None
        completed = False
        for attempt in range(1, options.run_attempts + 1):
            cursor = runs.checkpoint(run_id) or (None if options.full else runs.next_cursor(sid))
            start_checkpoint = Checkpoint(cursor) if cursor is not None else None
            try:
                final = self._consume(run_id, window, start_checkpoint, counts, options, owner)
                completed = True
                break
            except Cancelled:
                status = CANCELLED
                break
            except LeaseLost:
                raise  # another process owns the run now: record nothing, not even "failed"
            except TransientError as exc:
                error = f"{type(exc).__name__}: {exc}"
                if attempt == options.run_attempts:
                    status = FAILED
                    break
                log.warning(
                    "run %s hit a transient error (%s); retrying from checkpoint", run_id, exc
                )
                if options.cancel.wait(min(30.0, options.fetch_policy.initial_wait * 2**attempt)):
                    status = CANCELLED  # stopped while waiting: no further attempt
                    break
            except HeadwaterError as exc:
                status, error = FAILED, f"{type(exc).__name__}: {exc}"
                break
            except Exception as exc:  # the connector itself raised: the run fails
                log.debug("connector raised", exc_info=True)
                status, error = FAILED, f"{type(exc).__name__}: {exc}"
                break
        prune: PruneReport | None = None
        if completed:
            try:
                with self.phases.measure(PRUNE):
                    prune = self.pruner.after_read(run_id, counts, options)
            except Cancelled:  # stopped while enumerating for deletes: none decided, redo
                completed, status = False, CANCELLED
        if completed:
            error = None
            if self._inferred.blocked:
                prune = inferred_blocked_report(self.source.source_id, self._inferred)
            if counts.failed or self._inferred.blocked:
                status = COMPLETED_WITH_ERRORS
            runs.set_next_cursor(sid, final.cursor if final is not None else None, lease=self.lease)
        duration = time.monotonic() - started
        runs.finish(
            run_id,
            status,
            counts,
            duration,
            error=error,
            prune=prune.as_dict() if prune else None,
            phases=self.phases.as_dict(),
            lease=self.lease,
        )
        self.manifest.clear_run_lists(run_id)
        record = runs.get(run_id)
        assert record is not None
        return RunReport.from_record(
            record, self.source.source_type, resumed=resumed, fetched=self.fetched
        )

    def _consume(
        self,
        run_id: str,
        window: Window,
        checkpoint: Checkpoint | None,
        counts: RunCounts,
        options: SyncOptions,
        owner: str,
    ) -> Checkpoint | None:
        source = self.source
        known = self._known = ManifestVersions(
            self.manifest, source.source_id, source.pipeline_version, full=self._full
        )
        rules, started = self.settings.rules, self._started
        self._held = None if self._full else HeldAsListed(self.manifest, source, rules, started)
        stream = self.connector.read(window, checkpoint, known)
        pending: list[SourceItem] = []
        last_checkpoint: Checkpoint | None = None
        batch = BatchLimit(self.settings.batch_size)
        # The read phase is the time between flushes (the connector's, and taking its
        # items), measured per batch rather than around each of a million items.
        reading = self.phases.reading()
        with reading:
            while True:
                try:
                    item = next(stream)
                except StopIteration as stop:
                    final: Checkpoint | None = stop.value
                    break
                if isinstance(item, Checkpoint):
                    last_checkpoint = item
                    if len(pending) >= batch.limit:
                        with reading.paused():
                            quiet = self._flush(
                                run_id, pending, last_checkpoint, counts, options, owner
                            )
                        batch.after(quiet)
                        pending, last_checkpoint = [], None
                    continue
                storable = storable_item(item)
                if storable is not None:
                    pending.append(storable)
                if len(pending) >= batch.limit * 4:
                    # A connector that rarely checkpoints still commits in bounded batches.
                    with reading.paused():
                        quiet = self._flush(run_id, pending, None, counts, options, owner)
                    batch.after(quiet)
                    pending = []
        self._flush(run_id, pending, last_checkpoint, counts, options, owner)
        self._known = None
        return final

    def _flush(
        self,
        run_id: str,
        items: list[SourceItem],
        checkpoint: Checkpoint | None,
        counts: RunCounts,
        options: SyncOptions,
        owner: str,
    ) -> bool:
        """Commit ``items`` (and then ``checkpoint``); True when every one was unchanged."""
        if options.cancel.is_set():
            raise Cancelled("cancelled by the user; the run stopped after its last batch")
        self._check_lease()
        before = counts.new + counts.changed + counts.deleted
        quiet_before = before + counts.failed + counts.stale
        ruled = bool(self.settings.rules.rules)  # no rules: nothing to ask per document
        for part in distinct_parts(items):
            with self.phases.measure(FETCH_PARSE):
                staged = StagedContent(self.content_store)
                held, part = self._held.split(part, self._known) if self._held else ([], part)
                builder = self._builder(run_id, part, counts, options, staged)
                builder.add_held(held)
                for item in part:
                    if isinstance(item, SourceDocument):
                        if not (ruled and self._ruled_out(item, builder)):
                            builder.add_document(item)
                    elif isinstance(item, Deleted):
                        builder.add_deleted(item)
                    elif isinstance(item, Failure):
                        builder.add_failure(item)
                staged.flush()  # every text the commit points at is written first
            self.fetched += builder.fetched
            failpoints.failpoint(failpoints.AFTER_FETCH_BEFORE_COMMIT)
            with self.phases.measure(COMMIT):
                self.manifest.commit_batch(run_id, builder.commit, lease=self.lease)
            failpoints.failpoint(failpoints.AFTER_MANIFEST_COMMIT)
        if isinstance(self.connector, ExpectingTotal):  # the listing's total, for an ETA
            counts.expected = self.connector.expected_total()
        if checkpoint is not None:
            with self.phases.measure(COMMIT):
                self.manifest.runs.save_checkpoint(
                    run_id, self.source.source_id, checkpoint.cursor, counts, lease=self.lease
                )
            failpoints.failpoint(failpoints.AFTER_CHECKPOINT_SAVE)
        if options.progress:
            options.progress(self.source.source_id, counts)
        if options.on_batch and counts.new + counts.changed + counts.deleted > before:
            options.on_batch()  # new revisions are pending for the indexer
        return counts.new + counts.changed + counts.deleted + counts.failed + counts.stale == (
            quiet_before
        )

    def _ruled_out(self, doc: SourceDocument, builder: BatchBuilder) -> bool:
        """Whether the source's rules exclude ``doc`` (never fetched then); one the
        manifest holds is deleted as ``excluded_by_config`` (``sync.rules``)."""
        if not self.settings.rules.excludes(doc, self._started):
            return False
        record = builder.existing.get(doc.object_id)
        if record is not None and record.state == ACTIVE:
            builder.tombstone(record, EXCLUDED_BY_CONFIG)
        return True

    def _builder(
        self,
        run_id: str,
        items: list[SourceItem],
        counts: RunCounts,
        options: SyncOptions,
        content_store: ContentStore,
    ) -> BatchBuilder:
        ids = [i.object_id for i in items if not isinstance(i, Checkpoint)]
        # a failure's stand-in (a container's member or the container) has a row too
        ids += [i.document.object_id for i in items if isinstance(i, Failure) and i.document]
        source = self.source
        existing = self.manifest.fields_by_object_ids(source.source_id, ids) if ids else {}
        deleted_ids = [r.document_id for r in existing.values() if r.state != "active"]
        tombs = self.manifest.tombstone_sequences(deleted_ids) if deleted_ids else {}
        dead: dict[str, tuple[str | None, str]] = {}
        if ids:  # the document ids are computed only if the source has a dead entry at all
            docs = (r.document_id if (r := existing.get(o)) else source.document_id(o) for o in ids)
            dead = self.manifest.failures.dead_source_versions(docs, source.source_id)
        fetch: Callable[[str], bytes] | None = None
        if isinstance(self.connector, LazyFetching):
            lazy = self.connector

            def fetch(ref: str) -> bytes:
                return call_with_retry(lambda: lazy.fetch(ref), options.fetch_policy)

        return BatchBuilder(
            source=self.source,
            run_id=run_id,
            existing=existing,
            tombstone_sequences=tombs,
            dead_versions=dead,
            content_store=content_store,
            fetch=fetch,
            counts=counts,
            trust_hints=not self._full,
            inferred=self._inferred,
        )

    def prune_only(
        self,
        *,
        dry_run: bool = False,
        force: bool = False,
        lease_seconds: int = LEASE_SECONDS,
        progress: CountProgress | None = None,
    ) -> PruneResult:
        """``headwater prune``: enumerate, compare, and delete (or only report), leased;
        ``progress`` counts the objects enumerated."""
        if not isinstance(self.connector, Enumerating):
            return self.pruner.prune_only(dry_run=dry_run, force=force)
        self.manifest.ensure_source(self.source.source_id, self.source.source_type)
        with self._holding_lease(lease_seconds):
            return self.pruner.prune_only(dry_run=dry_run, force=force, progress=progress)
