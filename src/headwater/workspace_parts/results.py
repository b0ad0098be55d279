"""Report shapes shared by the CLI's ``--json`` output and the Python API."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from headwater.clock import iso, utcnow
from headwater.indexer.report import IndexReport
from headwater.manifest.records import DocumentRecord, FailureRecord
from headwater.sync.report import RunReport

if TYPE_CHECKING:
    from headwater.workspace import Workspace


@dataclass
class SyncResult:
    runs: list[RunReport] = field(default_factory=list)
    index: IndexReport = field(default_factory=IndexReport)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"runs": [r.as_dict() for r in self.runs]}

    @property
    def failed(self) -> bool:
        return any(r.status == "failed" for r in self.runs)


def access_dict(record: DocumentRecord) -> dict[str, Any]:
    access = record.access
    return {"users": list(access.users), "groups": list(access.groups), "public": access.public}


def document_report(
    record: DocumentRecord, applied: dict[str, tuple[int, int]], index_names: list[str]
) -> dict[str, Any]:
    indexes: dict[str, Any] = {}
    for name in index_names:
        revision, chunks = applied.get(name, (None, 0))
        indexes[name] = {"applied_revision": revision, "chunks": chunks}
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
        "indexes": indexes,
    }


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


def status_report(ws: Workspace) -> dict[str, Any]:
    from headwater.scheduler.plans import schedule_status

    last_runs = ws.last_runs()
    schedule = schedule_status(ws)
    sources = []
    for section in ws.config.source:
        counts = ws.manifest.failures.counts(section.id)
        last = last_runs.get(section.id)
        sources.append(
            {
                "id": section.id,
                "type": section.type,
                "documents": ws.manifest.count_documents(section.id, "active"),
                "deleted": ws.manifest.count_documents(section.id, "deleted"),
                "failures_open": counts["open"],
                "last_run": last.as_dict() if last else None,
                **schedule.get(section.id, {}),
            }
        )
    totals = ws.manifest.failures.counts()
    oldest = totals["oldest"]
    age = None
    if oldest is not None:
        from headwater.clock import as_utc

        age = round((utcnow() - as_utc(oldest)).total_seconds(), 1)  # type: ignore[arg-type]
    indexes = {
        s.name: {
            "type": s.type,
            "index_version": ws.index_version(s),
            "pending": ws.manifest.index_state.pending_count(
                ws.live_generation(s.name).key,
                ws.pipelines.version(ws.live_generation(s.name)),
            ),
        }
        for s in ws.index_sections
    }
    return {
        "sources": sources,
        "pipeline_version": ws.pipeline_version,
        "content_version": ws.content_version,
        "indexes": indexes,
        "dlq": {
            "depth": totals["dlq"],
            "oldest_age_s": age,
            "failed_deletes": totals["deletes"],
        },
    }
