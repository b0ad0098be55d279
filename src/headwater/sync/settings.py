"""The plain settings a sync run needs: the source's, and the run's options.

The sync layer never reads ``headwater.config``: the workspace (the composition root)
turns a source's config section into ``SourceSettings`` and passes it down, with the
``SyncOptions`` of the run it asks for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from headwater.manifest.leases import LEASE_SECONDS
from headwater.manifest.records import RunCounts
from headwater.retry import RetryPolicy
from headwater.sync.rules import RuleSet
from headwater.types import SourceItem


@dataclass(frozen=True)
class SourceSettings:
    """How one source is synced: commit batch size, the prune safety fraction and the
    sync rules (``[[source.rules]]``)."""

    batch_size: int
    prune_max_fraction: float
    rules: RuleSet = field(default_factory=RuleSet)


Progress = Callable[[str, RunCounts], None]


@dataclass
class SyncOptions:
    """How one sync runs: full or not, pruning, attempts, progress, lease and cancellation."""

    force_prune: bool = False
    prune: bool = False
    full: bool = False  # read from the beginning: no cursor, no window start, no hint skips
    run_attempts: int = 3
    fetch_policy: RetryPolicy = field(default_factory=RetryPolicy)
    cancel: threading.Event = field(default_factory=threading.Event)
    on_batch: Callable[[], None] | None = None
    progress: Progress | None = None
    lease_seconds: int = LEASE_SECONDS


class BatchLimit:
    """How many items the next batch holds: ``batch_size``, doubled after each batch whose
    items were all unchanged (up to ``QUIET_GROWTH`` times), back to ``batch_size`` after
    any batch with work in it. A no-op re-sync then costs a few hundred transactions for
    a million objects instead of 16,000. After a quiet streak one batch may hold up to
    ``QUIET_GROWTH`` × ``batch_size`` items of which some turn out to need reading; each
    one's text goes to the content store as it is read (memory stays bounded) and the
    next batch is back to ``batch_size``."""

    def __init__(self, batch_size: int) -> None:
        self.base = batch_size
        self.limit = batch_size

    def after(self, quiet: bool) -> None:
        """Grow after a quiet batch, shrink after a busy one."""
        self.limit = min(self.limit * 2, self.base * QUIET_GROWTH) if quiet else self.base


QUIET_GROWTH = 64


def distinct_parts(items: list[SourceItem]) -> Iterator[list[SourceItem]]:
    """Split a batch so no object appears twice in one part (each part sees the last)."""
    listed = [getattr(item, "object_id", None) for item in items]
    if len(set(listed)) == len(listed):  # the common case, found at C speed: each once
        if items:
            yield items
        return
    part: list[SourceItem] = []
    ids: set[str] = set()
    for item in items:
        object_id = getattr(item, "object_id", None)
        if object_id in ids:
            yield part
            part, ids = [], set()
        part.append(item)
        if object_id is not None:
            ids.add(object_id)
    if part:
        yield part
