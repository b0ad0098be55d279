"""Initial manifest: sources, runs, checkpoints, leases, documents, indexes, tombstones,
failures, enumerations.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "sources",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("type", sa.String(50), nullable=False),
        sa.Column("next_cursor", sa.Text, nullable=True),
        sa.Column("last_prune_at", TZ, nullable=True),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(36), primary_key=True),
        sa.Column("source_id", sa.String(200), sa.ForeignKey("sources.source_id"), nullable=False),
        sa.Column("status", sa.String(30), nullable=False),
        sa.Column("window_start", TZ, nullable=True),
        sa.Column("window_end", TZ, nullable=False),
        sa.Column("started_at", TZ, nullable=False),
        sa.Column("finished_at", TZ, nullable=True),
        *[
            sa.Column(name, sa.Integer, nullable=False)
            for name in ("seen", "new", "changed", "unchanged", "deleted", "failed", "stale")
        ],
        sa.Column("duration_s", sa.Float, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("prune", sa.Text, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
    )
    op.create_index("ix_runs_source_started", "runs", ["source_id", "started_at"])
    op.create_table(
        "checkpoints",
        sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.run_id"), primary_key=True),
        sa.Column("source_id", sa.String(200), nullable=False),
        sa.Column("cursor", sa.Text, nullable=False),
        sa.Column("saved_at", TZ, nullable=False),
    )
    op.create_table(
        "leases",
        sa.Column("source_id", sa.String(200), primary_key=True),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("expires_at", TZ, nullable=False),
    )
    op.create_table(
        "documents",
        sa.Column("document_id", sa.String(64), primary_key=True),
        sa.Column("source_id", sa.String(200), nullable=False),
        sa.Column("object_id", sa.Text, nullable=False),
        sa.Column("locator", sa.Text, nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("media_type", sa.String(200), nullable=True),
        sa.Column("source_version", sa.Text, nullable=True),
        sa.Column("checksum", sa.String(64), nullable=True),
        sa.Column("signature", sa.String(64), nullable=True),
        sa.Column("pipeline_version", sa.String(32), nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("sequence", sa.BigInteger, nullable=True),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("acl", sa.Text, nullable=False),
        sa.Column("metadata", sa.Text, nullable=False),
        sa.Column("last_seen_run", sa.String(36), nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
    )
    op.create_index("ix_documents_source_state", "documents", ["source_id", "state"])
    op.create_index(
        "ix_documents_source_object", "documents", ["source_id", "object_id"], unique=True
    )
    op.create_table(
        "document_indexes",
        sa.Column("document_id", sa.String(64), primary_key=True),
        sa.Column("index_name", sa.String(100), primary_key=True),
        sa.Column("applied_revision", sa.Integer, nullable=False),
        sa.Column("applied_signature", sa.String(64), nullable=True),
        sa.Column("pipeline_version", sa.String(32), nullable=False),
        sa.Column("chunks", sa.Integer, nullable=False),
        sa.Column("applied_at", TZ, nullable=False),
    )
    op.create_table(
        "tombstones",
        sa.Column("document_id", sa.String(64), primary_key=True),
        sa.Column("source_id", sa.String(200), nullable=False),
        sa.Column("object_id", sa.Text, nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("sequence", sa.BigInteger, nullable=True),
        sa.Column("reason", sa.String(30), nullable=False),
        sa.Column("detected_at", TZ, nullable=False),
        sa.Column("completed_at", TZ, nullable=True),
    )
    op.create_table(
        "failures",
        sa.Column("entry_id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("source_id", sa.String(200), nullable=False),
        sa.Column("object_id", sa.Text, nullable=False),
        sa.Column("document_id", sa.String(64), nullable=False),
        sa.Column("locator", sa.Text, nullable=False),
        sa.Column("stage", sa.String(100), nullable=False),
        sa.Column("error_class", sa.String(100), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("pipeline_version", sa.String(32), nullable=False),
        sa.Column("source_version", sa.Text, nullable=True),
        sa.Column("fetch_ref", sa.Text, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("permanent", sa.Integer, nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("first_failed_at", TZ, nullable=False),
        sa.Column("last_failed_at", TZ, nullable=False),
        sa.Column("resolved_at", TZ, nullable=True),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.UniqueConstraint("document_id", "stage", name="uq_failures_document_stage"),
    )
    op.create_index("ix_failures_status", "failures", ["status", "source_id"])
    op.create_table(
        "enumerations",
        sa.Column("run_id", sa.String(36), primary_key=True),
        sa.Column("object_id", sa.String(1000), primary_key=True),
    )
