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
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from headwater import failpoints
from headwater.clock import as_utc, utcnow
from headwater.config import SourceSection
from headwater.connectors.base import Connector, Enumerating, LazyFetching
from headwater.errors import Cancelled, HeadwaterError, TransientError
from headwater.manifest.content import ContentStore
from headwater.manifest.records import BatchCommit, DocumentRecord, RunCounts
from headwater.manifest.runs import (
    CANCELLED,
    COMPLETED_WITH_ERRORS,
    FAILED,
    SUCCEEDED,
    lease_owner,
)
from headwater.manifest.store import Manifest
from headwater.retry import RetryPolicy, call_with_retry
from headwater.sync.gates import BatchBuilder, SourceIdentity
from headwater.sync.report import PruneReport, RunReport
from headwater.types import Checkpoint, Deleted, Failure, SourceDocument, SourceItem, Window

log = logging.getLogger(__name__)

Progress = Callable[[str, RunCounts], None]
LEASE_RENEW_S = 30.0


@dataclass
class SyncOptions:
    force_prune: bool = False
    prune: bool = False
    run_attempts: int = 3
    fetch_policy: RetryPolicy = field(default_factory=RetryPolicy)
    cancel: threading.Event = field(default_factory=threading.Event)
    on_batch: Callable[[], None] | None = None
    progress: Progress | None = None


def _without_repeats(items: list[SourceItem]) -> Iterator[list[SourceItem]]:
    """Split a batch so no object appears twice in one part (each part sees the last)."""
    part: list[SourceItem] = []
    ids: set[str] = set()
    for item in items:
        object_id = getattr(item, "object_id", None)
        if object_id in ids:
            yield part
            part, ids = [], set()
        part.append(item)
        if object_id is not None:
            ids.add(object_id)
    if part:
        yield part


