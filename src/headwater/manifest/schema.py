"""The manifest's tables: the truth every index is a projection of.

One row per source object (``documents``), one per document and index
(``document_indexes``: the applied revision, so pending work is a query, not a queue),
plus runs, checkpoints, leases, tombstones, failures (which double as the dead-letter
queue), enumeration snapshots and seen lists for set-difference deletes, the manifest's identity and
the revision floors of purged documents and the group memberships synced from sources
(``group_members``, expanded into a caller's principals at search). Migrations in
``migrations/versions`` create exactly these tables; change both together. The tables
are defined in ``tables_core`` and ``tables_live`` (one ``metadata``); import them from here.
"""

from __future__ import annotations

from headwater.manifest.tables_core import (
    SHORT_RUN_ID,
    TZ,
    checkpoints,
    document_indexes,
    documents,
    enumerations,
    failures,
    generations,
    group_labels,
    group_members,
    group_nesting,
    index_claims,
    leases,
    manifest_identity,
    metadata,
    revision_floors,
    run_queue,
    runs,
    seen_batches,
    short_run_id,
    source_schedule,
    sources,
    tombstones,
    unseen_documents,
)
from headwater.manifest.tables_live import (
    counters,
    document_counts,
    events_outbox,
    heartbeats,
    hint_sources,
    hints,
    push_session_objects,
    push_sessions,
    pushed_groups,
    rate_limits,
    rate_sources,
    subscriptions,
)

__all__ = [
    "SHORT_RUN_ID",
    "TZ",
    "checkpoints",
    "counters",
    "document_counts",
    "document_indexes",
    "documents",
    "enumerations",
    "events_outbox",
    "failures",
    "generations",
    "group_labels",
    "group_members",
    "group_nesting",
    "heartbeats",
    "hint_sources",
    "hints",
    "index_claims",
    "leases",
    "manifest_identity",
    "metadata",
    "push_session_objects",
    "push_sessions",
    "pushed_groups",
    "rate_limits",
    "rate_sources",
    "revision_floors",
    "run_queue",
    "runs",
    "seen_batches",
    "short_run_id",
    "source_schedule",
    "sources",
    "subscriptions",
    "tombstones",
    "unseen_documents",
]
