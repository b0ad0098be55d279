"""The read side of a workspace as plain functions over its runtime.

Documents, failures, status, reconcile and search only look at the manifest and the
indexes (reconcile's repair writes through the indexer it is given), so each is a
function of the ``Runtime`` and its arguments; the ``Workspace`` facade delegates to
them. ``status`` gathers the schedule (``scheduler.plans``) and receives the executor's
state as data, then ``reports.status_report`` builds the typed report.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from headwater import failpoints
from headwater.config import IndexSection
from headwater.errors import ConfigError, NotFoundError
from headwater.indexer.reconcile import ReconcileReport, ReconcileTarget, reconcile
from headwater.manifest.generations import RETIRED, WRITE_STATES, Generation
from headwater.manifest.records import DocumentRecord
from headwater.reports import (
    DocumentReport,
    EventsState,
    ExecutorState,
    IndexInfo,
    StatusReport,
    document_report,
    status_report,
)
from headwater.runtime import Runtime
from headwater.scheduler.plans import schedule_status
from headwater.scopes import Scope
from headwater.search.results import SearchResult
from headwater.search.service import check_min_score, expand_principals, parse_mode, run_search
from headwater.search.tree import TreeReport, folder_tree
from headwater.sync.fixes import SIZE_SETTINGS, FailureSummary, SourceFacts, summary_of
from headwater.sync.removal import known_source_ids
from headwater.sync.report import RunReport

log = logging.getLogger(__name__)


def document(
    rt: Runtime,
    document_id: str | None = None,
    *,
    source: str | None = None,
    object_id: str | None = None,
) -> DocumentReport:
    """What the manifest knows of one document, and its applied state per index."""
    record: DocumentRecord | None
    if document_id:
        record = rt.manifest.document(document_id)
    elif source and object_id is not None:
        record = rt.manifest.document_by_object(source, object_id)
    else:
        raise ConfigError("give a DOCUMENT_ID, or both --source and --object")
    if record is None:
        raise NotFoundError(
            f"no document {document_id or f'{source}/{object_id}'} in the manifest; "
            "check the id with `headwater search` or `headwater status`."
        )
    held = rt.manifest.index_state.for_document(record.document_id)
    sections = rt.indexes.sections
    live = {s.name: rt.indexes.live_generation(s.name).key for s in sections}
    applied = {name: held[key] for name, key in live.items() if key in held}
    return document_report(record, applied, [s.name for s in sections])


def require_known_source(rt: Runtime, source_id: str) -> None:
    """A NotFoundError (exit code 2) for an id neither configured nor in the manifest,
    so a mistyped ``--source`` is not answered with an empty list."""
    configured = rt.sources.configured_ids()
    if source_id in configured or source_id in known_source_ids(rt.manifest):
        return
    raise NotFoundError(
        f"source {source_id!r} is neither configured nor in the manifest; expected one "
        f"of: {', '.join(configured) or '(none)'}. Check the id with `headwater status`."
    )


def failure_summary(rt: Runtime, source: str | None = None) -> FailureSummary:
    """Open failures grouped by source, stage, class (and extension), each group
    with a few example ids and the config line that fixes or silences it."""
    return summary_of(rt.manifest.failures.summary(source), lambda s: _source_facts(rt, s))


def _source_facts(rt: Runtime, source_id: str) -> SourceFacts:
    chars = rt.config.chunker.max_document_chars
    if source_id not in rt.sources.configured_ids():
        return SourceFacts(type=None, document_chars=chars)
    options = rt.loaded.source_options.get(source_id)
    limits = {
        name: value
        for name in SIZE_SETTINGS
        if isinstance(value := getattr(options, name, None), int)
    }
    return SourceFacts(
        type=rt.sources.section(source_id).type,
        excludable=isinstance(getattr(options, "exclude", None), list),
        limits=limits,
        document_chars=chars,
    )


def reconcile_indexes(
    rt: Runtime,
    sink_name: str | None = None,
    *,
    repair: bool = False,
    generation: int | None = None,
    reindex: Callable[[list[str]], object],
) -> ReconcileReport:
    """Compare the manifest with each index's ``generation`` (default: its live one),
    or ``sink_name``'s only; ``repair`` fixes drift (``reindex`` re-applies documents to
    every generation that receives writes). Without ``sink_name``, a ``generation``
    checks every index that has it (not retired); none having it is an error, as is a
    named index without it."""
    if sink_name is not None:
        rt.indexes.section(sink_name)  # raises the ConfigError naming the indexes
    names = [s.name for s in rt.indexes.sections if sink_name in (None, s.name)]
    gens: Sequence[Generation | NotFoundError] = [
        _reconcile_generation(rt, n, generation) for n in names
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
                sink=rt.indexes.generation_sink(gen),
                reindex=_reindexer(rt, gen, reindex),
            )
        )
    return reconcile(rt.manifest, targets, repair=repair, progress=rt.controls.count_progress)


def _reconcile_generation(
    rt: Runtime, name: str, generation: int | None
) -> Generation | NotFoundError:
    """The generation of index ``name`` to reconcile, or why there is none."""
    if generation is None:
        return rt.indexes.live_generation(name)
    try:
        gen = rt.manifest.generations.get(name, generation)
    except NotFoundError as exc:
        return exc
    if gen.state == RETIRED:  # opening it would create its dropped storage again
        return NotFoundError(
            f"{gen.label} is retired: its storage was dropped and there is nothing "
            "to reconcile; see `headwater rebuild status` for the generations."
        )
    return gen


def _reindexer(
    rt: Runtime, gen: Generation, reindex: Callable[[list[str]], object]
) -> Callable[[list[str]], object]:
    """How repair re-applies documents to ``gen``: through every generation that
    receives writes (as a sync would) when it is one of them, else into it alone."""
    if gen.state in WRITE_STATES:
        return reindex
    return lambda ids: rt.indexes.drain(rt.indexes.generation_indexer([gen]), ids)


def status(rt: Runtime, executor: ExecutorState) -> StatusReport:
    """Sources with their schedule, versions, indexes, the DLQ and ``executor``'s state."""
    return status_report(
        rt.manifest,
        [(s.id, s.type) for s in rt.config.source],
        schedule_status(rt),
        [_index_info(rt, s) for s in rt.indexes.sections],
        pipeline_version=rt.pipeline_version,
        content_version=rt.content_version,
        executor=executor,
        events=None
        if rt.events is None
        else EventsState(rt.events.kind, rt.events.depth(), rt.events.last_error),
        throttled=rt.rate_store.throttled(),
    )


