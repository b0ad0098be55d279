"""The ``Executor`` protocol, and how an executor is found by its config name.

An executor runs a workspace's write work: syncs (with their indexing), permission
syncs, drains and prunes. ``local`` runs everything in this process; ``celery`` enqueues
runs and index tasks for Celery workers and waits for them; ``nats`` publishes runs to a
JetStream work queue for NATS workers and waits for the manifest to record them. Each
executor is built from a ``Runtime`` (never from the ``Workspace`` facade).
``executor_factory(name)`` finds one by the name ``[executor] type`` gives: the
``headwater.executors`` entry point group first (a plugin may add one), then the
built-in table, so the shipped executors resolve even where the installed metadata
predates the group. The lookup is by name so that the facade, which gets its executor
injected, never imports an executor module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from headwater.errors import ConfigError
from headwater.indexer.report import IndexReport
from headwater.plugins import entry_points
from headwater.reports import ExecutorState, SyncResult
from headwater.sync.permissions import PermissionResult
from headwater.sync.report import PruneResult
from headwater.sync.runner import Progress

if TYPE_CHECKING:
    from headwater.runtime.root import Runtime

ENTRY_POINT_GROUP = "headwater.executors"
BUILTIN = {
    "local": "headwater.executor.local:LocalExecutor",
    "celery": "headwater.executor.dispatch:CeleryExecutor",
    "nats": "headwater.executor.nats_dispatch:NatsExecutor",
}


class Executor(Protocol):
    """Where a workspace's write work runs."""

    name: str

    def sync(
        self,
        sources: Sequence[str] | None = None,
        *,
        index: bool = True,
        force: bool = False,
        full: bool = False,
        progress: Progress | None = None,
        max_concurrent: int = 1,
        skip_busy: bool = False,
    ) -> SyncResult:
        """Sync the sources (all by default) and, unless ``index=False``, index."""
        ...

    def sync_permissions(
        self, sources: Sequence[str] | None = None, *, index: bool = True
    ) -> PermissionResult:
        """Refresh ACLs and group memberships only."""
        ...

    def index(self, only: Sequence[str] | None = None) -> IndexReport:
        """Drain pending work (of the ``only`` documents) into every writable generation."""
        ...

    def prune(
        self, sources: Sequence[str] | None = None, *, dry_run: bool = False, force: bool = False
    ) -> list[PruneResult]:
        """Delete documents their source no longer has."""
        ...

    def state(self) -> ExecutorState:
        """The ``executor`` part of ``headwater status``."""
        ...


ExecutorFactory = Callable[["Runtime"], Executor]


def executor_factory(name: str) -> ExecutorFactory:
    """The executor class registered as ``name``; ConfigError if none is."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            found: ExecutorFactory = ep.load()
            return found
    if name not in BUILTIN:
        known = ", ".join(
            sorted({*BUILTIN, *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))})
        )
        raise ConfigError(f"executor {name!r} is not installed; expected one of: {known}.")
    module, _, attr = BUILTIN[name].partition(":")
    builtin: ExecutorFactory = getattr(importlib.import_module(module), attr)
    return builtin
