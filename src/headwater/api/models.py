"""The response bodies of API v1 as pydantic models: what ``/openapi.json`` documents.

Each model declares the keys of the JSON its endpoint answers today, in the order the
JSON has them, with the types the values have (a ``float`` only where the value is
always a float: pydantic would turn an integer into ``3.0``). Keys a body only sometimes
carries (a run's ``error``, a push result's ``current_version``) default to None and
the route answers with ``response_model_exclude_unset``, so a key absent from the
workspace's report stays absent from the answer. ``extra="allow"`` keeps any key a
report gains before its model does: a body never loses a key to its schema
(tests/api/test_api_models.py holds every tested body to having none undeclared).
``Body`` lives in ``headwater.api.body``; the bodies about documents and failures in
``headwater.api.record_models``; this module names them all.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from headwater.api.body import Body
from headwater.api.record_models import (
    AppliedState,
    DlqBody,
    DocumentAccess,
    DocumentBody,
    DroppedBody,
    Failure,
    FailureCause,
    FailuresBody,
    FailureSummaryBody,
    FixBody,
    IndexDrift,
    ReconcileBody,
    RedriveBody,
    RedriveSkipped,
)

# The bodies about documents and failures live in record_models; every body is named here.
__all__ = [
    "AppliedState",
    "Body",
    "DlqBody",
    "DlqStatus",
    "DocumentAccess",
    "DocumentBody",
    "DroppedBody",
    "EventsStatus",
    "ExecutorStatus",
    "Failure",
    "FailureCause",
    "FailureSummaryBody",
    "FailuresBody",
    "FixBody",
    "HealthBody",
    "HintState",
    "HookBody",
    "IndexDrift",
    "IndexStatus",
    "IndexesBody",
    "JobBody",
    "LastRun",
    "Lease",
    "PauseBody",
    "PushBatchBody",
    "PushResultBody",
    "ReadyBody",
    "ReconcileBody",
    "RedriveBody",
    "RedriveSkipped",
    "RunCounts",
    "RunRow",
    "RunsBody",
    "SearchBody",
    "SearchHit",
    "SourceStatus",
    "SourcesBody",
    "StatusBody",
    "Window",
]

# -- search ---------------------------------------------------------------------------


class SearchHit(Body):
    """One result of ``POST /v1/search`` (``headwater search --json``)."""

    document_id: str
    title: str
    locator: str
    source: str
    score: float
    snippet: str
    chunk: str
    chunk_id: str
    ordinal: int


class SearchBody(Body):
    """``{"results": [...]}``, best first."""

    results: list[SearchHit]


# -- runs and status ------------------------------------------------------------------


class Window(Body):
    """The time window a run read (ISO 8601 or null)."""

    start: str | None
    end: str | None


class RunCounts(Body):
    """What a run saw and did, by outcome."""

    seen: int
    new: int
    changed: int
    unchanged: int
    deleted: int
    failed: int
    stale: int


class LastRun(Body):
    """A source's latest run as ``headwater sync --json`` reports it."""

    run_id: str
    source: str
    status: str
    window: Window
    counts: RunCounts
    duration_s: float
    error: str | None = Field(default=None, description="Only when the run failed.")
    fetched: int | None = Field(default=None, description="Only when known.")
    deletes: str | None = Field(default=None, description="Only when deletes were not done.")
    note: str | None = None
    prune_blocked: dict[str, Any] | None = None
    resumed: bool | None = Field(default=None, description="Only when true.")
    expected: int | None = Field(
        default=None,
        description="Only while the run lasts and the source's API gave a total: the items "
        "its listing expects.",
    )
    eta_s: float | None = Field(
        default=None,
        description="With `expected`: seconds left at the rate so far (null before the "
        "first item).",
    )


class Lease(Body):
    """The process holding a source's lease, and when it expires unless renewed."""

    owner: str
    expires_at: str | None


class HintState(Body):
    """A source's hints (``headwater hints``): queued, the last one, the last read's lag."""

    source: str
    queued: int
    last_hint_at: str | None
    last_origin: str | None
    last_read_at: str | None
    last_lag_s: float | None
    received: int
    read: int
    dropped: int


class SubscriptionStatus(Body):
    """A Graph subscription or Drive channel the scheduler keeps alive for a source."""

    scope: str
    id: str | None
    expires_at: str | None
    renewed_at: str | None
    failures: int
    last_error: str | None
    retry_at: str | None


