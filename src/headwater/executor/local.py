"""The local executor: every sync, drain and prune runs in this process.

``LocalExecutor.sync`` runs each selected source through a ``SyncRunner`` under its own
fenced lease (up to ``max_concurrent`` at once, ``sync.parallel``), while an
``IndexWorker`` drains what each committed batch left pending into every generation
that receives writes but one a rebuild is building (that backlog is left to the rebuild,
the scheduler's catch-up or ``index``, and reported as ``left_to_rebuild``); then it
drains once more, purges old tombstones and retires generations whose rollback window
has passed. A Celery worker's sync task is this same
body for one source with ``index=False``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from functools import partial

from headwater.clock import iso
from headwater.config import SourceSection
from headwater.connectors.base import Enumerating
from headwater.errors import HeadwaterError, IndexOwnedElsewhere, SourceBusy
from headwater.indexer.report import IndexReport
from headwater.indexer.worker import IndexWorker
from headwater.manifest.runs import COMPLETED_WITH_ERRORS, SUCCEEDED
from headwater.rebuilds.orchestrate import rebuild_warnings, retire_expired
from headwater.reports import ExecutorState, SyncResult
from headwater.runtime import Runtime
from headwater.runtime.sources import close_connector
from headwater.sync.parallel import run_each
from headwater.sync.permissions import PermissionResult, PermissionSync, sync_groups
from headwater.sync.report import PruneResult, RunReport, SkippedRun
from headwater.sync.runner import Progress, SyncOptions, SyncRunner, record_unstarted_run

log = logging.getLogger(__name__)


def sync_warnings(rt: Runtime, sources: Sequence[str] | None) -> list[str]:
    """What a sync warns about: indexes whose config changed, sources nobody may see."""
    return rebuild_warnings(rt) + rt.sources.access_warnings(sources)


class LocalExecutor:
    """Runs syncs, drains and prunes here, in this process."""

    name = "local"

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def sync(
        self,
        sources: Sequence[str] | None = None,
        *,
        index: bool = True,
        force: bool = False,
        full: bool = False,
        progress: Progress | None = None,
        max_concurrent: int = 1,
        skip_busy: bool = False,
    ) -> SyncResult:
        """Sync the sources here (all by default) and, unless ``index=False``, index."""
        rt = self.rt
        cancel = rt.controls.cancel
        started = time.monotonic()
        result = SyncResult(warnings=sync_warnings(rt, sources))
        try:
            indexer = rt.indexes.indexer() if index else None
        except IndexOwnedElsewhere:
            raise  # a wrong [manifest] url: refused before any source is read
        except HeadwaterError as exc:  # an index that cannot be opened: every run fails
            error = f"the indexes could not be opened: {exc}"
            for section in rt.sources.selected(sources):
                result.runs.append(
                    record_unstarted_run(rt.manifest, section.id, section.type, error)
                )
            return result
        problems: list[str] = []
        # Live generations first: a generation a rebuild is building is left to it.
        drain = partial(rt.indexes.drain_writable, problems, building=False)
        worker = IndexWorker(drain).start() if indexer else None

        def one(section: SourceSection) -> RunReport | SkippedRun:
            try:
                return self._sync_source(section, force, full, progress, worker)
            except SourceBusy as busy:
                if not skip_busy:
                    raise
                log.info("skipping %s: %s", section.id, busy)
                until = iso(busy.until)
                return SkippedRun(section.id, section.type, busy.holder, until)

        try:
            selected = rt.sources.selected(sources)
            done = run_each(selected, one, limit=max_concurrent, cancel=cancel)
            for outcome in done:
                if isinstance(outcome, SkippedRun):
                    result.skipped.append(outcome)
                elif outcome is not None:
                    result.runs.append(outcome)
        finally:
            if worker is not None:
                result.index.add(worker.stop())
        if indexer is not None and not cancel.is_set():
            result.index.add(drain())
        if indexer is not None:
            result.index.left_to_rebuild = rt.indexes.left_to_rebuild()
        result.warnings.extend(problems)
        rt.indexes.purge_tombstones(rt.config.sync.tombstone_retention_days)
        retire_expired(rt)
        result.duration_s = time.monotonic() - started  # wall time: runs and indexing
        return result

    def _sync_source(
        self,
        section: SourceSection,
        force: bool,
        full: bool,
        progress: Progress | None,
        worker: IndexWorker | None,
    ) -> RunReport:
        rt = self.rt
        connector = rt.sources.connector(section.id)
        runner = SyncRunner(
            rt.manifest,
            rt.content_store,
            rt.sources.identity(section),
            rt.sources.settings(section),
            connector,
        )
        options = SyncOptions(
            force_prune=force,
            full=full,
            prune=isinstance(connector, Enumerating) and rt.prune_due(section),
            run_attempts=rt.config.sync.run_attempts,
            cancel=rt.controls.cancel,
            on_batch=worker.wake if worker is not None else None,
            progress=progress,
            lease_seconds=rt.config.sync.lease_seconds,
        )
        try:
            report = runner.run(options)
            if report.status in (SUCCEEDED, COMPLETED_WITH_ERRORS):
                sync_groups(rt.manifest, section.id, connector)
            return report
        finally:
            close_connector(connector)

    def sync_permissions(
        self, sources: Sequence[str] | None = None, *, index: bool = True
    ) -> PermissionResult:
        """Refresh ACLs and group memberships only: no content read, nothing re-embedded."""
        rt = self.rt
        result = PermissionResult()
        indexer = rt.indexes.indexer() if index else None
        for section in rt.sources.selected(sources):
            connector = rt.sources.connector(section.id)
            sync = PermissionSync(
                rt.manifest,
                rt.sources.identity(section),
                rt.sources.settings(section),
                connector,
            )
            try:
                result.sources.append(sync.run(rt.config.sync.lease_seconds))
            finally:
                close_connector(connector)
        if indexer is not None:
            result.index.add(rt.indexes.drain_writable([], building=False))
            result.index.left_to_rebuild = rt.indexes.left_to_rebuild()
        return result

    def index(self, only: Sequence[str] | None = None) -> IndexReport:
        """Drain pending work into every generation that receives writes."""
        return self.rt.indexes.drain(self.rt.indexes.indexer(), only)

    def prune(
        self, sources: Sequence[str] | None = None, *, dry_run: bool = False, force: bool = False
    ) -> list[PruneResult]:
        """Delete documents their source no longer has (complete enumeration required);
        the deletes are not indexed here (the caller drains)."""
        rt = self.rt
        reports: list[PruneResult] = []
        for section in rt.sources.selected(sources):
            connector = rt.sources.connector(section.id)
            runner = SyncRunner(
                rt.manifest,
                rt.content_store,
                rt.sources.identity(section),
                rt.sources.settings(section),
                connector,
            )
            reports.append(
                runner.prune_only(
                    dry_run=dry_run,
                    force=force,
                    lease_seconds=rt.config.sync.lease_seconds,
                    progress=rt.controls.count_progress,
                )
            )
        return reports

    def state(self) -> ExecutorState:
        """``{"type": "local"}``: nothing runs elsewhere."""
        return ExecutorState()
