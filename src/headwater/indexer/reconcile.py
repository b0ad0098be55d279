"""Reconcile: compare the manifest with what each sink really holds, and repair drift.

The manifest says, per document and sink, which revision was applied and how many
chunks it had. A sink's inventory says what it holds. Differences are drift: a missing
document, a wrong revision or chunk count, or an orphan (a document the manifest does
not know or has tombstoned). Repair re-applies exactly those documents through the
normal indexer and deletes orphans. Pending work (a revision not yet applied) is not
drift. Safe to run at any time, also during a sync.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from headwater.manifest.records import ACTIVE

if TYPE_CHECKING:
    from headwater.workspace import Workspace

SAMPLE = 50


@dataclass
class SinkDrift:
    checked: int = 0
    missing: list[str] = field(default_factory=list)
    revision_mismatch: list[str] = field(default_factory=list)
    chunk_mismatch: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    repaired: int = 0

    @property
    def drifted(self) -> int:
        return (
            len(self.missing)
            + len(self.revision_mismatch)
            + len(self.chunk_mismatch)
            + len(self.orphans)
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "in_sync": self.drifted == 0,
            "missing": len(self.missing),
            "revision_mismatch": len(self.revision_mismatch),
            "chunk_mismatch": len(self.chunk_mismatch),
            "orphans": len(self.orphans),
            "repaired": self.repaired,
            "examples": (
                self.missing + self.revision_mismatch + self.chunk_mismatch + self.orphans
            )[:SAMPLE],
        }


def reconcile(
    ws: Workspace, *, sink_name: str | None = None, repair: bool = False
) -> dict[str, Any]:
    names = [s.name for s in ws.index_sections if sink_name is None or s.name == sink_name]
    if sink_name is not None and not names:
        ws.sink(sink_name)  # raises the ConfigError naming the configured indexes
    report: dict[str, Any] = {}
    for name in names:
        drift = _compare(ws, name)
        if repair and drift.drifted:
            drift.repaired = _repair(ws, name, drift)
        report[name] = drift.as_dict()
    return {"sinks": report, "repair": repair}


def _compare(ws: Workspace, name: str) -> SinkDrift:
    sink = ws.sink(name)
    held = {row.document_id: (row.revision, row.chunks) for row in sink.inventory()}
    drift = SinkDrift()
    seen: set[str] = set()
    after = ""
    while True:
        records = ws.manifest.documents_after(after, 1000)
        if not records:
            break
        after = records[-1].document_id
        applied = ws.manifest.index_state.applied_map(name, [r.document_id for r in records])
        for record in records:
            doc_id = record.document_id
            seen.add(doc_id)
            drift.checked += 1
            in_sink = held.get(doc_id)
            if record.state != ACTIVE:
                if in_sink is not None and in_sink[1] > 0:
                    drift.orphans.append(doc_id)
                continue
            expected = applied.get(doc_id)
            if expected is None:
                if in_sink is not None:
                    drift.orphans.append(doc_id)  # never confirmed, yet present
                continue
            if in_sink is None:
                if expected[1] > 0:
                    drift.missing.append(doc_id)
            elif in_sink[0] != expected[0]:
                drift.revision_mismatch.append(doc_id)
            elif in_sink[1] != expected[1]:
                drift.chunk_mismatch.append(doc_id)
    drift.orphans.extend(d for d in held if d not in seen)
    return drift


def _repair(ws: Workspace, name: str, drift: SinkDrift) -> int:
    sink = ws.sink(name)
    for doc_id in drift.orphans:
        record = ws.manifest.document(doc_id)
        revision = max(sink.revision(doc_id) or 0, record.revision if record else 0)
        sink.delete(doc_id, revision)
        if record is not None and record.state == ACTIVE:
            ws.manifest.index_state.forget(name, [doc_id])
    redo = drift.missing + drift.revision_mismatch + drift.chunk_mismatch
    redo += [
        d for d in drift.orphans if (r := ws.manifest.document(d)) is not None and r.state == ACTIVE
    ]
    if redo:
        ws.manifest.index_state.forget(name, redo)
        ws.index(only=redo)
    return len(drift.orphans) + len(drift.missing + drift.revision_mismatch + drift.chunk_mismatch)
