"""Typed records read from and written to the manifest.

Rows never leave the manifest package as SQLAlchemy rows or dicts: they become these
frozen dataclasses, and writes are described by them too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from headwater.types import Access, MetadataValue

ACTIVE = "active"
DELETED = "deleted"

SOURCE_STAGES = ("enumerate", "fetch", "parse")


@dataclass(frozen=True)
class DocumentRecord:
    document_id: str
    source_id: str
    object_id: str
    locator: str
    title: str
    media_type: str | None
    source_version: str | None
    checksum: str | None
    signature: str | None
    pipeline_version: str
    revision: int
    sequence: int | None
    state: str
    acl: tuple[str, ...]
    metadata: Mapping[str, MetadataValue]
    last_seen_run: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def access(self) -> Access:
        return Access.from_principals(self.acl)

    @classmethod
    def from_row(cls, row: Any) -> DocumentRecord:
        m = row._mapping
        return cls(
            document_id=m["document_id"],
            source_id=m["source_id"],
            object_id=m["object_id"],
            locator=m["locator"],
            title=m["title"],
            media_type=m["media_type"],
            source_version=m["source_version"],
            checksum=m["checksum"],
            signature=m["signature"],
            pipeline_version=m["pipeline_version"],
            revision=m["revision"],
            sequence=m["sequence"],
            state=m["state"],
            acl=tuple(json.loads(m["acl"])),
            metadata=json.loads(m["metadata"]),
            last_seen_run=m["last_seen_run"],
            created_at=m["created_at"],
            updated_at=m["updated_at"],
        )


@dataclass(frozen=True)
class DocumentWrite:
    """A full documents row to insert (``is_new``) or update."""

    document_id: str
    source_id: str
    object_id: str
    locator: str
    title: str
    media_type: str | None
    source_version: str | None
    checksum: str | None
    signature: str | None
    pipeline_version: str
    revision: int
    sequence: int | None
    state: str
    acl: tuple[str, ...]
    metadata: Mapping[str, MetadataValue]
    last_seen_run: str | None
    is_new: bool

    def values(self) -> dict[str, Any]:
        return {
            "document_id": self.document_id,
            "source_id": self.source_id,
            "object_id": self.object_id,
            "locator": self.locator,
            "title": self.title,
            "media_type": self.media_type,
            "source_version": self.source_version,
            "checksum": self.checksum,
            "signature": self.signature,
            "pipeline_version": self.pipeline_version,
            "revision": self.revision,
            "sequence": self.sequence,
            "state": self.state,
            "acl": json.dumps(list(self.acl)),
            "metadata": json.dumps(dict(self.metadata), sort_keys=True),
            "last_seen_run": self.last_seen_run,
        }


@dataclass(frozen=True)
class TombstoneWrite:
    document_id: str
    source_id: str
    object_id: str
    revision: int
    sequence: int | None
    reason: str


@dataclass(frozen=True)
class FailureWrite:
    source_id: str
    object_id: str
    document_id: str
    locator: str
    stage: str
    error_class: str
    message: str
    pipeline_version: str
    source_version: str | None
    fetch_ref: str | None
    permanent: bool


@dataclass(frozen=True)
class FailureRecord:
    entry_id: int
    source_id: str
    object_id: str
    document_id: str
    locator: str
    stage: str
    error_class: str
    message: str
    pipeline_version: str
    source_version: str | None
    fetch_ref: str | None
    attempts: int
    permanent: bool
    status: str
    priority: int
    first_failed_at: datetime
    last_failed_at: datetime
    resolved_at: datetime | None
    run_id: str | None

    @classmethod
    def from_row(cls, row: Any) -> FailureRecord:
        m = dict(row._mapping)
        m["permanent"] = bool(m["permanent"])
        return cls(**m)


@dataclass
class RunCounts:
    seen: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0
    stale: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "seen": self.seen,
            "new": self.new,
            "changed": self.changed,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "failed": self.failed,
            "stale": self.stale,
        }


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    source_id: str
    status: str
    window_start: datetime | None
    window_end: datetime
    started_at: datetime
    finished_at: datetime | None
    counts: RunCounts
    duration_s: float
    error: str | None
    prune: dict[str, Any] | None
    attempts: int

    @classmethod
    def from_row(cls, row: Any) -> RunRecord:
        m = row._mapping
        return cls(
            run_id=m["run_id"],
            source_id=m["source_id"],
            status=m["status"],
            window_start=m["window_start"],
            window_end=m["window_end"],
            started_at=m["started_at"],
            finished_at=m["finished_at"],
            counts=RunCounts(
                **{
                    k: m[k]
                    for k in ("seen", "new", "changed", "unchanged", "deleted", "failed", "stale")
                }
            ),
            duration_s=m["duration_s"],
            error=m["error"],
            prune=json.loads(m["prune"]) if m["prune"] else None,
            attempts=m["attempts"],
        )


@dataclass
class BatchCommit:
    """Everything one batch changes in the manifest, committed in one transaction."""

    writes: list[DocumentWrite] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)
    tombstones: list[TombstoneWrite] = field(default_factory=list)
    cleared_tombstones: list[str] = field(default_factory=list)
    failures: list[FailureWrite] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    still_failing: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (
            self.writes
            or self.seen
            or self.tombstones
            or self.failures
            or self.resolved
            or self.cleared_tombstones
        )
