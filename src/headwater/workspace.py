"""The workspace: one config, one manifest, its content store, connectors and sinks.

``Workspace.open(path)`` validates the config, migrates the manifest and wires the
pieces; nothing heavy (connectors' clients, sinks, the embedding model) is built until
an operation needs it, so ``status`` or a no-op ``sync`` never loads the model. Every
CLI command and the HTTP API are thin layers over the methods here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.clock import utcnow
from headwater.config import (
    EmbedderSection,
    IndexSection,
    LoadedConfig,
    SourceSection,
    load_config,
)
from headwater.connectors import Connector, SourceContext, load_connector_class
from headwater.connectors.base import Enumerating
from headwater.durations import parse_duration
from headwater.errors import ConfigError, HeadwaterError, NotFoundError
from headwater.indexer.indexer import IndexTarget
from headwater.indexer.reconcile import ReconcileReport, ReconcileTarget, reconcile
from headwater.indexer.report import IndexProgress, IndexReport
from headwater.indexer.worker import IndexWorker
from headwater.manifest.content import ContentStore
from headwater.manifest.failures import DEAD
from headwater.manifest.generations import WRITE_STATES, Generation
from headwater.manifest.records import DocumentRecord, FailureRecord, RunCounts
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
from headwater.pipeline.version import chunking_version, content_version, index_version
from headwater.rebuilds.pipelines import GenerationIndexer, Pipelines
from headwater.reports import (
    DocumentReport,
    IndexInfo,
    StatusReport,
    SyncResult,
    document_report,
    status_report,
)
from headwater.search.service import (
    CallerPrincipals,
    SearchResult,
    expand_principals,
    parse_mode,
    run_search,
)
from headwater.sinks import Sink, load_sink_class
from headwater.sync.gates import SourceIdentity
from headwater.sync.permissions import PermissionResult, PermissionSync, sync_groups
from headwater.sync.redrive import RedriveReport, redrive
from headwater.sync.removal import RemovalReport
from headwater.sync.report import PruneReport, PruneResult, RunReport
from headwater.sync.runner import Progress, SyncOptions, SyncRunner, record_unstarted_run
from headwater.sync.settings import SourceSettings
from headwater.types import Access, CountProgress

if TYPE_CHECKING:
    from headwater.scheduler.history import ScheduleStore

log = logging.getLogger(__name__)

DEFAULT_INDEX = IndexSection(name="main", type="sqlite")


def embedder_spec(section: EmbedderSection) -> EmbedderSpec:
    """The ``[embedder]`` table as the plain spec the embedder registry takes."""
    return EmbedderSpec(
        type=section.type,
        runtime=section.runtime,
        runtime_set="runtime" in section.model_fields_set,
        options=section.options(),
    )


class Workspace:
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
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.manifest = Manifest.open(loaded.manifest_url, max_attempts=self.config.sync.attempts)
        self.content_store = ContentStore(self.state_dir / "content")
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
    def index_sections(self) -> list[IndexSection]:
        return list(self.config.index) or [DEFAULT_INDEX]

    def sink_class(self, type_name: str) -> Any:
        return self._sink_types.get(type_name) or load_sink_class(type_name)

    def index_section(self, name: str) -> IndexSection:
        section = next((s for s in self.index_sections if s.name == name), None)
        if section is None:
            known = ", ".join(s.name for s in self.index_sections)
            raise ConfigError(f"index {name!r} is not configured; expected one of: {known}.")
        return section

    def index_version(self, section: IndexSection) -> str:
        """The config's version of the index: chunker, embedder, sink type and schema."""
        cls = self.sink_class(section.type)
        return index_version(self.chunking_version, section.type, cls.schema_version)

    def live_generation(self, name: str) -> Generation:
        self.index_section(name)
        live = self.manifest.generations.live(name)
        if live is None:
            raise NotFoundError(
                f"index {name!r} has no live generation; switch one in with "
                f"`headwater rebuild switch {name}` (see `headwater rebuild status`)."
            )
        return live

    def sink(self, name: str) -> Sink:
        """The sink of the index's live generation (the one searches read)."""
        return self.generation_sink(self.live_generation(name))

    def query_embedder(self, name: str) -> Embedder:
        """The embedder of the index's live generation (queries meet its vectors)."""
        return self.pipelines.pipeline(self.live_generation(name)).embedder()

    def generation_sink(self, generation: Generation) -> Sink:
        key = generation.key
        if key not in self._sinks:
            sink = self.pipelines.sink(generation)
            if sink.bind(self.manifest.manifest_id):
                log.warning(
                    "index %r belonged to another manifest; it was emptied and is rebuilt "
                    "from this one",
                    generation.label,
                )
                self.manifest.index_state.forget_index(key)
            self._sinks[key] = sink
        return self._sinks[key]

    def drop_generation_sink(self, generation: Generation) -> None:
        """Delete a generation's storage (disk freed) and forget its applied rows."""
        sink = self._sinks.pop(generation.key, None) or self.pipelines.sink(generation)
        sink.drop()
        self.manifest.index_state.forget_index(generation.key)

    def generation_target(self, generation: Generation) -> IndexTarget:
        return IndexTarget(
            generation.key, self.generation_sink(generation), self.pipelines.version(generation)
        )

    def generation_indexer(self, generations: Sequence[Generation]) -> GenerationIndexer:
        """One indexer per distinct pipeline over ``generations``."""
        return self.pipelines.indexer(generations)

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
        return SourceIdentity(
            tenant=self.config.workspace.tenant,
            source_type=section.type,
            source_id=section.id,
            default_access=access,
            pipeline_version=self.pipeline_version,
        )

    def source_settings(self, section: SourceSection) -> SourceSettings:
        """The plain settings the sync layer needs from a source's config section."""
        return SourceSettings(
            batch_size=section.batch_size, prune_max_fraction=section.prune_max_fraction
        )

    def indexer(self) -> GenerationIndexer:
        """Every generation that receives writes: each index's live one and any in progress."""
        return self.generation_indexer(
            [g for s in self.index_sections for g in self.manifest.generations.writable(s.name)]
        )

    # -- operations --------------------------------------------------------------------

    def _selected(self, sources: Sequence[str] | None) -> list[SourceSection]:
        if not sources:
            return list(self.config.source)
        return [self.source_section(s) for s in sources]

    def warnings(self, sources: Sequence[str] | None = None) -> list[str]:
        from headwater.rebuilds.orchestrate import rebuild_warnings

        return rebuild_warnings(self) + [
            f"source {s.id!r} has no `access`: its documents are visible to no one. "
            "Add access = { groups = [...] }, { users = [...] } or { public = true }."
            for s in self._selected(sources)
            if s.access is None
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
    ) -> SyncResult:
        """Sync the given sources (all by default) and, unless ``index=False``, index.

        ``full=True`` re-reads each source from the beginning: no cursor, no window start,
        no skip by version hint (unchanged content is still skipped by checksum).

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
        except HeadwaterError as exc:  # an index that cannot be opened: every run fails
            error = f"the indexes could not be opened: {exc}"
            for section in self._selected(sources):
                result.runs.append(
                    record_unstarted_run(self.manifest, section.id, section.type, error)
                )
            return result
        worker = IndexWorker(lambda: self._drain(indexer)).start() if indexer else None
        try:
            for section in self._selected(sources):
                if self.cancel.is_set():
                    break
                result.runs.append(self._sync_source(section, force, full, progress, worker))
        finally:
            if worker is not None:
                result.index.add(worker.stop())
        if indexer is not None and not self.cancel.is_set():
            result.index.add(self._drain(indexer))
        if indexer is not None:
            result.warnings.extend(indexer.problems)
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
            result.index.add(self._drain(indexer))
        return result

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

    def document(
        self,
        document_id: str | None = None,
        *,
        source: str | None = None,
        object_id: str | None = None,
    ) -> DocumentReport:
        record: DocumentRecord | None
        if document_id:
            record = self.manifest.document(document_id)
        elif source and object_id is not None:
            record = self.manifest.document_by_object(source, object_id)
        else:
            raise ConfigError("give a DOCUMENT_ID, or both --source and --object")
        if record is None:
            raise NotFoundError(
                f"no document {document_id or f'{source}/{object_id}'} in the manifest; "
                "check the id with `headwater search` or `headwater status`."
            )
        held = self.manifest.index_state.for_document(record.document_id)
        live = {s.name: self.live_generation(s.name).key for s in self.index_sections}
        applied = {name: held[key] for name, key in live.items() if key in held}
        return document_report(record, applied, [s.name for s in self.index_sections])

    def failures(self, source: str | None = None, stage: str | None = None) -> list[FailureRecord]:
        return self.manifest.failures.list(source_id=source, stage=stage)

    def dead_letters(
        self, source: str | None = None, stage: str | None = None
    ) -> list[FailureRecord]:
        """The dead-letter queue (deletes first)."""
        return self.manifest.failures.list(source_id=source, stage=stage, statuses=(DEAD,))

    def failure(self, entry_id: int) -> FailureRecord | None:
        return self.manifest.failures.get(entry_id)

    def drop_failures(self, entry_ids: Sequence[int]) -> int:
        """Forget failure entries (the documents stay as they are)."""
        return self.manifest.failures.drop(list(entry_ids))

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
        )

    def reconcile(
        self,
        sink_name: str | None = None,
        *,
        repair: bool = False,
        generation: int | None = None,
    ) -> ReconcileReport:
        """Compare the manifest with each index's ``generation`` (default: its live one),
        or ``sink_name``'s only; ``repair`` fixes drift."""
        if sink_name is not None:
            self.index_section(sink_name)  # raises the ConfigError naming the indexes
        names = [s.name for s in self.index_sections if sink_name in (None, s.name)]
        targets = []
        for name in names:
            gen = (
                self.live_generation(name)
                if generation is None
                else self.manifest.generations.get(name, generation)
            )
            targets.append(
                ReconcileTarget(
                    label=name if generation is None else gen.label,
                    key=gen.key,
                    sink=self.generation_sink(gen),
                    reindex=self._reindexer(gen),
                )
            )
        return reconcile(self.manifest, targets, repair=repair, progress=self.count_progress)

    def _reindexer(self, gen: Generation) -> Callable[[list[str]], object]:
        """How repair re-applies documents to ``gen``: through every generation that
        receives writes (as a sync would) when it is one of them, else into it alone."""
        if gen.state in WRITE_STATES:
            return lambda ids: self.index(only=ids)
        return lambda ids: self._drain(self.generation_indexer([gen]), ids)

    def status(self) -> StatusReport:
        from headwater.scheduler.plans import schedule_status

        return status_report(
            self.manifest,
            [(s.id, s.type) for s in self.config.source],
            schedule_status(self),
            [self._index_info(s) for s in self.index_sections],
            pipeline_version=self.pipeline_version,
            content_version=self.content_version,
            executor=self._executor_status(),
        )

    def _index_info(self, section: IndexSection) -> IndexInfo:
        live = self.live_generation(section.name)
        return IndexInfo(
            section.name,
            section.type,
            self.index_version(section),
            live_key=live.key,
            live_version=self.pipelines.version(live),
        )

    def _executor_status(self) -> dict[str, Any]:
        """``{"type": "local"}``, or the Celery queues, lease owners and index claims."""
        if self.config.executor.type != "celery":
            return {"type": "local"}
        from headwater.executor.observe import executor_status

        return executor_status(self)

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
    ) -> list[SearchResult]:
        """Search as a user; one result per document (its best chunk) unless
        ``per_document=False``, which returns the top chunks themselves. Every configured
        index serving the mode is asked and the lists fused; ``index`` asks that one only."""
        parse_mode(mode)  # a bad mode is refused before any index is opened
        if k < 1:
            raise ConfigError(f"--k {k} must be at least 1")
        # Only configured sources are searchable: a source removed from the config stays in
        # the indexes until `headwater source remove`, but it is never returned.
        configured = [s.id for s in self.config.source]
        if sources:
            for source_id in sources:
                self.source_section(source_id)  # a ConfigError names the configured sources
            configured = [s for s in configured if s in set(sources)]
        if not configured:
            return []
        names = [index] if index else [s.name for s in self.index_sections]
        caller = self.principals_of(user, groups)  # the user's synced groups join in
        return run_search(
            [(name, self.sink(name)) for name in names],
            lambda name, text: self.query_embedder(name).embed([text])[0],
            query,
            user=user,
            groups=[*caller.given_groups, *(g.group for g in caller.synced_groups)],
            k=k,
            mode=mode,
            sources=configured,
            per_document=per_document,
        )

    def principals_of(self, user: str | None, groups: Sequence[str] = ()) -> CallerPrincipals:
        """Whom a search by ``user`` (with ``groups``) runs as, synced groups included."""
        return expand_principals(self.manifest.groups, user, groups)

    def schedule_store(self) -> ScheduleStore:
        """The scheduler's run history and pauses, in this workspace's manifest database."""
        from headwater.scheduler.history import ScheduleStore

        return ScheduleStore(self.manifest.engine)

    def last_prune_at(self, source_id: str) -> datetime | None:
        return self.manifest.runs.last_prune_at(source_id)

    def run_counts(self, source_id: str) -> RunCounts | None:
        last = self.manifest.runs.latest(source_id)
        return last.counts if last else None

    def last_runs(self) -> dict[str, RunReport | None]:
        out: dict[str, RunReport | None] = {}
        for section in self.config.source:
            record = self.manifest.runs.latest(section.id)
            out[section.id] = RunReport.from_record(record, section.type) if record else None
        return out

    def tombstone_age_limit(self) -> timedelta:
        return timedelta(days=self.config.sync.tombstone_retention_days)


__all__ = ["PruneReport", "Workspace"]
