"""The read side of a workspace: documents, failures, status, reconcile and search.

``WorkspaceReads`` is a mixin of ``Workspace``: these operations only look at the
manifest and the indexes (reconcile's repair goes through the workspace's own indexer),
so they live apart from the wiring and the write paths in ``workspace.py``. Each method
takes the ``Workspace`` it belongs to as ``self``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from headwater.config import IndexSection
from headwater.errors import ConfigError, NotFoundError
from headwater.indexer.reconcile import ReconcileReport, ReconcileTarget, reconcile
from headwater.manifest.failures import DEAD
from headwater.manifest.generations import RETIRED, WRITE_STATES, Generation
from headwater.manifest.records import DocumentRecord, FailureRecord
from headwater.reports import (
    DocumentReport,
    IndexInfo,
    StatusReport,
    document_report,
    status_report,
)
from headwater.search.service import (
    CallerPrincipals,
    SearchResult,
    check_min_score,
    expand_principals,
    parse_mode,
    run_search,
)
from headwater.sync.fixes import SIZE_SETTINGS, FailureSummary, SourceFacts, summary_of
from headwater.sync.report import RunReport
from headwater.workspace_indexes import WorkspaceIndexes

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from headwater.config import LoadedConfig, SourceSection
    from headwater.indexer.report import IndexReport
    from headwater.rebuilds.pipelines import GenerationIndexer
    from headwater.scheduler.history import ScheduleStore
    from headwater.search.aliases import IdentityAliases
    from headwater.types import CountProgress
    from headwater.workspace import Workspace


class WorkspaceReads(WorkspaceIndexes):
    """Documents, failures, status, reconcile and search over a workspace."""

    if TYPE_CHECKING:  # what these methods use of ``Workspace``
        count_progress: CountProgress | None
        loaded: LoadedConfig
        pipeline_version: str
        content_version: str
        aliases: IdentityAliases

        def source_section(self, source_id: str) -> SourceSection: ...
        def index(
            self, only: Sequence[str] | None = None, *, executor: str | None = None
        ) -> IndexReport: ...
        def _drain(
            self, indexer: GenerationIndexer, only: Sequence[str] | None = None
        ) -> IndexReport: ...

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

    def require_known_source(self, source_id: str) -> None:
        """A NotFoundError (exit code 2) for an id neither configured nor in the manifest,
        so a mistyped ``--source`` is not answered with an empty list."""
        from headwater.sync.removal import known_source_ids

        configured = [s.id for s in self.config.source]
        if source_id in configured or source_id in known_source_ids(self.manifest):
            return
        raise NotFoundError(
            f"source {source_id!r} is neither configured nor in the manifest; expected one "
            f"of: {', '.join(configured) or '(none)'}. Check the id with `headwater status`."
        )

    def failures(self, source: str | None = None, stage: str | None = None) -> list[FailureRecord]:
        return self.manifest.failures.list(source_id=source, stage=stage)

    def failure_summary(self, source: str | None = None) -> FailureSummary:
        """Open failures grouped by source, stage, class (and extension), each group
        with a few example ids and the config line that fixes or silences it."""
        return summary_of(self.manifest.failures.summary(source), self._source_facts)

    def _source_facts(self, source_id: str) -> SourceFacts:
        chars = self.config.chunker.max_document_chars
        if source_id not in {s.id for s in self.config.source}:
            return SourceFacts(type=None, document_chars=chars)
        options = self.loaded.source_options.get(source_id)
        limits = {
            name: value
            for name in SIZE_SETTINGS
            if isinstance(value := getattr(options, name, None), int)
        }
        return SourceFacts(
            type=self.source_section(source_id).type,
            excludable=isinstance(getattr(options, "exclude", None), list),
            limits=limits,
            document_chars=chars,
        )

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

    def reconcile(
        self,
        sink_name: str | None = None,
        *,
        repair: bool = False,
        generation: int | None = None,
    ) -> ReconcileReport:
        """Compare the manifest with each index's ``generation`` (default: its live one),
        or ``sink_name``'s only; ``repair`` fixes drift. Without ``sink_name``, a
        ``generation`` checks every index that has it (not retired); none having it is an
        error, as is a named index without it."""
        if sink_name is not None:
            self.index_section(sink_name)  # raises the ConfigError naming the indexes
        names = [s.name for s in self.index_sections if sink_name in (None, s.name)]
        gens: Sequence[Generation | NotFoundError] = [
            self._reconcile_generation(n, generation) for n in names
        ]
        if sink_name is None and generation is not None and len(names) > 1:
            found = [g for g in gens if not isinstance(g, NotFoundError)]
            if not found:
                raise NotFoundError(
                    f"no index has generation {generation} to reconcile ("
                    + "; ".join(str(g).split(";")[0] for g in gens)
                    + "); see `headwater rebuild status` for the generations."
                )
            for skipped in gens:
                if isinstance(skipped, NotFoundError):
                    log.warning("reconcile: %s; not checked", str(skipped).split(";")[0])
            gens = found
        targets = []
        for gen in gens:
            if isinstance(gen, NotFoundError):
                raise gen
            targets.append(
                ReconcileTarget(
                    label=gen.index_name if generation is None else gen.label,
                    key=gen.key,
                    sink=self.generation_sink(gen),
                    reindex=self._reindexer(gen),
                )
            )
        return reconcile(self.manifest, targets, repair=repair, progress=self.count_progress)

    def _reconcile_generation(
        self, name: str, generation: int | None
    ) -> Generation | NotFoundError:
        """The generation of index ``name`` to reconcile, or why there is none."""
        if generation is None:
            return self.live_generation(name)
        try:
            gen = self.manifest.generations.get(name, generation)
        except NotFoundError as exc:
            return exc
        if gen.state == RETIRED:  # opening it would create its dropped storage again
            return NotFoundError(
                f"{gen.label} is retired: its storage was dropped and there is nothing "
                "to reconcile; see `headwater rebuild status` for the generations."
            )
        return gen

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
            schedule_status(cast("Workspace", self)),
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

        return executor_status(cast("Workspace", self))

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
    ) -> list[SearchResult]:
        """Search as a user; one result per document (its best chunk) unless
        ``per_document=False``, which returns the top chunks themselves. Every configured
        index serving the mode is asked and the lists fused; ``index`` asks that one only.
        ``min_score`` leaves out results scoring below it (docs/api.md, "min_score")."""
        parse_mode(mode)  # a bad mode is refused before any index is opened
        if k < 1:
            raise ConfigError(f"--k {k} must be at least 1")
        check_min_score(min_score)
        if not query.strip():  # vectors would still rank something: arbitrary results
            raise ConfigError("the query is empty; give the words to search for")
        if index is not None:
            self.index_section(index)  # an unknown --index is an error, even with no source
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
            user=caller.user,
            groups=caller.groups,
            aliases=caller.aliases,
            k=k,
            mode=mode,
            sources=configured,
            per_document=per_document,
            admitted=self.manifest.visible_to,
            min_score=min_score,
        )

    def principals_of(self, user: str | None, groups: Sequence[str] = ()) -> CallerPrincipals:
        """Whom a search by ``user`` (with ``groups``) runs as, synced groups included."""
        return expand_principals(self.manifest.groups, user, groups, self.aliases)

    def schedule_store(self) -> ScheduleStore:
        """The scheduler's run history and pauses, in this workspace's manifest database."""
        from headwater.scheduler.history import ScheduleStore

        return ScheduleStore(self.manifest.engine)

    def last_prune_at(self, source_id: str) -> datetime | None:
        return self.manifest.runs.last_prune_at(source_id)

    def last_runs(self) -> dict[str, RunReport | None]:
        out: dict[str, RunReport | None] = {}
        for section in self.config.source:
            record = self.manifest.runs.latest(section.id)
            out[section.id] = RunReport.from_record(record, section.type) if record else None
        return out
