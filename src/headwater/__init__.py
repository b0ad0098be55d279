"""Headwater keeps a private corpus and its search indexes in sync.

The public surface is small and re-exported here; everything else is internal. The names
are imported on first use (PEP 562), so ``import headwater`` (every ``headwater`` command
starts with it) costs nothing and each command imports only what it runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from headwater.search.results import SearchResult
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

_WHERE = {
    "headwater.errors": (
        "ConfigError",
        "CredentialError",
        "FatalError",
        "HeadwaterError",
        "ItemError",
        "NotFoundError",
        "TransientError",
    ),
    "headwater.indexer.reconcile": ("ReconcileReport",),
    "headwater.reports": ("DocumentReport", "StatusReport", "SyncResult"),
    "headwater.search.results": ("SearchResult",),
    "headwater.sync.redrive": ("RedriveReport",),
    "headwater.sync.removal": ("RemovalReport",),
    "headwater.sync.report": ("PruneResult",),
    "headwater.types": (
        "Access",
        "Checkpoint",
        "Chunk",
        "Deleted",
        "Failure",
        "SearchHit",
        "SearchMode",
        "SourceDocument",
        "Window",
    ),
    "headwater.workspace": ("Workspace",),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

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


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'headwater' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
