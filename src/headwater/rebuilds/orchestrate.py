"""Blue-green rebuilds: build a new generation from the manifest, verify it, switch.

``rebuild`` starts (or resumes) a generation with the config's settings for every index
whose config version differs from its live generation's (or every named one with
``force``) and fills it from the content store only: no connector is built, no source is
read, and embeddings come through the embedding cache. A killed rebuild resumes where it
stopped, because what was written is recorded as applied for that generation. Once
caught up the generation is verified (document count, every document's revision and
chunk count, a sample of chunk texts against a fresh chunking of the stored content, no
tombstoned document present) and switched: one manifest transaction moves the read
pointer. A failed verification never switches. While a generation is in progress every
sync writes to it too, and ``switch`` catches it up first, so nothing is lost.

Another process may ``cancel`` the generation while it is built or verified here. Every
state change is conditional (see ``manifest.generations``): the cancel wins, the build
stops before its next batch, verification and the switch find the generation retired and
change nothing, and what the batch in flight wrote after the cancel dropped the storage
is dropped again. The result is ``cancelled``; the live generation keeps serving.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from headwater.clock import as_utc, iso, utcnow
from headwater.errors import ConfigError, ItemError
from headwater.indexer.reconcile import compare
from headwater.indexer.report import IndexReport
from headwater.manifest.generations import (
    BUILDING,
    FAILED,
    IN_PROGRESS,
    LIVE,
    PREVIOUS,
    READY,
    RETIRED,
    VERIFYING,
    Generation,
)
from headwater.pipeline.chunk import chunk_document
from headwater.rebuilds.results import (
    CancelResult,
    GenerationRow,
    IndexGenerations,
    RebuildEntry,
    RebuildReport,
    RebuildStatus,
    RetireResult,
    RollbackResult,
    SwitchResult,
)
from headwater.sinks.base import Publishing
from headwater.units import parse_duration

if TYPE_CHECKING:
    from headwater.indexer.generations import GenerationIndexer
    from headwater.runtime import Runtime

log = logging.getLogger(__name__)

SAMPLE = 50
VERIFY_CATCH_UPS = 3


def _needs(rt: Runtime, name: str, force: bool) -> Generation | None:
    """The in-progress generation to resume, a new one, or None (up to date)."""
    section = rt.indexes.section(name)
    gens = rt.manifest.generations
    wanted = rt.indexes.version(section)
    current = gens.in_progress(name)
    if current is not None:
        if rt.pipelines.version(current) == wanted:
            return current
        log.warning("%s was built with older settings; it is cancelled", current.label)
        cancel(rt, name)
    live = rt.indexes.live_generation(name)
    if not force and rt.pipelines.version(live) == wanted:
        return None
    return gens.create(name, wanted, rt.indexes.config_settings(section))


def rebuild(
    rt: Runtime, names: list[str] | None = None, *, force: bool = False, switch: bool = True
) -> RebuildReport:
    """Build, verify and (unless ``switch=False``) switch a generation per index."""
    out: list[RebuildEntry] = []
    for name in names or [s.name for s in rt.indexes.sections]:
        generation = _needs(rt, name, force)
        if generation is None:
            out.append(RebuildEntry(name, "up_to_date", live=_live_number(rt, name)))
            continue
        entry = RebuildEntry(name, "stopped", generation.generation)
        report = build(rt, generation)
        if rt.controls.cancel.is_set():
            out.append(replace(entry, index_report=report))
            break
        cancelled = _cancelled_meanwhile(rt, generation)
        problems = [] if cancelled else verify(rt, generation, report)
        entry = replace(entry, index_report=report)
        if cancelled or _cancelled_meanwhile(rt, generation):
            entry = replace(entry, result="cancelled", live=_live_number(rt, name))
        elif problems:
            entry = replace(entry, result="failed", problems=tuple(problems))
        elif switch:
            try:
                rt.manifest.generations.switch(name, generation.generation)
                _publish(rt, generation)
                entry = replace(entry, result="switched")
            except ConfigError:
                if not _cancelled_meanwhile(rt, generation):
                    raise
                entry = replace(entry, result="cancelled", live=_live_number(rt, name))
        else:
            entry = replace(entry, result="ready")
        out.append(entry)
    retire_expired(rt)
    return RebuildReport(tuple(out))


def _live_number(rt: Runtime, name: str) -> int | None:
    live = rt.manifest.generations.live(name)
    return None if live is None else live.generation


def build(rt: Runtime, generation: Generation) -> IndexReport:
    """Fill ``generation`` with every pending document (resumable); nothing when it is no
    longer in progress (another process cancelled it)."""
    if not rt.manifest.generations.set_state(
        generation.index_name, generation.generation, BUILDING
    ):
        return IndexReport()
    return _catch_up(rt, generation)


def _retired(rt: Runtime, generation: Generation) -> bool:
    current = rt.manifest.generations.get(generation.index_name, generation.generation)
    return current.state == RETIRED


def _cancelled_meanwhile(rt: Runtime, generation: Generation) -> bool:
    """Whether another process retired ``generation`` under this one. Its storage was
    dropped then; whatever this process wrote into it afterwards is dropped now."""
    current = rt.manifest.generations.get(generation.index_name, generation.generation)
    if current.state != RETIRED:
        return False
    rt.indexes.drop_generation_sink(generation)
    return True


def _pending(rt: Runtime, generation: Generation) -> int:
    return rt.manifest.index_state.pending_count(generation.key, rt.pipelines.version(generation))


def _catch_up(
    rt: Runtime, generation: Generation, indexer: GenerationIndexer | None = None
) -> IndexReport:
    """Drain ``generation`` until nothing is pending for it. A sync running beside commits
    documents behind a drain's cursor (and one that started before the generation existed
    does not write to it), so one pass is not enough; stop when a pass changes nothing
    (what is left failed: verification reports it)."""
    report = IndexReport()
    if indexer is None:  # stop before the next batch once the generation is cancelled
        indexer = rt.indexes.generation_indexer(
            [generation],
            should_stop=lambda: rt.controls.cancel.is_set() or _retired(rt, generation),
        )
    while not rt.controls.cancel.is_set() and not _retired(rt, generation):
        done = rt.indexes.drain(indexer)
        report.add(done)
        if not _pending(rt, generation) or not (done.replaced + done.deleted + done.acl_updates):
            break
    return report


def verify(rt: Runtime, generation: Generation, report: IndexReport | None = None) -> list[str]:
    """Check the generation against the manifest; record ``ready`` or ``failed``. Work a
    sync committed meanwhile is drained first (into ``report``), a few times at most."""
    gens = rt.manifest.generations
    if not gens.set_state(generation.index_name, generation.generation, VERIFYING):
        now = gens.get(generation.index_name, generation.generation).state
        return [f"{generation.label} is {now}, no longer in progress; nothing was verified"]
    problems = _problems(rt, generation)
    for _ in range(VERIFY_CATCH_UPS):
        if not problems or not _pending(rt, generation) or rt.controls.cancel.is_set():
            break
        caught = _catch_up(rt, generation)
        if report is not None:
            report.add(caught)
        if not (caught.replaced + caught.deleted + caught.acl_updates):
            break
        problems = _problems(rt, generation)
    state = FAILED if problems else READY
    if not gens.set_state(generation.index_name, generation.generation, state, problems):
        now = gens.get(generation.index_name, generation.generation).state
        return [f"{generation.label} became {now} while it was verified; it is not {state}"]
    if problems:
        log.warning("%s failed verification: %s", generation.label, "; ".join(problems))
    return problems


def _problems(rt: Runtime, generation: Generation) -> list[str]:
    sink = rt.indexes.generation_sink(generation)
    key, label = generation.key, generation.label
    state = rt.manifest.index_state
    problems: list[str] = []
    pending = state.pending_count(key, rt.pipelines.version(generation))
    if pending:
        problems.append(
            f"{pending} documents are not indexed in {label} (see `headwater failures`); "
            "fix them and run `headwater rebuild` again"
        )
    active = state.active_documents()
    held = sum(1 for _ in sink.inventory())
    if held != active:
        problems.append(f"{label} holds {held} documents; the manifest has {active} active")
    drift = compare(rt.manifest, sink, key)
    for kind, ids in (
        ("missing", drift.missing),
        ("at the wrong revision", drift.revision_mismatch),
        ("with the wrong chunk count", drift.chunk_mismatch),
        ("written but not recorded", drift.unconfirmed),
        ("deleted or unknown, yet present", drift.orphans),
    ):
        if ids:
            problems.append(f"{len(ids)} documents {kind} in {label}, e.g. {ids[0]}")
    problems.extend(_sample_texts(rt, generation))
    return problems


def _sample_texts(rt: Runtime, generation: Generation) -> list[str]:
    """A fresh chunking of up to SAMPLE stored documents must equal what the sink holds."""
    sink = rt.indexes.generation_sink(generation)
    pipeline = rt.pipelines.pipeline(generation)
    checked, after = 0, ""
    while checked < SAMPLE:
        records = rt.manifest.documents_after(after, SAMPLE)
        if not records:
            break
        after = records[-1].document_id
        for record in records:
            if record.state != "active" or record.checksum is None or checked >= SAMPLE:
                continue
            checked += 1
            try:
                chunks = chunk_document(
                    document_id=record.document_id,
                    pipeline_version=pipeline.chunking_version,
                    text=rt.content_store.get(record.checksum),
                    title=record.title,
                    metadata=record.metadata,
                    counter=pipeline.embedder(),
                    settings=pipeline.chunker,
                )
            except ItemError:
                continue  # a document that cannot be chunked is reported as not indexed
            if [c.text for c in chunks] != sink.chunk_texts(record.document_id):
                return [
                    f"chunk texts of {record.document_id} in {generation.label} differ from "
                    "a fresh chunking of its stored content"
                ]
    return []


def switch(rt: Runtime, name: str) -> SwitchResult:
    """Catch the ready generation up with the manifest, verify it again, make it live."""
    gens = rt.manifest.generations
    ready = gens.in_progress(name)
    if ready is None or ready.state != READY:
        raise ConfigError(
            f"index {name!r} has no ready generation to switch to; build one with "
            f"`headwater rebuild {name} --no-switch` (see `headwater rebuild status`)."
        )
    report = build(rt, ready)
    problems = verify(rt, ready, report)
    if _cancelled_meanwhile(rt, ready):
        return SwitchResult(name, ready.generation, "cancelled")
    if problems:
        return SwitchResult(name, ready.generation, "failed", problems=tuple(problems))
    gens.switch(name, ready.generation)
    _publish(rt, ready)
    return SwitchResult(name, ready.generation, "switched", index_report=report)


def _publish(rt: Runtime, generation: Generation) -> None:
    """Move a ``Publishing`` sink's read alias to ``generation``, just made live. Headwater's
    own searches read the live generation's storage directly; the alias serves outside
    readers, and a crash between the manifest's switch and this call leaves it on the
    old generation until the next switch or rollback."""
    sink = rt.indexes.generation_sink(generation)
    if isinstance(sink, Publishing):
        sink.publish()


def rollback(rt: Runtime, name: str, *, catch_up: bool = True) -> RollbackResult:
    """Make the previous generation live. It received no writes while it was previous, so
    it is first caught up from the manifest (deletes, ACL changes and edits since): it must
    never serve a document deleted or re-permissioned meanwhile. ``catch_up=False``
    switches at once and leaves the catch-up to the next sync or ``index``."""
    gens = rt.manifest.generations
    previous = gens.previous(name)
    report = IndexReport()
    if catch_up:
        indexer = rt.indexes.generation_indexer([previous])
        report.add(_catch_up(rt, previous, indexer))
        if indexer.problems:
            raise ConfigError(
                f"{previous.label} cannot be caught up with the manifest, so it is not made "
                f"live (it would serve deleted and re-permissioned documents): "
                f"{'; '.join(indexer.problems)}"
            )
        if rt.controls.cancel.is_set():
            return RollbackResult(name, _live_number(rt, name), stopped=True)
    gens.switch(name, previous.generation, entered_from=PREVIOUS)
    live = gens.get(name, previous.generation)
    _publish(rt, live)
    pending = _pending(rt, live)
    if not catch_up:
        return RollbackResult(name, live.generation, pending=pending)
    # What a sync committed during the catch-up (it wrote the old live one).
    report.add(rt.indexes.drain(rt.indexes.generation_indexer([live])))
    return RollbackResult(name, live.generation, pending=pending, index_report=report)


def cancel(rt: Runtime, name: str) -> CancelResult:
    """Retire the generation in progress, then delete its storage. The retirement is one
    conditional update: a generation switched live meanwhile is refused, never dropped."""
    current = rt.manifest.generations.in_progress(name)
    if current is None or not _drop(rt, current, ["cancelled"], IN_PROGRESS):
        moved = None if current is None else rt.manifest.generations.get(name, current.generation)
        now = "" if moved is None else f" ({moved.label} became {moved.state} meanwhile)"
        raise ConfigError(
            f"index {name!r} has no generation in progress to cancel{now}; "
            "see `headwater rebuild status` (`headwater rebuild rollback` returns to the "
            "previous generation)."
        )
    return CancelResult(name, current.generation)


def _drop(
    rt: Runtime,
    generation: Generation,
    problems: list[str],
    entered_from: tuple[str, ...] = (PREVIOUS, FAILED),
) -> bool:
    """Retire ``generation`` if it is still in ``entered_from``, then delete its storage
    (state first: a generation that moved on meanwhile keeps its storage)."""
    retired = rt.manifest.generations.set_state(
        generation.index_name, generation.generation, RETIRED, problems, entered_from=entered_from
    )
    if retired:
        rt.indexes.drop_generation_sink(generation)
    return retired


def retire(rt: Runtime, name: str) -> RetireResult:
    """Drop every generation but the live one and the one kept for rollback."""
    gens = rt.manifest.generations
    rt.indexes.section(name)
    kept = {g.generation for g in gens.list(name) if g.state in (LIVE, *IN_PROGRESS)}
    with contextlib.suppress(ConfigError):
        kept.add(gens.previous(name).generation)
    dropped = []
    for generation in gens.list(name):
        if generation.generation not in kept and generation.state != RETIRED:
            _drop(rt, generation, generation.problems)
            dropped.append(generation.generation)
    return RetireResult(name, tuple(dropped))


def retire_expired(rt: Runtime) -> list[str]:
    """Retire generations switched away from longer than ``keep_previous_for`` ago."""
    now, retired = utcnow(), []
    for section in rt.indexes.sections:
        keep_for = parse_duration(section.keep_previous_for)
        live = rt.manifest.generations.live(section.name)
        if keep_for is None or live is None or live.switched_at is None:
            continue
        if now - as_utc(live.switched_at) < keep_for:
            continue
        for generation in rt.manifest.generations.list(section.name):
            if generation.state in (PREVIOUS, FAILED):
                _drop(rt, generation, generation.problems)
                retired.append(generation.label)
    return retired


def rebuild_warnings(rt: Runtime) -> list[str]:
    """One line per index whose config no longer matches its live generation."""
    out = []
    for section in rt.indexes.sections:
        live = rt.manifest.generations.live(section.name)
        if live is None:
            continue
        changed = rt.indexes.changes(live, section)
        if not changed:
            continue
        building = rt.manifest.generations.in_progress(section.name)
        if building is not None and not rt.indexes.changes(building, section):
            continue
        out.append(
            f"index {section.name!r}: the config changes its {', '.join(changed)}; the live "
            f"generation {live.label} keeps being updated with its own settings. Run "
            f"`headwater rebuild {section.name}` to build and switch to the new settings."
        )
    return out


def status(rt: Runtime) -> RebuildStatus:
    """Every index's generations, with progress counts."""
    indexes = []
    active = rt.manifest.index_state.active_documents()
    for section in rt.indexes.sections:
        rows = []
        for g in rt.manifest.generations.list(section.name):
            documents, chunks = rt.manifest.index_state.totals(g.key)
            pending = None
            version = g.index_version
            if g.state in (LIVE, *IN_PROGRESS):
                # A generation that receives writes follows today's parsers with its own
                # chunker, model and sink: its version is the one it is kept at now.
                version = rt.pipelines.version(g)
                pending = rt.manifest.index_state.pending_count(g.key, version)
            rows.append(
                GenerationRow(
                    generation=g.generation,
                    state=g.state,
                    index_version=version,
                    settings=g.settings,
                    documents=documents if g.state != RETIRED else 0,
                    documents_total=active,
                    chunks=chunks if g.state != RETIRED else 0,
                    pending=pending,
                    created_at=iso(g.created_at),
                    switched_at=iso(g.switched_at),
                    problems=tuple(g.problems),
                )
            )
        indexes.append(IndexGenerations(section.name, _live_number(rt, section.name), tuple(rows)))
    return RebuildStatus(tuple(indexes))
