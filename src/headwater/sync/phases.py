"""Where a run's time went: seconds per phase, measured around the runner's own steps.

A run has four phases, each the time spent in one part of the code: ``read`` (inside the
connector: listing, and for connectors that are not lazy also downloading; measured
between batches, so with the runner's taking of each item), ``fetch_parse``
(the gates, lazy fetches, parsing and the content store, per batch), ``commit`` (the
manifest transaction of each batch and its checkpoint) and ``prune`` (the enumeration
and deletes by set difference after a complete read). They never overlap, so their sum
is at most the run's duration; the rest is the run's own bookkeeping. Indexing is not a
phase: it runs beside the runs, in the index worker, and is reported by the sync.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager

READ = "read"
FETCH_PARSE = "fetch_parse"
COMMIT = "commit"
PRUNE = "prune"
PHASES = (READ, FETCH_PARSE, COMMIT, PRUNE)
PHASE_LABELS = (  # (phase, what a person reads): the run page's rows
    (READ, "read (the connector lists and reads)"),
    (FETCH_PARSE, "fetch and parse (gates, lazy fetches, parsing, content store)"),
    (COMMIT, "commit (manifest transactions and checkpoints)"),
    (PRUNE, "prune (enumeration and deletes by set difference)"),
)


class PhaseTimes:
    """Seconds spent per phase by one run (one thread), accumulated over its batches."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PHASES, 0.0)

    @contextmanager
    def measure(self, phase: str) -> Iterator[None]:
        """Add the time the ``with`` body takes to ``phase`` (also when it raises)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[phase] += time.monotonic() - started

    def reading(self) -> Stopwatch:
        """A stopwatch adding to ``read``: running inside its ``with`` except while
        ``paused()`` (the runner pauses it around each batch's flush)."""
        return Stopwatch(self.seconds, READ)

    def as_dict(self) -> dict[str, float]:
        """``{"read": s, "fetch_parse": s, "commit": s, "prune": s}``, rounded down to the
        millisecond (so the rounded phases never add up to more than the run took)."""
        return {phase: math.floor(self.seconds[phase] * 1000) / 1000 for phase in PHASES}


class Stopwatch:
    """Adds the seconds it runs to one phase; ``with`` starts and stops it, ``paused()``
    stops it for its body (also when that raises)."""

    def __init__(self, seconds: dict[str, float], phase: str) -> None:
        self._seconds, self._phase = seconds, phase
        self._started: float | None = None

    def __enter__(self) -> Stopwatch:
        self._started = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._started is not None:
            self._seconds[self._phase] += time.monotonic() - self._started
            self._started = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Not counting while the body runs."""
        self._stop()
        try:
            yield
        finally:
            self._started = time.monotonic()
