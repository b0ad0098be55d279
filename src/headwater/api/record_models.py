"""The response bodies about documents and failures: a document, failure rows, the DLQ,
fixes, redrives, dropped entries and reconcile's drift.

As in ``headwater.api.models`` (which re-exports every name here): keys in the JSON's
order, with the types the values have; ``extra="allow"`` never drops a key.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from headwater.api.body import Body


class DocumentAccess(Body):
    """Who may read a document."""

    users: list[str]
    groups: list[str]
    public: bool


class AppliedState(Body):
    """A document's state in one index: the revision applied and its chunks."""

    applied_revision: int | None
    chunks: int


class DocumentBody(Body):
    """``headwater doc show --json``."""

    document_id: str
    source: str
    object_id: str
    locator: str
    title: str
    state: str
    revision: int
    checksum: str | None
    source_version: str | None
    pipeline_version: str
    access: DocumentAccess
    metadata: dict[str, Any]
    content: str  # "available", or "unavailable" for a metadata-only document
    content_reason: str | None  # why the content is unavailable
    indexes: dict[str, AppliedState]


class Failure(Body):
    """One failure record (``headwater failures --json``, a DLQ entry)."""

    id: int
    source: str
    object_id: str
    document_id: str
    locator: str
    stage: str
    error_class: str
    message: str
    pipeline_version: str
    attempts: int
    permanent: bool
    status: str
    priority: int
    first_failed_at: str | None
    last_failed_at: str | None


class FailuresBody(Body):
    """``{"failures": [...]}``: open failure records."""

    failures: list[Failure]


class DlqBody(Body):
    """``{"entries": [...]}``: dead-lettered failure records."""

    entries: list[Failure]


class FixBody(Body):
    """What to do about a group of failures: a line to write ``where``, and why."""

    kind: str
    line: str
    where: str
    detail: str


class FailureCause(Body):
    """A group of open failures with one cause, and its fix."""

    source: str
    stage: str
    error_class: str
    extension: str | None
    label: str
    count: int
    dead: int
    retrying: int
    examples: list[str]
    fix: FixBody


class FailureSummaryBody(Body):
    """``headwater failures --summary --json``: the groups, largest first."""

    total: int
    groups: list[FailureCause]


class RedriveSkipped(Body):
    """A dead entry a redrive left dead, and why."""

    id: int
    source: str
    stage: str
    object_id: str
    reason: str


class RedriveBody(Body):
    """``headwater dlq redrive --json``."""

    redriven: int
    resolved: int
    still_failing: int
    skipped: list[RedriveSkipped] | None = Field(default=None, description="Only when any.")


class DroppedBody(Body):
    """``{"dropped": n}``: DLQ entries forgotten."""

    dropped: int


class IndexDrift(Body):
    """One index checked by reconcile: the drift found, and what was repaired."""

    checked: int
    in_sync: bool
    missing: int
    revision_mismatch: int
    chunk_mismatch: int
    unconfirmed: int
    orphans: int
    repaired: int
    examples: list[str]


class ReconcileBody(Body):
    """``headwater reconcile --json``."""

    sinks: dict[str, IndexDrift]
    repair: bool