def _index_info(rt: Runtime, section: IndexSection) -> IndexInfo:
    live = rt.indexes.live_generation(section.name)
    return IndexInfo(
        section.name,
        section.type,
        rt.indexes.version(section),
        live_key=live.key,
        live_version=rt.pipelines.version(live),
    )


def search(
    rt: Runtime,
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
    """``Workspace.search``: every configured index serving the mode, fused; ``scopes``
    keeps documents under one of those folders (``headwater.scopes``)."""
    parse_mode(mode)  # a bad mode is refused before any index is opened
    if k < 1:
        raise ConfigError(f"--k {k} must be at least 1")
    check_min_score(min_score)
    if not query.strip():  # vectors would still rank something: arbitrary results
        raise ConfigError("the query is empty; give the words to search for")
    if index is not None:
        rt.indexes.section(index)  # an unknown --index is an error, even with no source
    # Only configured sources are searchable: a source removed from the config stays in
    # the indexes until `headwater source remove`, but it is never returned.
    configured = rt.sources.configured_ids()
    if sources:
        for source_id in sources:
            rt.sources.section(source_id)  # a ConfigError names the configured sources
        configured = [s for s in configured if s in set(sources)]
    for scope in scopes or ():
        rt.sources.section(scope.source)  # an unknown scope source names the configured ones
    if not configured:
        return []
    failpoints.failpoint(failpoints.IN_SEARCH)
    names = [index] if index else [s.name for s in rt.indexes.sections]
    caller = expand_principals(rt.manifest.groups, user, groups, rt.aliases)  # synced groups
    # Each index's live generation read once: its sink and its query embedder are the same
    # generation's even if a switch commits meanwhile (and one manifest read, not two).
    live = {name: rt.indexes.live_generation(name) for name in names}
    return run_search(
        [(name, rt.indexes.generation_sink(live[name])) for name in names],
        lambda name, text: rt.indexes.generation_embedder(live[name]).embed([text])[0],
        query,
        user=caller.user,
        groups=caller.groups,
        aliases=caller.aliases,
        k=k,
        mode=mode,
        sources=configured,
        per_document=per_document,
        admitted=rt.manifest.visible_to,
        min_score=min_score,
        scopes=list(scopes) if scopes else None,
    )


def tree(
    rt: Runtime,
    source: str,
    path: str = "",
    *,
    user: str | None = None,
    groups: Sequence[str] = (),
) -> TreeReport:
    """``Workspace.tree``: the folder nodes under ``path`` the caller may see."""
    scope = Scope.of(source, path)  # '.' and '..' refused, as for --under
    rt.sources.section(scope.source)  # an unknown source names the configured ones
    caller = expand_principals(rt.manifest.groups, user, groups, rt.aliases)
    return folder_tree(
        scope.source,
        scope.path,
        lambda after, limit: rt.manifest.source_documents_after(scope.source, after, limit),
        caller.principals,
    )


def last_runs(rt: Runtime) -> dict[str, RunReport | None]:
    """The newest run of each configured source (None: never run)."""
    out: dict[str, RunReport | None] = {}
    for section in rt.config.source:
        record = rt.manifest.runs.latest(section.id)
        out[section.id] = RunReport.from_record(record, section.type) if record else None
    return out
