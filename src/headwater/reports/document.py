"""One document as the manifest knows it, and one failure record, as JSON-shaped reports.

``headwater doc`` shows a ``DocumentReport`` (the record and its state in each index);
``headwater failures`` and the admin endpoints show ``failure_dict`` rows. Both are built
from manifest records, never from a Workspace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.clock import iso
from headwater.jsonview import JsonView
from headwater.manifest.records import DocumentRecord, FailureRecord


def access_dict(record: DocumentRecord) -> dict[str, Any]:
    """The document's ACL as JSON."""
    access = record.access
    return {"users": list(access.users), "groups": list(access.groups), "public": access.public}


@dataclass(frozen=True, eq=False)
class AppliedState(JsonView):
    """A document's state in one index: the revision it applied and its chunk count."""

    applied_revision: int | None
    chunks: int

    def as_dict(self) -> dict[str, Any]:
        """The JSON the command prints."""
        return {"applied_revision": self.applied_revision, "chunks": self.chunks}


@dataclass(frozen=True, eq=False)
class DocumentReport(JsonView):
    """Everything the manifest knows about one document, and its state in each index."""

    record: DocumentRecord
    indexes: Mapping[str, AppliedState]

    def as_dict(self) -> dict[str, Any]:
        """The JSON ``headwater doc --json`` prints."""
        record = self.record
        unavailable = record.metadata.get("content") == "unavailable"
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
            # "unavailable" for a metadata-only document (sync.unavailable), with why
            "content": "unavailable" if unavailable else "available",
            "content_reason": record.metadata.get("content_reason") if unavailable else None,
            "indexes": {name: state.as_dict() for name, state in self.indexes.items()},
        }

    def items(self) -> Any:
        """The JSON's items, as a dict's."""
        return self.as_dict().items()


def document_report(
    record: DocumentRecord, applied: dict[str, tuple[int, int]], index_names: list[str]
) -> DocumentReport:
    """The document's report: ``applied`` (revision, chunks) per index name that has it."""
    indexes: dict[str, AppliedState] = {}
    for name in index_names:
        revision, chunks = applied.get(name, (None, 0))
        indexes[name] = AppliedState(revision, chunks)
    return DocumentReport(record, indexes)


def failure_dict(f: FailureRecord) -> dict[str, Any]:
    """One failure record as ``headwater failures --json`` prints it."""
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