class SyncRunner:
    def __init__(
        self,
        manifest: Manifest,
        content_store: ContentStore,
        source: SourceIdentity,
        section: SourceSection,
        connector: Connector,
    ) -> None:
        self.manifest = manifest
        self.content_store = content_store
        self.source = source
        self.section = section
        self.connector = connector
        self.fetched = 0
        self._lease_renewed = time.monotonic()

    def run(self, options: SyncOptions) -> RunReport:
        owner = lease_owner()
        runs = self.manifest.runs
        self.manifest.ensure_source(self.source.source_id, self.source.source_type)
        runs.acquire_lease(self.source.source_id, owner)
        try:
            return self._run(options, owner)
        finally:
            runs.release_lease(self.source.source_id, owner)

    def _window_and_run(self) -> tuple[str, Window, RunCounts, bool]:
        runs = self.manifest.runs
        sid = self.source.source_id
        interrupted = runs.interrupted(sid)
        if interrupted is not None:
            runs.mark_resumed(interrupted.run_id)
            window = Window(
                as_utc(interrupted.window_start) if interrupted.window_start else None,
                as_utc(interrupted.window_end),
            )
            log.warning("resuming interrupted run %s of %s", interrupted.run_id, sid)
            return interrupted.run_id, window, interrupted.counts, True
        last = runs.last_successful(sid)
        window = Window(as_utc(last.window_end) if last else None, utcnow())
        return runs.start(sid, window.start, window.end), window, RunCounts(), False

    def _run(self, options: SyncOptions, owner: str) -> RunReport:
        started = time.monotonic()
        run_id, window, counts, resumed = self._window_and_run()
        log.info(
            "run %s of %s started, window %s to %s",
            run_id,
            self.source.source_id,
            window.start,
            window.end,
        )
        runs = self.manifest.runs
        sid = self.source.source_id
        status, error, final = SUCCEEDED, None, None
        completed = False
        for attempt in range(1, options.run_attempts + 1):
            cursor = runs.checkpoint(run_id) or runs.next_cursor(sid)
            start_checkpoint = Checkpoint(cursor) if cursor is not None else None
            try:
                final = self._consume(run_id, window, start_checkpoint, counts, options, owner)
                completed = True
                break
            except Cancelled:
                status = CANCELLED
                break
            except TransientError as exc:
                error = f"{type(exc).__name__}: {exc}"
                if attempt == options.run_attempts:
                    status = FAILED
                    break
                log.warning(
                    "run %s hit a transient error (%s); retrying from checkpoint", run_id, exc
                )
                time.sleep(min(30.0, options.fetch_policy.initial_wait * 2**attempt))
            except HeadwaterError as exc:
                status, error = FAILED, f"{type(exc).__name__}: {exc}"
                break
            except Exception as exc:  # the connector itself raised: the run fails
                log.debug("connector raised", exc_info=True)
                status, error = FAILED, f"{type(exc).__name__}: {exc}"
                break
        prune: PruneReport | None = None
        if completed:
            error = None
            prune = self._prune_after_read(run_id, counts, options)
            if counts.failed:
                status = COMPLETED_WITH_ERRORS
            runs.set_next_cursor(sid, final.cursor if final is not None else None)
        duration = time.monotonic() - started
        runs.finish(
            run_id, status, counts, duration, error=error, prune=prune.as_dict() if prune else None
        )
        self.manifest.clear_enumeration(run_id)
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
        known = self._known
        stream = self.connector.read(window, checkpoint, known)
        pending: list[SourceItem] = []
        last_checkpoint: Checkpoint | None = None
        batch_size = self.section.batch_size
        while True:
            try:
                item = next(stream)
            except StopIteration as stop:
                final: Checkpoint | None = stop.value
                break
            if isinstance(item, Checkpoint):
                last_checkpoint = item
                if len(pending) >= batch_size:
                    self._flush(run_id, pending, last_checkpoint, counts, options, owner)
                    pending, last_checkpoint = [], None
                continue
            pending.append(item)
            if len(pending) >= batch_size * 4:
                # A connector that rarely checkpoints still commits in bounded batches.
                self._flush(run_id, pending, None, counts, options, owner)
                pending = []
        self._flush(run_id, pending, last_checkpoint, counts, options, owner)
        return final

    def _known(self, object_id: str) -> str | None:
        return self.manifest.known_version(
            self.source.source_id, object_id, self.source.pipeline_version
        )

    def _flush(
        self,
        run_id: str,
        items: list[SourceItem],
        checkpoint: Checkpoint | None,
        counts: RunCounts,
        options: SyncOptions,
        owner: str,
    ) -> None:
        if options.cancel.is_set():
            raise Cancelled("cancelled by the user; the run stopped after its last batch")
        before = counts.new + counts.changed + counts.deleted
        for part in _without_repeats(items):
            builder = self._builder(run_id, part, counts, options)
            for item in part:
                if isinstance(item, SourceDocument):
                    builder.add_document(item)
                elif isinstance(item, Deleted):
                    builder.add_deleted(item)
                elif isinstance(item, Failure):
                    builder.add_failure(item)
            self.fetched += builder.fetched
            failpoints.failpoint(failpoints.AFTER_FETCH_BEFORE_COMMIT)
            self.manifest.commit_batch(run_id, builder.commit)
            failpoints.failpoint(failpoints.AFTER_MANIFEST_COMMIT)
        if checkpoint is not None:
            self.manifest.runs.save_checkpoint(
                run_id, self.source.source_id, checkpoint.cursor, counts
            )
            failpoints.failpoint(failpoints.AFTER_CHECKPOINT_SAVE)
        if time.monotonic() - self._lease_renewed > LEASE_RENEW_S:
            self.manifest.runs.renew_lease(self.source.source_id, owner)
            self._lease_renewed = time.monotonic()
        if options.progress:
            options.progress(self.source.source_id, counts)
        if options.on_batch and counts.new + counts.changed + counts.deleted > before:
            options.on_batch()  # new revisions are pending for the indexer

    def _builder(
        self, run_id: str, items: list[SourceItem], counts: RunCounts, options: SyncOptions
    ) -> BatchBuilder:
        ids = [i.object_id for i in items if not isinstance(i, Checkpoint)]
        existing = self.manifest.documents_by_object_ids(self.source.source_id, ids)
        deleted_ids = [r.document_id for r in existing.values() if r.state != "active"]
        tombs = self.manifest.tombstone_sequences(deleted_ids) if deleted_ids else {}
        doc_ids = [self.source.document_id(o) for o in ids]
        dead = self.manifest.failures.dead_source_versions(doc_ids)
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
            content_store=self.content_store,
            fetch=fetch,
            counts=counts,
        )

    # -- deletes by set difference -------------------------------------------------------

    def _prune_after_read(
        self, run_id: str, counts: RunCounts, options: SyncOptions
    ) -> PruneReport | None:
        caps = self.connector.capabilities
        if caps.full_listing:
            self.manifest.failures.resolve_vanished(self.source.source_id, run_id)
            candidates = self.manifest.unseen_documents(self.source.source_id, run_id)
            return self._apply_prune(run_id, candidates, counts, options)
        if not isinstance(self.connector, Enumerating):
            return PruneReport(status="unsupported")
        if options.prune:
            try:
                return self.prune_by_enumeration(run_id, counts, options)
            except Exception as exc:  # a partial enumeration deletes nothing
                log.warning(
                    "enumeration of %s failed; nothing deleted: %s", self.source.source_id, exc
                )
                counts.failed += 1
                return PruneReport(
                    status="enumeration_failed", error=f"{type(exc).__name__}: {exc}"
                )
        return None

    def prune_by_enumeration(
        self, run_id: str, counts: RunCounts, options: SyncOptions
    ) -> PruneReport:
        if not isinstance(self.connector, Enumerating):
            return PruneReport(status="unsupported")
        listed = self.manifest.record_enumeration(run_id, self._enumerate(self.connector))
        log.info("enumerated %d objects of %s", listed, self.source.source_id)
        candidates = self.manifest.documents_missing_from_enumeration(self.source.source_id, run_id)
        return self._apply_prune(run_id, candidates, counts, options)

    def prune_only(self, *, dry_run: bool = False, force: bool = False) -> dict[str, object]:
        """``headwater prune``: enumerate, compare, and delete (or only report)."""
        source_id = self.source.source_id
        if not isinstance(self.connector, Enumerating):
            return {"source": source_id, **PruneReport(status="unsupported").as_dict()}
        self.manifest.ensure_source(source_id, self.source.source_type)
        run_id = str(uuid.uuid4())
        try:
            self.manifest.record_enumeration(run_id, self._enumerate(self.connector))
            candidates = self.manifest.documents_missing_from_enumeration(source_id, run_id)
            if dry_run:
                active = self.manifest.count_documents(source_id)
                fraction = len(candidates) / max(active, 1)
                limit = self.section.prune_max_fraction
                report = PruneReport(
                    status="blocked"
                    if fraction > limit and len(candidates) > 1 and not force
                    else "dry_run",
                    candidates=len(candidates),
                    active=active,
                    fraction=fraction,
                    max_fraction=limit,
                )
                return {
                    "source": source_id,
                    **report.as_dict(),
                    "would_delete": [c.object_id for c in candidates[:1000]],
                }
            counts = RunCounts()
            result = self._apply_prune(run_id, candidates, counts, SyncOptions(force_prune=force))
            return {"source": source_id, **result.as_dict()}
        finally:
            self.manifest.clear_enumeration(run_id)

    @staticmethod
    def _enumerate(connector: Enumerating) -> Iterator[str]:
        yield from connector.enumerate()

    def _apply_prune(
        self, run_id: str, candidates: list[DocumentRecord], counts: RunCounts, options: SyncOptions
    ) -> PruneReport:
        sid = self.source.source_id
        self.manifest.runs.set_last_prune_at(sid, utcnow())
        active = self.manifest.count_documents(sid)
        if not candidates:
            return PruneReport(status="done", candidates=0, active=active)
        in_scope = getattr(self.connector, "in_scope", None)
        excluded = {
            r.document_id for r in candidates if callable(in_scope) and not in_scope(r.object_id)
        }
        # Documents the config now excludes are a deliberate change, not a broken listing:
        # only the rest count against the safety fraction.
        missing = len(candidates) - len(excluded)
        fraction = missing / max(active, 1)
        limit = self.section.prune_max_fraction
        if fraction > limit and missing > 1 and not options.force_prune:
            log.warning(
                "prune of %s blocked: %d of %d documents (%.0f%% > %.0f%%)",
                sid,
                missing,
                active,
                fraction * 100,
                limit * 100,
            )
            return PruneReport(
                status="blocked",
                candidates=missing,
                active=active,
                fraction=fraction,
                max_fraction=limit,
            )
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
        for start in range(0, len(candidates), 500):
            builder.commit = BatchCommit()
            for record in candidates[start : start + 500]:
                reason = "excluded_by_config" if record.document_id in excluded else "pruned"
                builder.tombstone(record, reason)
            self.manifest.commit_batch(run_id, builder.commit)
            if options.on_batch:
                options.on_batch()
        return PruneReport(
            status="done",
            candidates=len(candidates),
            active=active,
            fraction=fraction,
            max_fraction=limit,
            deleted=len(candidates),
        )
