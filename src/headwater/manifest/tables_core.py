"""The manifest's core tables: sources, runs, documents and what indexes applied.

One row per source object (``documents``), one per document and index
(``document_indexes``: the applied revision, so pending work is a query, not a queue),
plus runs, checkpoints, leases, tombstones, failures (which double as the dead-letter
queue), enumeration snapshots for set-difference deletes, the manifest's identity, the
revision floors of purged documents, the group memberships synced from sources and the
index generations. ``schema`` is the one place callers import tables from.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    literal_column,
)
from sqlalchemy.sql.elements import ColumnElement

metadata = MetaData()

TZ = DateTime(timezone=True)

sources = Table(
    "sources",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("type", String(50), nullable=False),
    Column("next_cursor", Text, nullable=True),
    Column("last_prune_at", TZ, nullable=True),
    Column("created_at", TZ, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(36), primary_key=True),
    Column("source_id", String(200), ForeignKey("sources.source_id"), nullable=False),
    Column("status", String(30), nullable=False),
    Column("window_start", TZ, nullable=True),
    Column("window_end", TZ, nullable=False),
    Column("started_at", TZ, nullable=False),
    Column("finished_at", TZ, nullable=True),
    Column("seen", Integer, nullable=False, default=0),
    Column("new", Integer, nullable=False, default=0),
    Column("changed", Integer, nullable=False, default=0),
    Column("unchanged", Integer, nullable=False, default=0),
    Column("deleted", Integer, nullable=False, default=0),
    Column("failed", Integer, nullable=False, default=0),
    Column("stale", Integer, nullable=False, default=0),
    Column("duration_s", Float, nullable=False, default=0.0),
    Column("error", Text, nullable=True),
    Column("prune", Text, nullable=True),
    Column("attempts", Integer, nullable=False, default=1),
    Column("owner", String(200), nullable=True),
    Column("kind", String(10), nullable=True),
    Column("fetched", Integer, nullable=True),
    Column("phases", Text, nullable=True),  # migration 0017: seconds per phase (JSON)
    # migration 0018: the items a running sync's listing expects, when the API says
    Column("expected", Integer, nullable=True),
    Index("ix_runs_source_started", "source_id", "started_at"),
    Index("ix_runs_started", "started_at"),  # migration 0016: every source's runs listed
)

SHORT_RUN_ID = 8  # characters of a run id that tables show (``headwater runs``)


def short_run_id(column: ColumnElement[str]) -> ColumnElement[str]:
    """``substr(run_id, 1, 8)`` with literal bounds, the expression ``ix_runs_short_id``
    indexes (a bound parameter there would keep the planner from matching the index)."""
    return func.substr(column, literal_column("1"), literal_column(str(SHORT_RUN_ID)))


# Migration 0016: which runs share a shown short id, answered without reading every run.
Index("ix_runs_short_id", short_run_id(runs.c.run_id))

# The scheduler's per-source switches (migration 0002); no row means "not paused".
# ``changed_at``/``changed_by`` describe the pause switch; ``last_permissions_at``
# (migration 0008) is when the scheduler last ran the source's permission sync.
source_schedule = Table(
    "source_schedule",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("paused", Integer, nullable=False, default=0),
    Column("changed_at", TZ, nullable=False),
    Column("changed_by", String(200), nullable=True),
    Column("last_permissions_at", TZ, nullable=True),
)

checkpoints = Table(
    "checkpoints",
    metadata,
    Column("run_id", String(36), ForeignKey("runs.run_id"), primary_key=True),
    Column("source_id", String(200), nullable=False),
    Column("cursor", Text, nullable=False),
    Column("saved_at", TZ, nullable=False),
)

leases = Table(
    "leases",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("owner", String(200), nullable=False),
    Column("epoch", Integer, nullable=False, default=1),
    Column("expires_at", TZ, nullable=False),
    # Migration 0008: 1 once the holder released it; takeovers of an unreleased lease.
    Column("released", Integer, nullable=False, server_default="1"),
    Column("takeovers", Integer, nullable=False, server_default="0"),
)

documents = Table(
    "documents",
    metadata,
    Column("document_id", String(64), primary_key=True),
    Column("source_id", String(200), nullable=False),
    Column("object_id", Text, nullable=False),
    Column("locator", Text, nullable=False),
    Column("title", Text, nullable=False),
    Column("media_type", String(200), nullable=True),
    Column("source_version", Text, nullable=True),
    Column("checksum", String(64), nullable=True),
    Column("signature", String(64), nullable=True),
    Column("pipeline_version", String(32), nullable=False),
    Column("revision", Integer, nullable=False),
    Column("sequence", BigInteger, nullable=True),
    Column("state", String(10), nullable=False),
    Column("acl", Text, nullable=False),
    Column("metadata", Text, nullable=False),
    Column("last_seen_run", String(36), nullable=True),
    Column("created_at", TZ, nullable=False),
    Column("updated_at", TZ, nullable=False),
    Index("ix_documents_source_state", "source_id", "state"),
    Index("ix_documents_source_object", "source_id", "object_id", unique=True),
    Index("ix_documents_checksum", "checksum"),  # migration 0008: the content-store walk
)

document_indexes = Table(
    "document_indexes",
    metadata,
    Column("document_id", String(64), primary_key=True),
    Column("index_name", String(100), primary_key=True),
    Column("applied_revision", Integer, nullable=False),
    Column("applied_signature", String(64), nullable=True),
    Column("pipeline_version", String(32), nullable=False),
    Column("chunks", Integer, nullable=False),
    Column("applied_at", TZ, nullable=False),
    # migration 0020: the admin chart sampler's "applied since the last sample"
    Index("ix_document_indexes_applied_at", "applied_at"),
)

tombstones = Table(
    "tombstones",
    metadata,
    Column("document_id", String(64), primary_key=True),
    Column("source_id", String(200), nullable=False),
    Column("object_id", Text, nullable=False),
    Column("revision", Integer, nullable=False),
    Column("sequence", BigInteger, nullable=True),
    Column("reason", String(30), nullable=False),
    Column("detected_at", TZ, nullable=False),
    Column("completed_at", TZ, nullable=True),
)

failures = Table(
    "failures",
    metadata,
    Column("entry_id", Integer, primary_key=True, autoincrement=True),
    Column("source_id", String(200), nullable=False),
    Column("object_id", Text, nullable=False),
    Column("document_id", String(64), nullable=False),
    Column("locator", Text, nullable=False),
    Column("stage", String(100), nullable=False),
    Column("error_class", String(100), nullable=False),
    Column("message", Text, nullable=False),
    Column("pipeline_version", String(32), nullable=False),
    Column("source_version", Text, nullable=True),
    Column("fetch_ref", Text, nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("permanent", Integer, nullable=False),
    Column("status", String(12), nullable=False),
    Column("priority", Integer, nullable=False),
    Column("first_failed_at", TZ, nullable=False),
    Column("last_failed_at", TZ, nullable=False),
    Column("resolved_at", TZ, nullable=True),
    Column("run_id", String(36), nullable=True),
    Column("revision", Integer, nullable=True),
    UniqueConstraint("document_id", "stage", name="uq_failures_document_stage"),
    Index("ix_failures_status", "status", "source_id"),
)

enumerations = Table(
    "enumerations",
    metadata,
    Column("run_id", String(36), primary_key=True),
    Column("object_id", String(1000), primary_key=True),
)

# A run's proof of presence (migration 0021): the object ids each batch listed unchanged,
# one JSON array per batch instead of a `last_seen_run` write per row; rows a batch writes
# carry `last_seen_run` themselves. After a complete read the prune collects, in one
# statement, the source's active documents neither proof names (`unseen_documents`).
# Both are scratch of a run: cleared when it finishes (manifest.prunes).
seen_batches = Table(
    "seen_batches",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(36), nullable=False),
    Column("object_ids", Text, nullable=False),  # a JSON array, sorted
    Index("ix_seen_batches_run_id", "run_id"),
)

unseen_documents = Table(
    "unseen_documents",
    metadata,
    Column("run_id", String(36), primary_key=True),
    Column("document_id", String(64), primary_key=True),
)

manifest_identity = Table(
    "manifest_identity",
    metadata,
    Column("manifest_id", String(36), primary_key=True),
    Column("created_at", TZ, nullable=False),
)

revision_floors = Table(
    "revision_floors",
    metadata,
    Column("document_id", String(64), primary_key=True),
    Column("revision", Integer, nullable=False),
)

# Celery executor (migration 0005): which index task holds which pending document, and
# which sources sit in the broker's sync queue, each until an expiry (a dead worker's
# rows are taken over once they expire).
index_claims = Table(
    "index_claims",
    metadata,
    Column("document_id", String(64), primary_key=True),
    Column("owner", String(200), nullable=False),
    Column("claimed_at", TZ, nullable=False),
    Column("expires_at", TZ, nullable=False),
)

run_queue = Table(
    "run_queue",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("task_id", String(200), nullable=False),
    Column("queued_at", TZ, nullable=False),
    Column("expires_at", TZ, nullable=False),
)

# Group memberships per source (migration 0006): replaced whole after each group listing.
group_members = Table(
    "group_members",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("group_principal", String(500), primary_key=True),
    Column("member", String(320), primary_key=True),
    Index("ix_group_members_member", "member"),
)

# Nested groups (migration 0010): ``member_group`` is a member of ``group_principal``;
# expanded transitively at search. Replaced whole after each group listing.
group_nesting = Table(
    "group_nesting",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("group_principal", String(500), primary_key=True),
    Column("member_group", String(500), primary_key=True),
    Index("ix_group_nesting_member_group", "member_group"),
)

# Labels of synced groups (migration 0009): shown to people, never compared. Replaced
# whole with the source's memberships after each group listing.
group_labels = Table(
    "group_labels",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("group_principal", String(500), primary_key=True),
    Column("display_name", String(500), nullable=True),
    Column("mail", String(320), nullable=True),
)

# Index generations (migration 0007): each configured index is a sequence of generations;
# exactly one is ``live``. Applied revisions of generation 1 live under the bare index
# name in ``document_indexes``, those of generation N > 1 under ``{index}@{N}``.
generations = Table(
    "generations",
    metadata,
    Column("index_name", String(100), primary_key=True),
    Column("generation", Integer, primary_key=True),
    Column("state", String(12), nullable=False),
    Column("index_version", String(32), nullable=False),
    Column("settings", Text, nullable=False),
    Column("created_at", TZ, nullable=False),
    Column("switched_at", TZ, nullable=True),
    Column("problems", Text, nullable=False),
)
