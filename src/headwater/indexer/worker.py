"""Fetching and indexing overlap: the indexer drains in a thread while the runner reads.

The sync runner wakes the worker after every committed batch; the worker drains pending
work (chunk, embed, write sinks) while the runner fetches and parses the next batch. The
model's matrix work releases the GIL, so parsing and embedding really overlap on two
cores. Only the worker touches the sinks while it runs; the workspace joins it before
anything else uses them, and re-raises anything it raised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from headwater.indexer.report import IndexReport


class IndexWorker:
    """A thread that drains pending work each time the sync runner wakes it."""

    def __init__(self, drain: Callable[[], IndexReport]) -> None:
        self._drain = drain
        self._wake = threading.Event()
        self._stopping = False
        self.report = IndexReport()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="headwater-indexer", daemon=True)

    def start(self) -> IndexWorker:
        """Start the worker's thread; returns the worker."""
        self._thread.start()
        return self

    def wake(self) -> None:
        """New work was committed: drain it when the current pass is done."""
        self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            try:
                self.report.add(self._drain())
            except BaseException as exc:  # handed to the caller's thread by stop()
                self.error = exc
                return

    def stop(self) -> IndexReport:
        """Finish the pass under way, stop, and re-raise what the worker raised."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.report
