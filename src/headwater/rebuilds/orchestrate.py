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
change is pending for it too: a sync leaves a ``building`` one to this build (it reports
``left_to_rebuild``), indexes a ``verifying`` or ``ready`` one, and ``switch`` catches it
up first, so nothing is lost.

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
from headwater.errors import ConfigError
from headwater.indexer.report import IndexReport
from headwater.manifest.generations import (
    FAILED,
    IN_PROGRESS,
    LIVE,
    PREVIOUS,
    READY,
    RETIRED,
    Generation,
)
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
from headwater.rebuilds.verify import (
    build,
    cancelled_meanwhile,
    catch_up_generation,
    live_number,
    pending_documents,
    verify,
)
from headwater.sinks.base import Publishing
from headwater.units import parse_duration

if TYPE_CHECKING:
    from headwater.runtime import Runtime

log = logging.getLogger(__name__)


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
            out.append(RebuildEntry(name, "up_to_date", live=live_number(rt, name)))
            continue
        entry = RebuildEntry(name, "stopped", generation.generation)
        report = build(rt, generation)
        if rt.controls.cancel.is_set():
            out.append(replace(entry, index_report=report))
            break
        cancelled = cancelled_meanwhile(rt, generation)
        problems = [] if cancelled else verify(rt, generation, report)
        entry = replace(entry, index_report=report)
        if cancelled or cancelled_meanwhile(rt, generation):
            entry = replace(entry, result="cancelled", live=live_number(rt, name))
        elif problems:
            entry = replace(entry, result="failed", problems=tuple(problems))
        elif switch:
            try:
                rt.manifest.generations.switch(name, generation.generation)
                _publish(rt, generation)
                entry = replace(entry, result="switched")
            except ConfigError:
                if not cancelled_meanwhile(rt, generation):
                    raise
                entry = replace(entry, result="cancelled", live=live_number(rt, name))
        else:
            entry = replace(entry, result="ready")
        out.append(entry)
    retire_expired(rt)
    return RebuildReport(tuple(out))


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
    if cancelled_meanwhile(rt, ready):
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
        report.add(catch_up_generation(rt, previous, indexer))
        if indexer.problems:
            raise ConfigError(
                f"{previous.label} cannot be caught up with the manifest, so it is not made "
                f"live (it would serve deleted and re-permissioned documents): "
                f"{'; '.join(indexer.problems)}"
            )
        if rt.controls.cancel.is_set():
            return RollbackResult(name, live_number(rt, name), stopped=True)
    gens.switch(name, previous.generation, entered_from=PREVIOUS)
    live = gens.get(name, previous.generation)
    _publish(rt, live)
    pending = pending_documents(rt, live)
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
        indexes.append(IndexGenerations(section.name, live_number(rt, section.name), tuple(rows)))
    return RebuildStatus(tuple(indexes))
