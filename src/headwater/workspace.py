"""The workspace: one config, one manifest, its content store, connectors and sinks.

``Workspace.open(path)`` validates the config, migrates the manifest and wires the
pieces; nothing heavy (connectors' clients, sinks, the embedding model) is built until
an operation needs it, so ``status`` or a no-op ``sync`` never loads the model. Every
CLI command and the HTTP API are thin layers over the methods here. The class is split
by what it does: the wiring and the write paths (sync, index, prune, redrive) here, the
indexes' generations and sinks in ``workspace_indexes``, the read side (documents,
failures, status, reconcile, search) in ``workspace_reads``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.clock import iso, utcnow
from headwater.config import (
    ContentSection,
    EmbedderSection,
    LoadedConfig,
    SourceSection,
    load_config,
)
from headwater.connectors import Connector, SourceContext, load_connector_class
from headwater.connectors.base import Enumerating
from headwater.errors import (
    ConfigError,
    HeadwaterError,
    IndexOwnedElsewhere,
    NotFoundError,
    PushConflict,
    SourceBusy,
)
from headwater.indexer.report import IndexProgress, IndexReport
from headwater.indexer.worker import IndexWorker
from headwater.manifest.content import ContentStore, FolderContentStore
from headwater.manifest.content_s3 import S3ContentStore
from headwater.manifest.runs import COMPLETED_WITH_ERRORS, SUCCEEDED
from headwater.manifest.store import Manifest
from headwater.pipeline.chunk import CHUNKER_VERSION, ChunkerSettings
from headwater.pipeline.embed.base import Embedder
from headwater.pipeline.embed.registry import (
    EmbedderSpec,
    cached_embedder,
    describe_embedder,
)
from headwater.pipeline.parse import PARSER_VERSIONS
from headwater.pipeline.version import chunking_version, content_version
from headwater.rebuilds.pipelines import GenerationIndexer, Pipelines
from headwater.rebuilds.results import (
    CancelResult,
    RebuildReport,
    RebuildStatus,
    RetireResult,
    RollbackResult,
    SwitchResult,
)
from headwater.reports import (
    SyncResult,
)
from headwater.search.aliases import IdentityAliases
from headwater.sinks import Sink
from headwater.sync.gates import SourceIdentity
from headwater.sync.parallel import run_each
from headwater.sync.permissions import PermissionResult, PermissionSync, sync_groups
from headwater.sync.push import PushOp, PushResult, push
from headwater.sync.redrive import RedriveReport, redrive
from headwater.sync.removal import RemovalReport
from headwater.sync.report import PruneReport, PruneResult, RunReport, SkippedRun
from headwater.sync.runner import Progress, SyncOptions, SyncRunner, record_unstarted_run
from headwater.sync.settings import SourceSettings
from headwater.types import Access, CountProgress
from headwater.units import parse_duration
from headwater.workspace_reads import WorkspaceReads

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)


def open_content_store(section: ContentSection, state_dir: Path) -> ContentStore:
    """The ``[content]`` store: the folder ``state_dir/content``, or the S3 url's bucket."""
    if section.url is None:
        return FolderContentStore(state_dir / "content")
    return S3ContentStore(
        section.url,
        endpoint_url=section.endpoint_url,
        region=section.region,
        access_key_id=section.access_key_id,
        secret_access_key=section.secret_access_key,
        session_token=section.session_token,
        addressing_style=section.addressing_style,
    )


def embedder_spec(section: EmbedderSection) -> EmbedderSpec:
    """The ``[embedder]`` table as the plain spec the embedder registry takes."""
    return EmbedderSpec(
        type=section.type,
        runtime=section.runtime,
        runtime_set="runtime" in section.model_fields_set,
        options=section.options(),
    )


