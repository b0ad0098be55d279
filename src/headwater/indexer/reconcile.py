"""Reconcile: compare the manifest with what each sink really holds, and repair drift.

The manifest says, per document and sink, which revision was applied and how many
chunks it had. A sink's inventory says what it holds. Both are read as streams sorted by
document_id and merged, so memory stays flat whatever the corpus size (only drifted ids
are kept). Differences are drift: a missing document (active and applied, yet not held),
a wrong revision or chunk count, an unconfirmed one (active, held, but never recorded as
applied, e.g. after a crash between the sink write and the manifest record), or an
orphan (a document the manifest does not know or has tombstoned). An active document is
never an orphan. Repair re-applies missing, mismatched and unconfirmed documents from the
stored content at the manifest revision through the normal indexer, and deletes orphans.
Pending work (a revision not yet applied, not held) is not drift. Safe at any time.
Each index generation is reconciled on its own (default: the live one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import update

from headwater.clock import utcnow
from headwater.errors import FatalError
from headwater.jsonview import JsonView
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.records import ACTIVE, DocumentRecord
from headwater.sinks.base import InventoryRow, Sink
from headwater.types import COUNT_EVERY, CountProgress

if TYPE_CHECKING:
    from headwater.manifest.store import Manifest

SAMPLE = 50
PAGE = 1000


@dataclass
class SinkDrift:
    """What reconcile found in one sink: documents missing or out of date, and orphans."""

    checked: int = 0
    missing: list[str] = field(default_factory=list)
    revision_mismatch: list[str] = field(default_factory=list)
    chunk_mismatch: list[str] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    repaired: int = 0

    @property
    def redo(self) -> list[str]:
        """Active documents to write again from stored content."""
        return self.missing + self.revision_mismatch + self.chunk_mismatch + self.unconfirmed

    @property
    def drifted(self) -> int:
        """How many documents drifted: those to write again plus the orphans."""
        return len(self.redo) + len(self.orphans)

    def as_dict(self) -> dict[str, Any]:
        """This sink's drift as a JSON-ready dict."""
        return {
            "checked": self.checked,
            "in_sync": self.drifted == 0,
            "missing": len(self.missing),
            "revision_mismatch": len(self.revision_mismatch),
            "chunk_mismatch": len(self.chunk_mismatch),
            "unconfirmed": len(self.unconfirmed),
            "orphans": len(self.orphans),
            "repaired": self.repaired,
            "examples": (self.redo + self.orphans)[:SAMPLE],
        }


@dataclass(frozen=True, eq=False)
class ReconcileReport(JsonView):
    """The drift found (and repaired) in each index checked."""

    sinks: Mapping[str, SinkDrift]
    repair: bool

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict: each sink's drift, and whether it was repaired."""
        return {"sinks": {n: d.as_dict() for n, d in self.sinks.items()}, "repair": self.repair}


@dataclass(frozen=True)
class ReconcileTarget:
    """One index generation to check: ``label`` names it in the report, ``key`` is its
    name in the manifest's applied state, ``reindex(document_ids)`` re-applies documents
    from stored content into it (and into whatever else must receive the same writes)."""

    label: str
    key: str
    sink: Sink
    reindex: Callable[[list[str]], object]


def reconcile(
    manifest: Manifest,
    targets: Sequence[ReconcileTarget],
    *,
    repair: bool = False,
    progress: CountProgress | None = None,
) -> ReconcileReport:
    """Compare ``manifest`` with each target (one index generation); with ``repair``, fix
    the drift through the target's own ``reindex``. ``progress`` counts documents
    compared, per target (``reconcile LABEL``)."""
    report: dict[str, SinkDrift] = {}
    for target in targets:
        counter = None
        if progress is not None:
            name = f"reconcile {target.label}"
            counter = partial(progress, name)
        drift = compare(manifest, target.sink, target.key, counter)
        if repair and drift.drifted:
            drift.repaired = _repair(manifest, target, drift)
        report[target.label] = drift
    return ReconcileReport(report, repair)


Expected = tuple[int, int] | None  # (applied revision, chunks) the manifest recorded


