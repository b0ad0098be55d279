"""The manifest's tables for push, hints, liveness, events, rate limits and subscriptions.

Full-replace push sessions and their objects, pushed groups, the hint queue and each
source's hint state, process heartbeats and persisted counters, the change-events outbox,
the shared rate-limit buckets and blocks, the vendors' change-notification
subscriptions and the trigger-kept document counts: one ``metadata`` with the core
tables (``tables_core``); ``schema`` is the one place callers import tables from.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
)

from headwater.manifest.tables_core import TZ, metadata

# Full-replace push sessions (migration 0011): ``active_source`` is the source id while
# the session is open, NULL after; its unique index allows one open session per source.
push_sessions = Table(
    "push_sessions",
    metadata,
    Column("session_id", String(36), primary_key=True),
    Column("source_id", String(200), nullable=False),
    Column("active_source", String(200), nullable=True),
    Column("state", String(12), nullable=False),
    Column("opened_at", TZ, nullable=False),
    Column("touched_at", TZ, nullable=False),
    Column("closed_at", TZ, nullable=True),
    Column("sent", Integer, nullable=False, server_default="0"),
    Column("deleted", Integer, nullable=False, server_default="0"),
    Index("ix_push_sessions_active_source", "active_source", unique=True),
    Index("ix_push_sessions_source", "source_id", "opened_at"),
)

# The object ids each push session sent (migration 0011).
push_session_objects = Table(
    "push_session_objects",
    metadata,
    Column("session_id", String(36), primary_key=True),
    Column("object_id", Text, primary_key=True),
)

# Groups pushed through the API (migration 0011): their version and state (``active`` or
# ``deleted``, kept to refuse an older version arriving late); members in group_members.
pushed_groups = Table(
    "pushed_groups",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("group_principal", String(500), primary_key=True),
    Column("version", BigInteger, nullable=False),
    Column("state", String(10), nullable=False),
    Column("updated_at", TZ, nullable=False),
)

# Hints (migration 0012): change notifications waiting for a targeted read, one row per
# (source, object): ``object_key`` is the sha256 of ``object_id`` ("" for a scope hint).
hints = Table(
    "hints",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("object_key", String(64), primary_key=True),
    Column("object_id", Text, nullable=False),
    Column("kind", String(20), nullable=False),
    Column("origin", String(30), nullable=False),
    Column("count", Integer, nullable=False),
    Column("received_at", TZ, nullable=False),
    Column("last_at", TZ, nullable=False),
    Column("due_at", TZ, nullable=False),
    Index("ix_hints_due_at", "due_at"),
)

hint_sources = Table(
    "hint_sources",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("last_hint_at", TZ, nullable=True),
    Column("last_origin", String(30), nullable=True),
    Column("last_read_at", TZ, nullable=True),
    Column("last_lag_s", Float, nullable=True),
    Column("received", Integer, nullable=False),
    Column("read", Integer, nullable=False),
    Column("dropped", Integer, nullable=False),
)

# Liveness and counters (migration 0013). ``heartbeats``: one row per scheduler or worker
# process (its lease owner string), stamped on a timer; a row not stamped within a few
# intervals is a process that is gone. ``counters``: monotonic counts that outlive the
# rows they count (``runs_total`` is bumped when a run ends, in the same transaction, so
# pruning the run history never lowers it); ``key`` is the label set, e.g. "docs|failed".
heartbeats = Table(
    "heartbeats",
    metadata,
    Column("owner", String(200), primary_key=True),
    Column("role", String(20), nullable=False),
    Column("started_at", TZ, nullable=False),
    Column("seen_at", TZ, nullable=False),
)

counters = Table(
    "counters",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("key", String(400), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

# Change events (migration 0014): written in the transaction of the change they describe,
# sent in ``seq`` order by ``headwater.events`` and deleted once the broker confirmed them.
events_outbox = Table(
    "events_outbox",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(20), nullable=False),
    Column("source_id", String(200), nullable=False),
    Column("object_id", Text, nullable=False),
    Column("document_id", String(64), nullable=False),
    Column("revision", Integer, nullable=False),
    Column("acl", Text, nullable=True),
    Column("index_name", String(100), nullable=True),
    Column("generation", Integer, nullable=True),
    Column("created_at", TZ, nullable=False),
)

# The rate-limit governor (migration 0015, ``manifest.throttles``). ``rate_limits``: one
# row per credential (``credential_key`` is the SHA-256 of the secret, never the secret):
# ``tats`` the GCRA state of each of its rates as JSON {period_s: tat} (epoch seconds),
# ``blocked_until`` the end of the last 429's Retry-After (epoch seconds, 0 when never).
# ``rate_sources``: which credential each source used last, so `status` can name the
# throttled sources.
rate_limits = Table(
    "rate_limits",
    metadata,
    Column("credential_key", String(64), primary_key=True),
    Column("vendor", String(100), nullable=False),
    Column("tats", Text, nullable=False),
    Column("blocked_until", Float, nullable=False),
    Column("reason", Text, nullable=False),
)

rate_sources = Table(
    "rate_sources",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("credential_key", String(64), nullable=False),
)

# Vendor subscriptions the scheduler keeps alive (migration 0019, ``manifest.subscriptions``):
# one row per source and scope (a SharePoint library's drive id, a Drive scope: "" or a
# shared drive id). ``vendor_id`` the Graph subscription id or the Drive channel id ("":
# never created), ``resource_id`` Drive's resourceId (needed to stop the channel),
# ``expires_at`` what the vendor granted; a failed create or renewal keeps the last good
# values and sets ``failures``, ``last_error`` and ``retry_at``.
subscriptions = Table(
    "subscriptions",
    metadata,
    Column("source_id", String(200), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("vendor_id", String(200), nullable=False),
    Column("resource_id", String(200), nullable=False),
    Column("expires_at", TZ, nullable=True),
    Column("renewed_at", TZ, nullable=True),
    Column("failures", Integer, nullable=False),
    Column("last_error", Text, nullable=True),
    Column("retry_at", TZ, nullable=True),
)

# Maintained document counts (migration 0020, ``manifest.counts``), kept by triggers on
# ``documents`` and ``document_indexes`` in the writer's transaction: ``kind`` ``docs``
# (``scope`` a source, ``detail`` a state), ``applied`` (an index, a pipeline version:
# index rows of active documents at their revision) or ``stale`` (an index: index rows of
# deleted documents below the tombstone). ``tx`` is 0 on SQLite and for folded rows; on
# PostgreSQL each writing transaction adds to rows of its own ``txid_current()``.
document_counts = Table(
    "document_counts",
    metadata,
    Column("kind", String(10), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("detail", String(32), primary_key=True),
    Column("tx", BigInteger, primary_key=True),
    Column("value", BigInteger, nullable=False),
)
