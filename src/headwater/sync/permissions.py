"""Permission-only sync and group sync: who may see what, without reading content.

``PermissionSync`` walks a ``PermissionListing`` connector's ``permissions()`` (object id
to current ACL) under the source's lease, in batches: a document whose ACL changed gets
an ACL-only revision (same checksum and signature, revision + 1, one transaction per
batch), which the indexer applies with ``update_access`` in every index and zero
embedder calls. No content is fetched or parsed. Then, for a ``GroupListing`` connector,
the source's group memberships are replaced whole (``sync_groups``, also called after
every content sync). Objects the listing does not name are left as they are: a
permission listing is not an enumeration, and deletes stay with the content sync. An ACL
naming an identity that could pass as another is reported (``rejected``) and its document
withheld (an ACL-only revision visible to nobody) until the source fixes it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from headwater.connectors.base import Connector, GroupListing, PermissionListing, lists_groups
from headwater.errors import ConfigError, LeaseLost
from headwater.indexer.report import IndexReport
from headwater.manifest.groups import GroupSyncReport
from headwater.manifest.leases import LEASE_SECONDS, Heartbeat, Lease
from headwater.manifest.records import ACTIVE, BatchCommit
from headwater.manifest.runs import lease_owner
from headwater.manifest.store import Manifest
from headwater.sync.decisions import SourceIdentity, acl_only_write
from headwater.sync.settings import SourceSettings
from headwater.types import Access

log = logging.getLogger(__name__)

PERMISSION_RUN = "permissions"  # the run label of an ACL-only batch (it marks nothing seen)


@dataclass
class PermissionReport:
    """One source's permission sync."""

    source: str
    status: str = "succeeded"  # succeeded, unsupported, failed
    checked: int = 0  # objects the listing named
    changed: int = 0  # ACL-only revisions written
    unknown: int = 0  # named objects the manifest has no active document for
    rejected: list[str] = field(default_factory=list)  # ACLs with an identity refused
    groups: GroupSyncReport | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "source": self.source,
            "status": self.status,
            "checked": self.checked,
            "changed": self.changed,
            "unknown": self.unknown,
            "rejected": list(self.rejected),
            "groups": self.groups.as_dict() if self.groups else None,
            "error": self.error,
        }


@dataclass
class PermissionResult:
    """``Workspace.sync_permissions``: one report per source, then the indexing."""

    sources: list[PermissionReport] = field(default_factory=list)
    index: IndexReport = field(default_factory=IndexReport)

    def as_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict: each source's report and the indexing."""
        return {"sources": [s.as_dict() for s in self.sources], "index": self.index.as_dict()}

    @property
    def failed(self) -> bool:
        """Whether any source's permission sync failed."""
        return any(s.status == "failed" for s in self.sources)


def sync_groups(
    manifest: Manifest, source_id: str, connector: Connector, *, lease: Lease | None = None
) -> GroupSyncReport | None:
    """Replace the source's memberships from ``groups()``; None when it cannot list them.

    A listing that raises changes nothing and is reported (``error``), never a crash of
    the content run it follows: the previous memberships stay until a listing succeeds.
    """
    if not lists_groups(connector) or not isinstance(connector, GroupListing):
        return None
    try:
        return manifest.groups.replace(source_id, connector.groups(), lease=lease)
    except LeaseLost:
        raise
    except Exception as exc:  # the connector's listing failed: keep the last good one
        log.warning("group listing of %s failed; memberships unchanged: %s", source_id, exc)
        return GroupSyncReport(source_id, 0, 0, error=f"{type(exc).__name__}: {exc}")


class PermissionSync:
    """``headwater sync SOURCE --permissions`` for one source."""

    def __init__(
        self,
        manifest: Manifest,
        source: SourceIdentity,
        section: SourceSettings,
        connector: Connector,
    ) -> None:
        self.manifest = manifest
        self.source = source
        self.section = section
        self.connector = connector

    def run(self, lease_seconds: int = LEASE_SECONDS) -> PermissionReport:
        """List the source's permissions and groups under its lease and record the changes."""
        sid = self.source.source_id
        report = PermissionReport(sid)
        listing = isinstance(self.connector, PermissionListing)
        if not listing and not lists_groups(self.connector):
            report.status = "unsupported"
            report.error = (
                f"source {sid!r} ({self.source.source_type}) lists no permissions or groups; "
                f"its ACL is the source's `access`; run `headwater sync {sid}` instead"
            )
            return report
        self.manifest.ensure_source(sid, self.source.source_type)
        leases = self.manifest.runs.leases
        lease = leases.acquire(sid, lease_owner(), lease_seconds)
        heartbeat = Heartbeat(leases, lease).start()
        try:
            if isinstance(self.connector, PermissionListing):
                self._apply(self.connector.permissions(), report, heartbeat, lease)
            report.groups = sync_groups(self.manifest, sid, self.connector, lease=lease)
            if report.groups is not None and report.groups.error:
                report.status, report.error = "failed", report.groups.error
        except LeaseLost:
            raise
        except Exception as exc:  # the connector raised: batches already committed stand
            log.debug("permission listing raised", exc_info=True)
            report.status, report.error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            heartbeat.stop()
            leases.release(lease)
        return report

    def _apply(
        self,
        stream: Iterator[tuple[str, Access]],
        report: PermissionReport,
        heartbeat: Heartbeat,
        lease: Lease,
    ) -> None:
        batch: list[tuple[str, Access]] = []
        for entry in stream:
            batch.append(entry)
            if len(batch) >= self.section.batch_size:
                self._commit(batch, report, heartbeat, lease)
                batch = []
        self._commit(batch, report, heartbeat, lease)

    def _commit(
        self,
        batch: list[tuple[str, Access]],
        report: PermissionReport,
        heartbeat: Heartbeat,
        lease: Lease,
    ) -> None:
        if not batch:
            return
        heartbeat.check()
        existing = self.manifest.documents_by_object_ids(
            self.source.source_id, [object_id for object_id, _ in batch]
        )
        latest = dict(batch)  # an object named twice keeps its last ACL
        commit = BatchCommit()
        for object_id, access in latest.items():
            report.checked += 1
            record = existing.get(object_id)
            if record is None or record.state != ACTIVE:
                report.unknown += 1
                continue
            try:
                acl = tuple(access.principals())
            except ConfigError as exc:  # never index an identity that could pass as another
                report.rejected.append(f"{object_id}: {exc}")
                acl = ()  # withheld (visible to nobody) until the source fixes its ACL
            if acl != record.acl:
                commit.writes.append(acl_only_write(record, acl))
                report.changed += 1
        if commit.writes:
            self.manifest.commit_batch(PERMISSION_RUN, commit, lease=lease)
