"""Filling and checking one generation: build it from stored content, verify it.

``build`` drains every pending document into the generation (resumable: what was written
is recorded as applied for it); ``catch_up_generation`` drains again until a pass
changes nothing, since a sync beside it commits behind a drain's cursor. ``verify``
checks the generation against the manifest (document count, every document's revision
and chunk count, a sample of chunk texts against a fresh chunking of the stored
content, no tombstoned document present) and records ``ready`` or ``failed``. Every
state change is conditional, so a generation another process cancelled (retired) is
left alone and what this process wrote into it afterwards is dropped again
(``cancelled_meanwhile``). ``rebuilds.orchestrate`` decides when to call these.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from headwater.errors import ItemError
from headwater.indexer.reconcile import compare
from headwater.indexer.report import IndexReport
from headwater.manifest.generations import (
    BUILDING,
    FAILED,
    READY,
    RETIRED,
    VERIFYING,
    Generation,
)
from headwater.pipeline.chunk import chunk_document

if TYPE_CHECKING:
    from headwater.indexer.generations import GenerationIndexer
    from headwater.runtime import Runtime

log = logging.getLogger(__name__)

SAMPLE = 50
VERIFY_CATCH_UPS = 3


def live_number(rt: Runtime, name: str) -> int | None:
    """The number of the live generation of index ``name`` (None: none is live)."""
    live = rt.manifest.generations.live(name)
    return None if live is None else live.generation


def build(rt: Runtime, generation: Generation) -> IndexReport:
    """Fill ``generation`` with every pending document (resumable); nothing when it is no
    longer in progress (another process cancelled it)."""
    if not rt.manifest.generations.set_state(
        generation.index_name, generation.generation, BUILDING
    ):
        return IndexReport()
    return catch_up_generation(rt, generation)


def is_retired(rt: Runtime, generation: Generation) -> bool:
    """Whether ``generation`` was retired (by a cancel or a retire) meanwhile."""
    current = rt.manifest.generations.get(generation.index_name, generation.generation)
    return current.state == RETIRED


def cancelled_meanwhile(rt: Runtime, generation: Generation) -> bool:
    """Whether another process retired ``generation`` under this one. Its storage was
    dropped then; whatever this process wrote into it afterwards is dropped now."""
    current = rt.manifest.generations.get(generation.index_name, generation.generation)
    if current.state != RETIRED:
        return False
    rt.indexes.drop_generation_sink(generation)
    return True


def pending_documents(rt: Runtime, generation: Generation) -> int:
    """How many documents are not yet indexed at their revision in ``generation``."""
    return rt.manifest.index_state.pending_count(generation.key, rt.pipelines.version(generation))


def catch_up_generation(
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
            should_stop=lambda: rt.controls.cancel.is_set() or is_retired(rt, generation),
        )
    while not rt.controls.cancel.is_set() and not is_retired(rt, generation):
        done = rt.indexes.drain(indexer)
        report.add(done)
        if not pending_documents(rt, generation) or not (
            done.replaced + done.deleted + done.acl_updates
        ):
            break
    return report


def verify(rt: Runtime, generation: Generation, report: IndexReport | None = None) -> list[str]:
    """Check the generation against the manifest; record ``ready`` or ``failed``. Work a
    sync committed meanwhile is drained first (into ``report``), a few times at most."""
    gens = rt.manifest.generations
    if not gens.set_state(generation.index_name, generation.generation, VERIFYING):
        now = gens.get(generation.index_name, generation.generation).state
        return [f"{generation.label} is {now}, no longer in progress; nothing was verified"]
    problems = problems_of(rt, generation)
    for _ in range(VERIFY_CATCH_UPS):
        if not problems or not pending_documents(rt, generation) or rt.controls.cancel.is_set():
            break
        caught = catch_up_generation(rt, generation)
        if report is not None:
            report.add(caught)
        if not (caught.replaced + caught.deleted + caught.acl_updates):
            break
        problems = problems_of(rt, generation)
    state = FAILED if problems else READY
    if not gens.set_state(generation.index_name, generation.generation, state, problems):
        now = gens.get(generation.index_name, generation.generation).state
        return [f"{generation.label} became {now} while it was verified; it is not {state}"]
    if problems:
        log.warning("%s failed verification: %s", generation.label, "; ".join(problems))
    return problems


def problems_of(rt: Runtime, generation: Generation) -> list[str]:
    """What keeps ``generation`` from being ready; empty when it matches the manifest."""
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
    problems.extend(sample_texts(rt, generation))
    return problems


def sample_texts(rt: Runtime, generation: Generation) -> list[str]:
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