class Workspace(WorkspaceReads):
    """A Headwater workspace. Use ``Workspace.open(path)``; close it when done."""

    def __init__(
        self,
        loaded: LoadedConfig,
        *,
        embedder: Embedder | None = None,
        connector_types: Mapping[str, Any] | None = None,
        sink_types: Mapping[str, Any] | None = None,
    ) -> None:
        self.loaded = loaded
        self._connector_types = dict(connector_types or {})
        self._sink_types = dict(sink_types or {})
        self.config = loaded.config
        self.state_dir = loaded.state_dir
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # not writable, or a file in the way: not a bug
            raise ConfigError(
                f"cannot create the state directory {self.state_dir} ({exc.strerror or exc}); "
                "make it a writable directory, or point workspace.state_dir in "
                "headwater.toml at one."
            ) from exc
        self.manifest = Manifest.open(
            loaded.manifest_url,
            max_attempts=self.config.sync.attempts,
            lease_seconds=self.config.sync.lease_seconds,
        )
        self.content_store = open_content_store(self.config.content, self.state_dir)
        self.aliases = IdentityAliases.from_table(self.config.identity.aliases)
        self.cancel = threading.Event()
        self.index_progress: Callable[[IndexProgress], None] | None = None  # the CLI's bars
        self.count_progress: CountProgress | None = None  # prune enumeration, reconcile
        self._embedder: Embedder | None = embedder
        self._sinks: dict[str, Sink] = {}
        if embedder is not None:
            described = (embedder.model_id, embedder.dimension, embedder.max_tokens)
        else:
            described = describe_embedder(embedder_spec(self.config.embedder))
        self._model_id, self._dimension, self._max_tokens = described
        self.model_id, self.dimension, self.max_tokens = described
        self.injected_embedder = embedder is not None
        budget = self.config.chunker.max_tokens or self._max_tokens
        self.chunker = ChunkerSettings(
            max_tokens=min(budget, self._max_tokens),
            max_document_chars=self.config.chunker.max_document_chars,
        )
        embedder_type = self.config.embedder.type if embedder is None else type(embedder).__name__
        self.embedder_type = embedder_type
        # Parsers only: decides whether a source object is re-read (the sync gates).
        self.content_version = content_version(PARSER_VERSIONS)
        self.pipeline_version = self.content_version
        # Chunker and embedder: re-chunk and re-embed stored content, never re-read.
        self.chunking_version = chunking_version(
            self.content_version,
            CHUNKER_VERSION,
            {"max_tokens": self.chunker.max_tokens},
            {
                "type": embedder_type,
                "model": self._model_id,
                "dimension": self._dimension,
                "max_tokens": self._max_tokens,
            },
        )
        self.pipelines = Pipelines(self)
        for section in self.index_sections:
            self.manifest.generations.ensure_live(
                section.name, self.index_version(section), self.pipelines.config_settings(section)
            )

    @classmethod
    def open(
        cls,
        path: str | Path = "headwater.toml",
        *,
        embedder: Embedder | None = None,
        connector_types: Mapping[str, Any] | None = None,
        sink_types: Mapping[str, Any] | None = None,
    ) -> Workspace:
        """Open the workspace whose config is ``path`` (or a directory holding one).

        ``embedder`` replaces the configured embedder (it is used as given, without the
        cache); ``connector_types`` and ``sink_types`` add connector and sink classes by
        type name. All three are seams for tests and embedding applications; the CLI uses
        none.
        """
        loaded = load_config(Path(path), connector_types=connector_types, sink_types=sink_types)
        return cls(
            loaded, embedder=embedder, connector_types=connector_types, sink_types=sink_types
        )

    def close(self) -> None:
        for sink in self._sinks.values():
            sink.close()
        self._sinks.clear()
        self.pipelines.close()
        closer = getattr(self._embedder, "close", None)
        if callable(closer):
            closer()
        self.manifest.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- parts -------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = cached_embedder(embedder_spec(self.config.embedder), self.state_dir)
        return self._embedder

    def source_section(self, source_id: str) -> SourceSection:
        return self.config.source_by_id(source_id)

    def connector(self, source_id: str) -> Connector:
        section = self.source_section(source_id)
        cls = self._connector_types.get(section.type) or load_connector_class(section.type)
        context = SourceContext(
            source_id=section.id, state_dir=self.state_dir, config_root=self.loaded.root
        )
        connector: Connector = cls(self.loaded.source_options[section.id], context)
        return connector

    def source_identity(self, section: SourceSection) -> SourceIdentity:
        access = section.access.to_access() if section.access is not None else Access.nobody()
        parse_options = self.config.parse.options(section.parse)
        return SourceIdentity(
            tenant=self.config.workspace.tenant,
            source_type=section.type,
            source_id=section.id,
            default_access=access,
            # what [parse] says about the source's files changes how they are read
            pipeline_version=content_version(PARSER_VERSIONS, parse_options.describe()),
            parse_options=parse_options,
        )

    def source_settings(self, section: SourceSection) -> SourceSettings:
        """The plain settings the sync layer needs from a source's config section."""
        return SourceSettings(
            batch_size=section.batch_size, prune_max_fraction=section.prune_max_fraction
        )

    # -- operations --------------------------------------------------------------------

    def _selected(self, sources: Sequence[str] | None) -> list[SourceSection]:
        if not sources:
            return list(self.config.source)
        return [self.source_section(s) for s in dict.fromkeys(sources)]  # each once, in order

    def warnings(self, sources: Sequence[str] | None = None) -> list[str]:
        from headwater.rebuilds.orchestrate import rebuild_warnings

        return rebuild_warnings(self) + [
            f"source {s.id!r} has {'no `access`' if s.access is None else 'an empty `access`'}: "
            "its documents are visible to no one. "
            "Add access = { groups = [...] }, { users = [...] } or { public = true }."
            for s in self._selected(sources)
            if s.access is None or not s.access.to_access().principals()
        ]

    def _prune_due(self, section: SourceSection) -> bool:
        interval = parse_duration(section.prune_every)
        if interval is None:
            return True
        last = self.last_prune_at(section.id)
        return last is None or utcnow() - last >= interval

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
        if (executor or self.config.executor.type) == "celery":
            from headwater.executor.dispatch import sync_on_workers

            if full:
                raise ConfigError(
                    "sync --full is not dispatched to Celery workers yet; run it with the "
                    'local executor (`[executor] type = "local"`) or from one worker host.'
                )
            return sync_on_workers(self, sources, index=index, force=force)
        started = time.monotonic()
        result = SyncResult(warnings=self.warnings(sources))
        try:
            indexer = self.indexer() if index else None
        except IndexOwnedElsewhere:
            raise  # a wrong [manifest] url: refused before any source is read
        except HeadwaterError as exc:  # an index that cannot be opened: every run fails
            error = f"the indexes could not be opened: {exc}"
            for section in self._selected(sources):
                result.runs.append(
                    record_unstarted_run(self.manifest, section.id, section.type, error)
                )
            return result
        problems: list[str] = []
        drain = partial(self.drain_writable, problems)
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
            selected = self._selected(sources)
            done = run_each(selected, one, limit=max_concurrent, cancel=self.cancel)
            for outcome in done:
                if isinstance(outcome, SkippedRun):
                    result.skipped.append(outcome)
                elif outcome is not None:
                    result.runs.append(outcome)
        finally:
            if worker is not None:
                result.index.add(worker.stop())
        if indexer is not None and not self.cancel.is_set():
            result.index.add(drain())
        result.warnings.extend(problems)
        self._purge_tombstones()
        from headwater.rebuilds.orchestrate import retire_expired

        retire_expired(self)
        result.duration_s = time.monotonic() - started  # wall time: runs and indexing
        return result

    def _purge_tombstones(self) -> None:
        """Purge old tombstones, then tell every index it may forget them too."""
        purged = self.manifest.purge_tombstones(self.config.sync.tombstone_retention_days)
        if purged:
            for section in self.index_sections:
                for generation in self.manifest.generations.writable(section.name):
                    self.generation_sink(generation).forget_tombstones(purged)

    def _sync_source(
        self,
        section: SourceSection,
        force: bool,
        full: bool,
        progress: Progress | None,
        worker: IndexWorker | None,
    ) -> RunReport:
        connector = self.connector(section.id)
        runner = SyncRunner(
            self.manifest,
            self.content_store,
            self.source_identity(section),
            self.source_settings(section),
            connector,
        )
        options = SyncOptions(
            force_prune=force,
            full=full,
            prune=isinstance(connector, Enumerating) and self._prune_due(section),
            run_attempts=self.config.sync.run_attempts,
            cancel=self.cancel,
            on_batch=worker.wake if worker is not None else None,
            progress=progress,
            lease_seconds=self.config.sync.lease_seconds,
        )
        try:
            report = runner.run(options)
            if report.status in (SUCCEEDED, COMPLETED_WITH_ERRORS):
                sync_groups(self.manifest, section.id, connector)
            return report
        finally:
            closer = getattr(connector, "close", None)
            if callable(closer):
                closer()

    def sync_permissions(
        self, sources: Sequence[str] | None = None, *, index: bool = True
    ) -> PermissionResult:
        """Refresh ACLs and group memberships only: no content read, nothing re-embedded."""
        result = PermissionResult()
        indexer = self.indexer() if index else None
        for section in self._selected(sources):
            connector = self.connector(section.id)
            sync = PermissionSync(
                self.manifest,
                self.source_identity(section),
                self.source_settings(section),
                connector,
            )
            try:
                result.sources.append(sync.run(self.config.sync.lease_seconds))
            finally:
                closer = getattr(connector, "close", None)
                if callable(closer):
                    closer()
        if indexer is not None:
            result.index.add(self.drain_writable([]))
        return result

    def push(self, source_id: str, ops: Sequence[PushOp]) -> list[PushResult]:
        """Commit pushed upserts and deletes of a ``push`` source, in order, one result per
        op; safe across any number of processes on one manifest (see ``sync.push``)."""
        try:
            section = self.source_section(source_id)
        except ConfigError as exc:
            raise NotFoundError(str(exc)) from exc
        if section.type != "push":
            raise PushConflict(
                f"source {source_id!r} has type {section.type!r}; only `push` sources accept "
                'documents through the API. Add a [[source]] with type = "push".'
            )
        return push(self.manifest, self.source_identity(section), self.content_store, ops)

    def _drain(self, indexer: GenerationIndexer, only: Sequence[str] | None = None) -> IndexReport:
        started = utcnow()
        hits0, misses0 = self._cache_counters()
        report = indexer.drain(only=only)
        hits1, misses1 = self._cache_counters()
        report.cache_hits, report.embedded = hits1 - hits0, misses1 - misses0
        report.duration_s = (utcnow() - started).total_seconds()
        return report

    def _cache_counters(self) -> tuple[int, int]:
        embedders = self.pipelines.embedders()
        if self._embedder is not None:
            embedders.append(self._embedder)
        hits = sum(int(getattr(e, "hits", 0)) for e in embedders)
        return hits, sum(int(getattr(e, "embedded", 0)) for e in embedders)

    def index(
        self, only: Sequence[str] | None = None, *, executor: str | None = None
    ) -> IndexReport:
        """Drain pending work into every sink (on Celery workers with that executor)."""
        if (executor or self.config.executor.type) == "celery" and only is None:
            from headwater.executor.dispatch import index_on_workers

            return index_on_workers(self)
        return self._drain(self.indexer(), only)

    def prune(
        self, sources: Sequence[str] | None = None, *, dry_run: bool = False, force: bool = False
    ) -> list[PruneResult]:
        """Delete documents their source no longer has (complete enumeration required)."""
        reports: list[PruneResult] = []
        for section in self._selected(sources):
            connector = self.connector(section.id)
            runner = SyncRunner(
                self.manifest,
                self.content_store,
                self.source_identity(section),
                self.source_settings(section),
                connector,
            )
            reports.append(
                runner.prune_only(
                    dry_run=dry_run,
                    force=force,
                    lease_seconds=self.config.sync.lease_seconds,
                    progress=self.count_progress,
                )
            )
        if not dry_run:
            self.index()
        return reports

    def remove_source(self, source_id: str, *, dry_run: bool = False) -> RemovalReport:
        """Delete every document of a source from the manifest and every index, verified,
        and forget its runs and checkpoints. The source need not be configured any more."""
        from headwater.sync.removal import remove_source

        configured = any(s.id == source_id for s in self.config.source)
        return remove_source(
            self.manifest,
            source_id,
            configured=configured,
            index=lambda: self.index().deleted,
            dry_run=dry_run,
        )

    def validate(self, source_id: str) -> None:
        self.connector(source_id).validate()

    def redrive(
        self,
        entry_ids: Sequence[int] = (),
        *,
        all_entries: bool = False,
        stage: str | None = None,
        rate: float = 0.0,
    ) -> RedriveReport:
        """Replay DLQ entries through the normal pipeline; successes resolve them."""
        configured = {s.id for s in self.config.source}
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
        from headwater.rebuilds import orchestrate

        return orchestrate.status(self)

    def rebuild(
        self, names: Sequence[str] | None = None, *, force: bool = False, switch: bool = True
    ) -> RebuildReport:
        """Build (or resume), verify and, unless ``switch=False``, switch a new generation
        of each named index, or of every index whose settings changed (all with ``force``)."""
        from headwater.rebuilds import orchestrate

        for name in names or ():
            self.index_section(name)  # an unknown index fails before any work
        return orchestrate.rebuild(self, list(names) if names else None, force=force, switch=switch)

    def rebuild_switch(self, name: str) -> SwitchResult:
        """Catch the ready generation of ``name`` up, verify it again and make it live."""
        from headwater.rebuilds import orchestrate

        self.index_section(name)
        return orchestrate.switch(self, name)

    def rebuild_rollback(self, name: str, *, catch_up: bool = True) -> RollbackResult:
        """Make the previous generation of ``name`` live again (caught up first)."""
        from headwater.rebuilds import orchestrate

        self.index_section(name)
        return orchestrate.rollback(self, name, catch_up=catch_up)

    def rebuild_cancel(self, name: str) -> CancelResult:
        """Retire the generation of ``name`` in progress and delete its storage."""
        from headwater.rebuilds import orchestrate

        self.index_section(name)
        return orchestrate.cancel(self, name)

    def rebuild_retire(self, name: str) -> RetireResult:
        """Drop every generation of ``name`` but the live one and the one kept for rollback."""
        from headwater.rebuilds import orchestrate

        self.index_section(name)
        return orchestrate.retire(self, name)


__all__ = ["PruneReport", "Workspace"]
