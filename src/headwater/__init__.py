"""Headwater keeps a private corpus and its search indexes in sync.

The public surface is small and re-exported here; everything else is internal.
"""

from headwater.errors import (
    ConfigError,
    CredentialError,
    FatalError,
    HeadwaterError,
    ItemError,
    NotFoundError,
    TransientError,
)
from headwater.indexer.reconcile import ReconcileReport
from headwater.reports import DocumentReport, StatusReport, SyncResult
from headwater.search.service import SearchResult
from headwater.sync.redrive import RedriveReport
from headwater.sync.removal import RemovalReport
from headwater.sync.report import PruneResult
from headwater.types import (
    Access,
    Checkpoint,
    Chunk,
    Deleted,
    Failure,
    SearchHit,
    SearchMode,
    SourceDocument,
    Window,
)
from headwater.workspace import Workspace

__version__ = "0.1.0"

__all__ = [
    "Access",
    "Checkpoint",
    "Chunk",
    "ConfigError",
    "CredentialError",
    "Deleted",
    "DocumentReport",
    "Failure",
    "FatalError",
    "HeadwaterError",
    "ItemError",
    "NotFoundError",
    "PruneResult",
    "ReconcileReport",
    "RedriveReport",
    "RemovalReport",
    "SearchHit",
    "SearchMode",
    "SearchResult",
    "SourceDocument",
    "StatusReport",
    "SyncResult",
    "TransientError",
    "Window",
    "Workspace",
    "__version__",
]