class SourceStatus(Body):
    """One source in ``headwater status --json`` (schedule fields: configured ones only)."""

    id: str
    type: str
    documents: int
    deleted: int
    failures_open: int
    last_run: LastRun | None
    paused: bool | None = None
    next_due_at: str | None = None
    backoff_until: str | None = None
    lease: Lease | None = None
    hints: HintState | None = None
    configured: bool
    throttled_until: str | None = Field(
        default=None,
        description="While the vendor throttles the source's credential (a 429): until when.",
    )
    subscriptions: list[SubscriptionStatus] | None = Field(
        default=None,
        description="Vendor subscriptions the scheduler renews (with `notification_url`).",
    )


class ExecutorStatus(Body):
    """``{"type": "local"}``, or the Celery or NATS executor's queues, leases and claims."""

    type: str
    running: dict[str, str] | None = None
    queued: dict[str, str] | None = None
    index_claims: dict[str, int] | None = None
    checked_at: str | None = None
    queues: dict[str, int | str] | None = Field(
        default=None, description='Depth per queue, or {"error": ...} when the broker is down.'
    )


class IndexStatus(Body):
    """One configured index: its type, config version, the live generation's version
    (the one searches read, as a rebuild switched it) and pending documents."""

    type: str
    index_version: str
    live_version: str
    pending: int


class DlqStatus(Body):
    """The dead-letter queue: depth, oldest entry's age, failed deletes."""

    depth: int
    oldest_age_s: float | None
    failed_deletes: int


class EventsStatus(Body):
    """``[events]``: the target type, events waiting in the outbox, the last drain's error."""

    type: str
    outbox_depth: int
    last_error: str | None


class StatusBody(Body):
    """``headwater status --json``."""

    sources: list[SourceStatus]
    executor: ExecutorStatus
    pipeline_version: str
    content_version: str
    indexes: dict[str, IndexStatus]
    dlq: DlqStatus
    events: EventsStatus | None = None  # null without an [events] table


class HookBody(Body):
    """``POST /v1/hooks/{source_id}``: how many hints the delivery queued (202)."""

    queued: int


class SourcesBody(Body):
    """``{"sources": [...]}``: status's sources."""

    sources: list[SourceStatus]


class IndexesBody(Body):
    """``{"indexes": {...}}``: status's indexes."""

    indexes: dict[str, IndexStatus]


class JobBody(Body):
    """A background sync job (``POST /v1/sources/{id}/sync``, ``GET /v1/jobs/{id}``)."""

    job_id: str
    source: str
    status: str = Field(description="queued, running, done or failed")
    run_id: str | None
    error: str | None


class PauseBody(Body):
    """``headwater source pause/resume --json``."""

    source: str
    paused: bool
    changed: bool


class RunRow(Body):
    """One run as ``headwater runs --json`` lists it."""

    run_id: str
    short_id: str
    source: str
    kind: str
    status: str
    owner: str | None
    started_at: str | None
    finished_at: str | None
    duration_s: float
    phases: dict[str, float] | None = Field(
        default=None,
        description="Seconds per phase: read, fetch_parse, commit, prune (null for a run "
        "that never started or was recorded before phases were kept).",
    )
    window: Window
    counts: RunCounts
    fetched: int | None
    error: str | None
    resumed: bool


class RunsBody(Body):
    """``{"runs": [...]}``, newest first."""

    runs: list[RunRow]


class HealthBody(Body):
    """``{"status": "ok"}``: the process is up."""

    status: str


class ReadyBody(Body):
    """Readiness: each check's answer; ``error`` names the failing ones (503)."""

    status: str = Field(description="ready or not ready")
    checks: dict[str, str]
    error: str | None = Field(default=None, description="Only when not ready.")


# -- push -----------------------------------------------------------------------------


class PushResultBody(Body):
    """What one push operation did: new, changed, unchanged, deleted, stale, failed or
    conflict (the last three only within a batch)."""

    object_id: str
    document_id: str
    version: int
    status: str
    current_version: int | None = Field(default=None, description="Only when stale.")
    error: str | None = Field(default=None, description="Only when failed or conflict.")


class PushBatchBody(Body):
    """``{"results": [...]}``: one result per operation, in order."""

    results: list[PushResultBody]
