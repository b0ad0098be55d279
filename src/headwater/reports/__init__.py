"""The workspace's typed reports: sync, status, document; the CLI prints ``as_dict()``.

Each report is built from the parts it reads (the manifest, plain lists of the
configured sources and indexes), never from a Workspace, so the workspace stays a thin
facade that wires parts and passes them here. One module per report; every name is
importable from ``headwater.reports``.
"""

from __future__ import annotations

from headwater.reports.document import (
    AppliedState,
    DocumentReport,
    access_dict,
    document_report,
    failure_dict,
)
from headwater.reports.status import (
    DlqStatus,
    EventsState,
    ExecutorState,
    IndexInfo,
    IndexStatus,
    LeaseHolder,
    SourceSchedule,
    SourceStatus,
    StatusReport,
    status_report,
    unconfigured_sources,
)
from headwater.reports.sync import SyncResult

__all__ = [
    "AppliedState",
    "DlqStatus",
    "DocumentReport",
    "EventsState",
    "ExecutorState",
    "IndexInfo",
    "IndexStatus",
    "LeaseHolder",
    "SourceSchedule",
    "SourceStatus",
    "StatusReport",
    "SyncResult",
    "access_dict",
    "document_report",
    "failure_dict",
    "status_report",
    "unconfigured_sources",
]
