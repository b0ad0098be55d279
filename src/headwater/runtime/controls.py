"""What a caller steers running work with: the cancel event and the progress callbacks.

One ``Controls`` per runtime, shared by every part it builds: the CLI sets the progress
callbacks (its bars), a signal handler sets ``cancel``, and syncs, drains, prunes and
rebuilds read them as they go.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from headwater.indexer.report import IndexProgress
from headwater.types import CountProgress


@dataclass
class Controls:
    """The cancel event and the progress callbacks of one runtime."""

    cancel: threading.Event = field(default_factory=threading.Event)
    index_progress: Callable[[IndexProgress], None] | None = None  # the CLI's bars
    count_progress: CountProgress | None = None  # prune enumeration, reconcile
