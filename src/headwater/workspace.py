"""The workspace facade: the one object the CLI, the HTTP API and Python users hold.

``Workspace.open(path)`` builds the composition root (``headwater.runtime.Runtime``:
config, manifest, content store, connectors, indexes, embedder, versions) and the
executor ``[executor] type`` names (found by name, ``runtime.executor``), and hands both
to the facade. Every method delegates: write work to the executor (local or Celery),
reads to the plain functions of ``headwater.reads``, the DLQ replay, source removal and
push to the sync core. Nothing heavy (connectors' clients, sinks, the embedding model)
is built until an operation needs it, so ``status`` or a no-op ``sync`` never loads the
model. The facade never imports an executor, the scheduler, the CLI or the HTTP API.

What a workspace holds (its runtime, executor and parts) and how it opens and closes are
``headwater.workspace_base``'s; this module is what a workspace does.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from headwater import reads
from headwater.config import SourceSection
from headwater.errors import ConfigError, NotFoundError, PushConflict
from headwater.events import DrainReport
from headwater.indexer.reconcile import ReconcileReport
from headwater.indexer.report import IndexReport
from headwater.manifest.failures import DEAD
from headwater.manifest.pushed_groups import GroupPushResult
from headwater.manifest.records import FailureRecord
from headwater.rebuilds import orchestrate
from headwater.rebuilds.orchestrate import rebuild_warnings
from headwater.rebuilds.results import (
    CancelResult,
    RebuildReport,
    RebuildStatus,
    RetireResult,
    RollbackResult,
    SwitchResult,
)
from headwater.reports import DocumentReport, StatusReport, SyncResult
from headwater.scopes import Scope
from headwater.search.results import SearchResult
from headwater.search.service import CallerPrincipals, expand_principals
from headwater.search.tree import TreeReport
from headwater.sync.fixes import FailureSummary
from headwater.sync.group_push import delete_group, put_group
from headwater.sync.permissions import PermissionResult
from headwater.sync.push import PushOp, PushResult, push
from headwater.sync.redrive import RedriveReport, redrive
from headwater.sync.removal import RemovalReport, remove_source
from headwater.sync.report import PruneReport, PruneResult, RunReport
from headwater.sync.rules_preview import RulesPreview, preview
from headwater.sync.runner import Progress
from headwater.sync.sessions import PushSessions
from headwater.units import parse_duration
from headwater.workspace_base import WorkspaceBase


class Workspace(WorkspaceBase):
    """A Headwater workspace. Use ``Workspace.open(path)``; close it when done.

    What it holds (the runtime, the executor, the parts) and how it opens and closes are
    ``WorkspaceBase``'s; every operation is here."""

    # -- writes ------------------------------------------------------------------------

    def warnings(self, sources: Sequence[str] | None = None) -> list[str]:
        """What a sync of ``sources`` warns about before it starts."""
        return rebuild_warnings(self.runtime) + self.sources.access_warnings(sources)

    def sync(
        self,
        sources: Sequence[str] | None = None,
        *,
        index: bool = True,
        force: bool = False,
        full: bool = False,
        progress: Progress | None = None,
        executor: str | None = None,
        max_concurrent: int = 1,
        skip_busy: bool = False,
    ) -> SyncResult:
        """Sync the given sources (all by default) and, unless ``index=False``, index.

        ``full=True`` re-reads each source from the beginning: no cursor, no window start,
        no skip by version hint (unchanged content is still skipped by checksum).

        Up to ``max_concurrent`` sources run at once, each in its own thread under its own
        lease (``sync.parallel``); ``result.runs`` keeps the sources' order. A source whose
        lease another live process holds raises ``SourceBusy`` once the other runs are
        done, or, with ``skip_busy=True``, is listed in ``result.skipped`` with its holder.

        With ``[executor] type = "celery"`` the runs are enqueued and awaited instead;
        ``executor="local"`` runs here regardless (what a Celery worker does).
        """
        result = self._executor(executor).sync(
            sources,
            index=index,
            force=force,
            full=full,
            progress=progress,
            max_concurrent=max_concurrent,
            skip_busy=skip_busy,
        )
        self.publish_events()
        return result

    def publish_events(self) -> DrainReport | None:
        """Send the change events waiting in the outbox (``[events]``; None without it).
        Never raises for a target that is down: the events wait for the next drain."""
        events = self.runtime.events
        return None if events is None else events.drain()

    def sync_permissions(
        self, sources: Sequence[str] | None = None, *, index: bool = True
    ) -> PermissionResult:
        """Refresh ACLs and group memberships only: no content read, nothing re-embedded."""
        result = self.executor.sync_permissions(sources, index=index)
        self.publish_events()
        return result

    def _push_source(self, source_id: str) -> SourceSection:
        try:
            section = self.source_section(source_id)
        except ConfigError as exc:
            raise NotFoundError(str(exc)) from exc
        if section.type != "push":
            raise PushConflict(
                f"source {source_id!r} has type {section.type!r}; only `push` sources accept "
                'documents and groups through the API. Add a [[source]] with type = "push".'
            )
        return section

    def push(self, source_id: str, ops: Sequence[PushOp]) -> list[PushResult]:
        """Commit pushed upserts and deletes of a ``push`` source, in order, one result per
        op; safe across any number of processes on one manifest (see ``sync.push``)."""
        section = self._push_source(source_id)
        return push(self.manifest, self.sources.identity(section), self.content_store, ops)

    def push_sessions(self, source_id: str) -> PushSessions:
        """The full-replace push sessions of a ``push`` source (``sync.sessions``)."""
        section = self._push_source(source_id)
        return PushSessions(
            self.manifest,
            self.sources.identity(section),
            self.content_store,
            idle=parse_duration(self.config.api.push_session_timeout) or timedelta(hours=1),
            max_fraction=section.prune_max_fraction,
        )

    def push_group(
        self,
        source_id: str,
        group: str,
        members: Sequence[str] | None,
        version: int,
        subgroups: Sequence[str] = (),
    ) -> GroupPushResult:
        """Set (``members``, ``subgroups``) or delete (None) a pushed group of a ``push``
        source, at ``version``; expanded at search like listed groups (``sync.group_push``)."""
        self._push_source(source_id)
        ledger = self.manifest.pushed_groups
        if members is None:
            return delete_group(ledger, source_id, group, version)
        return put_group(ledger, source_id, group, members, version, subgroups)

    def index(
        self, only: Sequence[str] | None = None, *, executor: str | None = None
    ) -> IndexReport:
        """Drain pending work into every sink (on Celery workers with that executor)."""
        report = self._executor(executor).index(only)
        self.publish_events()
        return report

    def prune(
        self, sources: Sequence[str] | None = None, *, dry_run: bool = False, force: bool = False
    ) -> list[PruneResult]:
        """Delete documents their source no longer has (complete enumeration required)."""
        reports = self.executor.prune(sources, dry_run=dry_run, force=force)
        if not dry_run:
            self.index()
        return reports

    def remove_source(self, source_id: str, *, dry_run: bool = False) -> RemovalReport:
        """Delete every document of a source from the manifest and every index, verified,
        and forget its runs and checkpoints. The source need not be configured any more."""
        return remove_source(
            self.manifest,
            source_id,
            configured=source_id in self.sources.configured_ids(),
            index=lambda: self.index().deleted,
            dry_run=dry_run,
        )

    def rules_test(self, source_id: str, *, limit: int = 100) -> RulesPreview:
        """What the source's ``[[source.rules]]`` decide for its first ``limit`` listed
        documents, from a live listing; nothing is fetched or written."""
        section = self.source_section(source_id)
        connector = self.sources.connector(source_id)
        try:
            return preview(source_id, connector, section.rule_set(), limit)
        finally:
            close = getattr(connector, "close", None)
            if callable(close):
                close()

    def validate(self, source_id: str) -> None:
        """Check the source's config and credentials against the source itself."""
        self.sources.connector(source_id).validate()

    def redrive(
        self,
        entry_ids: Sequence[int] = (),
        *,
        all_entries: bool = False,
        stage: str | None = None,
        rate: float = 0.0,
    ) -> RedriveReport:
        """Replay DLQ entries through the normal pipeline; successes resolve them."""
        configured = set(self.sources.configured_ids())
        return redrive(
            self.manifest.failures,
            entry_ids,
            resync=lambda ids: self.sync([s for s in ids if s in configured], index=True),
            reindex=lambda ids: self.index(only=ids),
            all_entries=all_entries,
            stage=stage,
            rate=rate,
            rereadable=lambda s: s in configured and self.source_section(s).type != "push",
        )

    # -- rebuilds: index generations (``headwater rebuild``, ``/v1/rebuilds``) ------------

    def rebuild_status(self) -> RebuildStatus:
        """Every index's generations with their progress counts."""
        return orchestrate.status(self.runtime)

    def rebuild(
        self, names: Sequence[str] | None = None, *, force: bool = False, switch: bool = True
    ) -> RebuildReport:
        """Build (or resume), verify and, unless ``switch=False``, switch a new generation
        of each named index, or of every index whose settings changed (all with ``force``)."""
        for name in names or ():
            self.index_section(name)  # an unknown index fails before any work
        chosen = list(names) if names else None
        return orchestrate.rebuild(self.runtime, chosen, force=force, switch=switch)

    def rebuild_switch(self, name: str) -> SwitchResult:
        """Catch the ready generation of ``name`` up, verify it again and make it live."""
        self.index_section(name)
        return orchestrate.switch(self.runtime, name)

    def rebuild_rollback(self, name: str, *, catch_up: bool = True) -> RollbackResult:
        """Make the previous generation of ``name`` live again (caught up first)."""
        self.index_section(name)
        return orchestrate.rollback(self.runtime, name, catch_up=catch_up)

    def rebuild_cancel(self, name: str) -> CancelResult:
        """Retire the generation of ``name`` in progress and delete its storage."""
        self.index_section(name)
        return orchestrate.cancel(self.runtime, name)

    def rebuild_retire(self, name: str) -> RetireResult:
        """Drop every generation of ``name`` but the live one and the one kept for rollback."""
        self.index_section(name)
        return orchestrate.retire(self.runtime, name)

    # -- reads -------------------------------------------------------------------------

    def document(
        self,
        document_id: str | None = None,
        *,
        source: str | None = None,
        object_id: str | None = None,
    ) -> DocumentReport:
        """What the manifest knows of one document, and its state in each index."""
        return reads.document(self.runtime, document_id, source=source, object_id=object_id)

    def require_known_source(self, source_id: str) -> None:
        """A NotFoundError for an id neither configured nor in the manifest."""
        reads.require_known_source(self.runtime, source_id)

    def failures(self, source: str | None = None, stage: str | None = None) -> list[FailureRecord]:
        """Failure records (open and dead), of one source or stage if given."""
        return self.manifest.failures.list(source_id=source, stage=stage)

    def failure_summary(self, source: str | None = None) -> FailureSummary:
        """Open failures grouped, each group with the config line that fixes it."""
        return reads.failure_summary(self.runtime, source)

    def dead_letters(
        self, source: str | None = None, stage: str | None = None
    ) -> list[FailureRecord]:
        """The dead-letter queue (deletes first)."""
        return self.manifest.failures.list(source_id=source, stage=stage, statuses=(DEAD,))

    def failure(self, entry_id: int) -> FailureRecord | None:
        """One failure entry, or None."""
        return self.manifest.failures.get(entry_id)

    def drop_failures(self, entry_ids: Sequence[int]) -> int:
        """Forget failure entries (the documents stay as they are)."""
        return self.manifest.failures.drop(list(entry_ids))

    def reconcile(
        self,
        sink_name: str | None = None,
        *,
        repair: bool = False,
        generation: int | None = None,
    ) -> ReconcileReport:
        """Compare the manifest with each index's ``generation`` (default: its live one),
        or ``sink_name``'s only; ``repair`` fixes drift (see ``reads.reconcile_indexes``)."""
        return reads.reconcile_indexes(
            self.runtime,
            sink_name,
            repair=repair,
            generation=generation,
            reindex=lambda ids: self.index(only=ids),
        )

    def status(self) -> StatusReport:
        """Sources, schedule, versions, indexes, the DLQ and the executor's state."""
        return reads.status(self.runtime, self.executor.state())

    def search(
        self,
        query: str,
        *,
        user: str | None = None,
        groups: Sequence[str] = (),
        k: int = 10,
        mode: str = "hybrid",
        sources: Sequence[str] | None = None,
        index: str | None = None,
        per_document: bool = True,
        min_score: float | None = None,
        scopes: Sequence[Scope] | None = None,
    ) -> list[SearchResult]:
        """Search as a user; one result per document (its best chunk) unless
        ``per_document=False``, which returns the top chunks themselves. Every configured
        index serving the mode is asked and the lists fused; ``index`` asks that one only.
        ``min_score`` leaves out results scoring below it (docs/api.md, "min_score");
        ``scopes`` keeps documents under one of those folders (docs/permissions.md)."""
        return reads.search(
            self.runtime,
            query,
            user=user,
            groups=groups,
            k=k,
            mode=mode,
            sources=sources,
            index=index,
            per_document=per_document,
            min_score=min_score,
            scopes=scopes,
        )

    def tree(
        self,
        source: str,
        path: str = "",
        *,
        user: str | None = None,
        groups: Sequence[str] = (),
    ) -> TreeReport:
        """The folders and documents directly under ``path`` in ``source`` that ``user``
        (with ``groups``) may see; folders count their visible documents."""
        return reads.tree(self.runtime, source, path, user=user, groups=groups)

    def principals_of(self, user: str | None, groups: Sequence[str] = ()) -> CallerPrincipals:
        """Whom a search by ``user`` (with ``groups``) runs as, synced groups included."""
        return expand_principals(self.manifest.groups, user, groups, self.runtime.aliases)

    def last_runs(self) -> dict[str, RunReport | None]:
        """The newest run of each configured source (None: never run)."""
        return reads.last_runs(self.runtime)


__all__ = ["PruneReport", "Workspace"]
