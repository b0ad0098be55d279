"""The plain settings a sync run needs, built by the workspace from the config.

The sync layer never reads ``headwater.config``: the workspace (the composition root)
turns a source's config section into this frozen dataclass and passes it down.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceSettings:
    """How one source is synced: commit batch size and the prune safety fraction."""

    batch_size: int
    prune_max_fraction: float
