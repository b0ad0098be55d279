"""The workspace's typed reports: sync, status, document; the CLI prints ``as_dict()``.

Each report is built from the parts it reads (the manifest, plain lists of the
configured sources and indexes), never from a Workspace, so the workspace stays a thin
facade that wires parts and passes them here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from headwater.clock import as_utc, iso, utcnow
from headwater.indexer.report import IndexReport
from headwater.jsonview import JsonView
from headwater.manifest.records import DocumentRecord, FailureRecord
from headwater.manifest.store import Manifest
from headwater.sync.report import RunReport, SkippedRun


@dataclass
class SyncResult:
    runs: list[RunReport] = field(default_factory=list)
    index: IndexReport = field(default_factory=IndexReport)
    warnings: list[str] = field(default_factory=list)
    duration_s: float = 0.0  # the whole sync's wall time; index.duration_s is indexing's
    skipped: list[SkippedRun] = field(default_factory=list)  # busy: another process's

    def as_dict(self) -> dict[str, Any]:
        return {
            "runs": [r.as_dict() for r in self.runs],
            "skipped": [s.as_dict() for s in self.skipped],
            "index": self.index.as_dict(),
            "warnings": list(self.warnings),
            "duration_s": round(self.duration_s, 3),
        }

    @property
    def failed(self) -> bool:
        return any(r.status == "failed" for r in self.runs)


def access_dict(record: DocumentRecord) -> dict[str, Any]:
    access = record.access
    return {"users": list(access.users), "groups": list(access.groups), "public": access.public}


@dataclass(frozen=True, eq=False)
class DocumentReport(JsonView):
    """Everything the manifest knows about one document, and its state in each index."""

    record: DocumentRecord
    indexes: Mapping[str, Mapping[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        record = self.record
        return {
            "document_id": record.document_id,
            "source": record.source_id,
            "object_id": record.object_id,
            "locator": record.locator,
            "title": record.title,
            "state": record.state,
            "revision": record.revision,
            "checksum": record.checksum,
            "source_version": record.source_version,
            "pipeline_version": record.pipeline_version,
            "access": access_dict(record),
            "metadata": dict(record.metadata),
            "indexes": {name: dict(state) for name, state in self.indexes.items()},
        }

    def items(self) -> Any:
        return self.as_dict().items()


def document_report(
    record: DocumentRecord, applied: dict[str, tuple[int, int]], index_names: list[str]
) -> DocumentReport:
    indexes: dict[str, Any] = {}
    for name in index_names:
        revision, chunks = applied.get(name, (None, 0))
        indexes[name] = {"applied_revision": revision, "chunks": chunks}
    return DocumentReport(record, indexes)


def failure_dict(f: FailureRecord) -> dict[str, Any]:
    return {
        "id": f.entry_id,
        "source": f.source_id,
        "object_id": f.object_id,
        "document_id": f.document_id,
        "locator": f.locator,
        "stage": f.stage,
        "error_class": f.error_class,
        "message": f.message,
        "pipeline_version": f.pipeline_version,
        "attempts": f.attempts,
        "permanent": f.permanent,
        "status": f.status,
        "priority": f.priority,
        "first_failed_at": iso(f.first_failed_at),
        "last_failed_at": iso(f.last_failed_at),
    }


@dataclass(frozen=True)
class IndexInfo:
    """One configured index as status shows it."""

    name: str
    type: str
    index_version: str  # the config's
    live_key: str = ""  # the live generation's name in the applied state ("" = name)
    live_version: str = ""  # the version the live generation is kept at ("" = index_version)


@dataclass(frozen=True, eq=False)
class StatusReport(JsonView):
    """Sources (configured, then unconfigured ones the manifest still holds), versions,
    indexes with their pending work, and the dead-letter queue."""

    sources: Sequence[Mapping[str, Any]]
    pipeline_version: str
    content_version: str
    indexes: Mapping[str, Mapping[str, Any]]
    dlq: Mapping[str, Any]
    executor: Mapping[str, Any] = field(default_factory=lambda: {"type": "local"})

    def as_dict(self) -> dict[str, Any]:
        return {
            "sources": [dict(s) for s in self.sources],
            "executor": dict(self.executor),
            "pipeline_version": self.pipeline_version,
            "content_version": self.content_version,
            "indexes": {name: dict(info) for name, info in self.indexes.items()},
            "dlq": dict(self.dlq),
        }


def _source_row(
    manifest: Manifest, source_id: str, source_type: str, last: RunReport | None
) -> dict[str, Any]:
    return {
        "id": source_id,
        "type": source_type,
        "documents": manifest.count_documents(source_id, "active"),
        "deleted": manifest.count_documents(source_id, "deleted"),
        "failures_open": manifest.failures.counts(source_id)["open"],
        "last_run": last.as_dict() if last else None,
    }


def unconfigured_sources(manifest: Manifest, configured: set[str]) -> list[dict[str, Any]]:
    """Sources the manifest still holds but the config no longer names (never searched;
    `headwater source remove ID` deletes them)."""
    from headwater.sync.removal import known_source_ids

    found = []
    for source_id, source_type in sorted(known_source_ids(manifest).items()):
        if source_id in configured:
            continue
        record = manifest.runs.latest(source_id)
        last = RunReport.from_record(record, source_type) if record else None
        found.append({**_source_row(manifest, source_id, source_type, last), "configured": False})
    return found


def status_report(
    manifest: Manifest,
    sources: Sequence[tuple[str, str]],
    schedule: Mapping[str, Mapping[str, Any]],
    indexes: Sequence[IndexInfo],
    *,
    pipeline_version: str,
    content_version: str,
    executor: Mapping[str, Any] | None = None,
) -> StatusReport:
    """``sources`` are the configured (id, type) pairs, ``schedule`` their schedule
    fields by id."""
    rows = []
    for source_id, source_type in sources:
        record = manifest.runs.latest(source_id)
        last = RunReport.from_record(record, source_type) if record else None
        row = _source_row(manifest, source_id, source_type, last)
        rows.append({**row, **schedule.get(source_id, {}), "configured": True})
    rows.extend(unconfigured_sources(manifest, {source_id for source_id, _ in sources}))
    totals = manifest.failures.counts()
    oldest = totals["oldest"]
    age = None
    if oldest is not None:
        age = round((utcnow() - as_utc(oldest)).total_seconds(), 1)  # type: ignore[arg-type]
    return StatusReport(
        sources=rows,
        pipeline_version=pipeline_version,
        content_version=content_version,
        indexes={
            i.name: {
                "type": i.type,
                "index_version": i.index_version,
                "pending": manifest.index_state.pending_count(
                    i.live_key or i.name, i.live_version or i.index_version
                ),
            }
            for i in indexes
        },
        dlq={"depth": totals["dlq"], "oldest_age_s": age, "failed_deletes": totals["deletes"]},
        executor=executor or {"type": "local"},
    )
