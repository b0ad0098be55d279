"""Removing a source: tombstone what it holds, then forget its run state.

A source taken out of the config leaves documents in the manifest and in every index.
``remove_source`` deletes them the one way Headwater deletes anything (invariant 8):
tombstones with reason ``source_removed`` (streamed in keyset pages), then the indexer's
delete and verify; the source's runs, checkpoints, lease, enumeration rows and failure
records are forgotten, so a later source with the same id starts from nothing. The
result is a ``RemovalReport`` whose ``as_dict()`` is what ``source remove --json``
prints (a dry run has only the counts before; a removal adds what it did).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Table, delete, func, select

from headwater.errors import NotFoundError
from headwater.jsonview import JsonView
from headwater.manifest import schema as t
from headwater.manifest.db import begin_write
from headwater.manifest.leases import Lease
from headwater.manifest.records import ACTIVE, BatchCommit, TombstoneWrite
from headwater.manifest.runs import lease_owner
from headwater.manifest.store import CHUNK, Manifest

REASON = "source_removed"


@dataclass(frozen=True, eq=False)
class RemovalReport(JsonView):
    """What ``remove_source`` found (``documents``…``failures``: before it acted) and,
    unless a dry run, did (``tombstoned``, ``deleted_from_indexes``,
    ``unverified_deletes``: deletes not yet verified in every index)."""

    source: str
    configured: bool
    dry_run: bool
    documents: int
    runs: int
    checkpoints: int
    failures: int
    tombstoned: int | None = None
    deleted_from_indexes: int | None = None
    unverified_deletes: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        out: dict[str, Any] = {
            "source": self.source,
            "configured": self.configured,
            "dry_run": self.dry_run,
            "documents": self.documents,
            "runs": self.runs,
            "checkpoints": self.checkpoints,
            "failures": self.failures,
        }
        if not self.dry_run:
            out["tombstoned"] = self.tombstoned
            out["deleted_from_indexes"] = self.deleted_from_indexes
            out["unverified_deletes"] = self.unverified_deletes
        return out


@dataclass(frozen=True)
class SourceState:
    """What the manifest holds of one source (``remove --dry-run`` reports this)."""

    source_id: str
    documents: int
    runs: int
    checkpoints: int
    failures: int

    @property
    def known(self) -> bool:
        """Whether the manifest holds anything of the source."""
        return bool(self.documents or self.runs or self.failures)


def _count(manifest: Manifest, table: Table, source_id: str) -> int:
    with manifest.engine.connect() as conn:
        query = select(func.count()).select_from(table).where(table.c.source_id == source_id)
        return int(conn.execute(query).scalar_one())


def source_state(manifest: Manifest, source_id: str) -> SourceState:
    """What the manifest holds of ``source_id``: documents, runs and failures."""
    return SourceState(
        source_id=source_id,
        documents=manifest.count_documents(source_id),
        runs=_count(manifest, t.runs, source_id),
        checkpoints=_count(manifest, t.checkpoints, source_id),
        failures=_count(manifest, t.failures, source_id),
    )


def known_source_ids(manifest: Manifest) -> dict[str, str]:
    """Every source the manifest remembers (registered, or holding active documents),
    mapped to its type ("" when only documents name it)."""
    with manifest.engine.connect() as conn:
        found = {r[0]: "" for r in conn.execute(
            select(t.documents.c.source_id).where(t.documents.c.state == ACTIVE).distinct()
        )}  # fmt: skip
        found.update(
            {r[0]: r[1] for r in conn.execute(select(t.sources.c.source_id, t.sources.c.type))}
        )
    return found


def tombstone_source(
    manifest: Manifest, source_id: str, page: int = CHUNK, *, lease: Lease | None = None
) -> int:
    """Tombstone every active document of the source, one transaction per page."""
    run_id = str(uuid.uuid4())
    docs = t.documents.c
    total, after = 0, ""
    while True:
        with manifest.engine.connect() as conn:
            rows = conn.execute(
                select(docs.document_id, docs.object_id, docs.revision)
                .where(docs.source_id == source_id, docs.state == ACTIVE, docs.document_id > after)
                .order_by(docs.document_id)
                .limit(page)
            ).all()
        if not rows:
            return total
        commit = BatchCommit()
        for document_id, object_id, revision in rows:
            commit.tombstones.append(
                TombstoneWrite(
                    document_id=document_id,
                    source_id=source_id,
                    object_id=object_id,
                    revision=revision + 1,
                    sequence=None,
                    reason=REASON,
                )
            )
        manifest.commit_batch(run_id, commit, lease=lease)
        total += len(rows)
        after = rows[-1][0]


def incomplete_deletes(manifest: Manifest, source_id: str) -> int:
    """Tombstones of the source that some index has not yet confirmed."""
    tombs = t.tombstones.c
    with manifest.engine.connect() as conn:
        query = select(func.count()).where(
            tombs.source_id == source_id, tombs.completed_at.is_(None)
        )
        return int(conn.execute(query).scalar_one())


def forget_source(manifest: Manifest, source_id: str) -> None:
    """Drop the source's runs, checkpoints, lease, enumerations, failure records, group
    memberships, nesting and labels, and its queued hints."""
    with begin_write(manifest.engine) as conn:
        run_ids = select(t.runs.c.run_id).where(t.runs.c.source_id == source_id)
        conn.execute(delete(t.enumerations).where(t.enumerations.c.run_id.in_(run_ids)))
        conn.execute(delete(t.checkpoints).where(t.checkpoints.c.source_id == source_id))
        conn.execute(delete(t.runs).where(t.runs.c.source_id == source_id))
        conn.execute(delete(t.leases).where(t.leases.c.source_id == source_id))
        conn.execute(delete(t.failures).where(t.failures.c.source_id == source_id))
        conn.execute(delete(t.source_schedule).where(t.source_schedule.c.source_id == source_id))
        conn.execute(delete(t.group_members).where(t.group_members.c.source_id == source_id))
        conn.execute(delete(t.group_labels).where(t.group_labels.c.source_id == source_id))
        conn.execute(delete(t.group_nesting).where(t.group_nesting.c.source_id == source_id))
        conn.execute(delete(t.hints).where(t.hints.c.source_id == source_id))
        conn.execute(delete(t.hint_sources).where(t.hint_sources.c.source_id == source_id))
        conn.execute(delete(t.sources).where(t.sources.c.source_id == source_id))


def remove_source(
    manifest: Manifest,
    source_id: str,
    *,
    configured: bool,
    index: Callable[[], int],
    dry_run: bool = False,
) -> RemovalReport:
    """Tombstone, index (delete and verify), forget. ``index`` drains pending work into
    every sink and returns how many documents it deleted there."""
    before = source_state(manifest, source_id)
    if not configured and source_id not in known_source_ids(manifest):
        raise NotFoundError(
            f"source {source_id!r} is neither configured nor in the manifest; "
            "check the id with `headwater status`."
        )
    report = RemovalReport(
        source=source_id,
        configured=configured,
        dry_run=dry_run,
        documents=before.documents,
        runs=before.runs,
        checkpoints=before.checkpoints,
        failures=before.failures,
    )
    if dry_run:
        return report
    # Hold the source's lease while tombstoning: a sync of it running elsewhere makes the
    # removal refuse (FatalError naming the holder) instead of racing it.
    leases = manifest.runs.leases
    manifest.ensure_source(source_id, "")
    lease = leases.acquire(source_id, lease_owner())
    try:
        tombstoned = tombstone_source(manifest, source_id, lease=lease)
    finally:
        leases.release(lease)
    deleted = index()
    forget_source(manifest, source_id)
    return replace(
        report,
        tombstoned=tombstoned,
        deleted_from_indexes=deleted,
        unverified_deletes=incomplete_deletes(manifest, source_id),
    )