def _manifest_rows(manifest: Manifest, name: str) -> Iterator[tuple[DocumentRecord, Expected]]:
    """Every manifest document in document_id order with its applied row, a page at a time."""
    after = ""
    while True:
        records = manifest.documents_after(after, PAGE)
        if not records:
            return
        after = records[-1].document_id
        applied = manifest.index_state.applied_map(name, [r.document_id for r in records])
        for record in records:
            yield record, applied.get(record.document_id)


def _sorted(rows: Iterator[InventoryRow], name: str) -> Iterator[InventoryRow]:
    previous = ""
    for row in rows:
        if row.document_id <= previous:
            raise FatalError(
                f"index {name!r} listed {row.document_id} after {previous}; expected its "
                "inventory in ascending document_id order; fix the sink's inventory()"
            )
        previous = row.document_id
        yield row


def compare(
    manifest: Manifest,
    sink: Sink,
    name: str,
    progress: Callable[[int, bool], None] | None = None,
) -> SinkDrift:
    """Merge the manifest and the sink inventory by document_id (both streamed);
    ``progress`` gets the documents compared so far."""
    drift = SinkDrift()
    held_rows = _sorted(sink.inventory(), name)
    held = next(held_rows, None)
    for record, expected in _manifest_rows(manifest, name):
        doc_id = record.document_id
        while held is not None and held.document_id < doc_id:
            drift.orphans.append(held.document_id)  # the manifest never heard of it
            held = next(held_rows, None)
        in_sink = None
        if held is not None and held.document_id == doc_id:
            in_sink, held = held, next(held_rows, None)
        drift.checked += 1
        _classify(drift, record, expected, in_sink)
        if progress is not None and drift.checked % COUNT_EVERY == 0:
            progress(drift.checked, False)
    while held is not None:
        drift.orphans.append(held.document_id)
        held = next(held_rows, None)
    if progress is not None:
        progress(drift.checked, True)
    return drift


def _classify(
    drift: SinkDrift, record: DocumentRecord, expected: Expected, in_sink: InventoryRow | None
) -> None:
    doc_id = record.document_id
    if record.state != ACTIVE:
        if in_sink is not None and in_sink.chunks > 0:
            drift.orphans.append(doc_id)
        return
    if expected is None:
        if in_sink is not None:
            drift.unconfirmed.append(doc_id)  # written, never recorded: re-apply it
        return
    if in_sink is None:
        drift.missing.append(doc_id)
    elif in_sink.revision != expected[0]:
        drift.revision_mismatch.append(doc_id)
    elif in_sink.chunks != expected[1]:
        drift.chunk_mismatch.append(doc_id)


def _repair(manifest: Manifest, target: ReconcileTarget, drift: SinkDrift) -> int:
    sink = target.sink
    unknown: list[str] = []
    for doc_id in drift.orphans:
        record = manifest.document(doc_id)
        if record is not None and record.state == ACTIVE:
            continue  # never an orphan; compare() does not produce this
        revision = max(sink.revision(doc_id) or 0, record.revision if record else 0)
        sink.delete(doc_id, revision)
        if record is None:
            unknown.append(doc_id)
    if unknown:  # no manifest revision to protect: leave no tombstone that blocks a re-create
        sink.forget_tombstones(unknown)
    redo = drift.redo
    if redo:
        _raise_below_sink(manifest, sink, redo)
        manifest.index_state.forget(target.key, redo)
        target.reindex(redo)
    return len(drift.orphans) + len(redo)


def _raise_below_sink(manifest: Manifest, sink: Sink, document_ids: list[str]) -> None:
    """Give each active document the sink holds at a newer revision than the manifest (a
    manifest restored from a backup) a revision above the sink's: else its re-apply, and
    every later edit, would be refused as stale for good. Revisions never go backwards."""
    docs = t.documents.c
    for doc_id in document_ids:
        held = sink.revision(doc_id)
        if held is None:
            continue
        with begin_write(manifest.engine) as conn:
            conn.execute(
                update(t.documents)
                .where(docs.document_id == doc_id, docs.state == ACTIVE, docs.revision <= held)
                .values(revision=held + 1, updated_at=utcnow())
            )
