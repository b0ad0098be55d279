"""Fewer garbage collections while a sync run holds its batch in memory.

The idea: CPython collects its youngest generation whenever the container objects
allocated since the last collection, less those freed, pass a threshold (700 by
default). A run holds a whole batch of listed items and the manifest rows they are
compared with (about eight such objects an item, up to 4,096 items a batch) until the
batch is decided; so the collector ran every ninety items or so, each time traversing
objects that were all still alive and promoting them to older generations, which were
then traversed again: 4 % of a no-op re-sync's instructions
(``bench/noop_instructions.py``). While at least one run is in progress in this process,
the youngest generation's threshold is ``RUN_THRESHOLD``, above what one batch holds:
a batch freed at its flush no longer triggers a collection, and garbage in reference
cycles is still collected, a few megabytes later at most. The thresholds in force before
the first of the overlapping runs come back when the last one ends (runs of several
sources may overlap in threads). The ``headwater`` command raises the threshold for its
whole process already (``cli/app.py``, ``tune_collector``); this is for the runs that
start elsewhere: ``Workspace.sync`` in a program, ``serve``'s scheduler, a worker's task
(an in-process no-op of 1M files: 9,660 collections and 20.1 CPU-s before, 1 and 18.3).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RUN_THRESHOLD", "fewer_collections"]

# Above the container objects one batch holds (QUIET_GROWTH × the largest batch_size
# default items, ~8 objects each), so a batch freed at its flush is never traversed.
RUN_THRESHOLD = 100_000

_lock = threading.Lock()
_runs = 0
_saved: tuple[int, int, int] = gc.get_threshold()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the youngest generation's threshold to ``RUN_THRESHOLD`` for the block."""
    global _runs, _saved
    with _lock:
        if _runs == 0:
            _saved = gc.get_threshold()
            if _saved[0] and _saved[0] < RUN_THRESHOLD:  # 0: collection is disabled
                gc.set_threshold(RUN_THRESHOLD, *_saved[1:])
        _runs += 1
    try:
        yield
    finally:
        with _lock:
            _runs -= 1
            if _runs == 0:
                gc.set_threshold(*_saved)
