"""The scheduler's work beside its runs: indexing drains, and the change-events pump.

Drains: a run drains what it committed (``Drains.drain``, called by the run's own thread); what no
run of this process left pending (a killed scheduler, ``sync --no-index``) is drained in a
background thread at start, and a minute after a failed drain (``catch_up``). One lock
keeps drains one at a time; a drain's outcome is kept for ``--once``'s exit code.
Events (``[events]``): a pump thread sends the outbox's change events while the scheduler
runs, and the outbox is drained once more when it stops (``Pumping``).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from sqlalchemy.exc import SQLAlchemyError

from headwater.clock import utcnow
from headwater.errors import HeadwaterError
from headwater.events import EventPump
from headwater.runtime import Runtime
from headwater.runtime.executor import executor_factory
from headwater.scheduler.outcome import Feed, summary

log = logging.getLogger("headwater.scheduler")
DRAIN_RETRY = timedelta(minutes=1)


class Drains:
    """The drains of one scheduler: ``first_at`` is when the first catch-up drain is due
    (None: none), ``retry`` whether a failed drain is tried again a minute later."""

    def __init__(self, progress: Feed | None, first_at: datetime | None, retry: bool) -> None:
        self.progress = progress
        self.ok = True  # the last drain's outcome (--once: a failed one exits 1)
        self.indexing = False  # a drain is running (in its own thread or after a run)
        self._lock = threading.Lock()
        self._due_at = first_at
        self._retry = retry
        self._thread: threading.Thread | None = None

    def background(self) -> threading.Thread | None:
        """The catch-up drain's thread while it runs, else None."""
        thread = self._thread
        return thread if thread is not None and thread.is_alive() else None

    def catch_up(self, rt: Runtime) -> None:
        """Start the catch-up drain in the background when it is due and none runs."""
        if self._due_at is None or utcnow() < self._due_at or self.background() is not None:
            return
        self._due_at = None
        self._thread = threading.Thread(target=self.drain, args=(rt,), name="headwater-drain")
        self._thread.start()

    def join(self) -> None:
        """Wait for the catch-up drain, if one was started."""
        if self._thread is not None:
            self._thread.join()

    def drain(self, rt: Runtime) -> None:
        """Index what ``rt``'s manifest holds pending (skipped once a stop was asked)."""
        if rt.controls.cancel.is_set():
            return
        with self._lock:
            rt.controls.index_progress = self.progress.index if self.progress else None
            self.indexing = True
            try:
                report = executor_factory(rt.config.executor.type)(rt).index()
            except HeadwaterError as exc:
                log.error("indexing failed (the pending work stays pending): %s", exc)
                self._due_at = utcnow() + DRAIN_RETRY if self._retry else None
                self.ok = False
                return
            finally:
                self.indexing = False
                if self.progress is not None:
                    self.progress.finish("indexing")
        self.ok = True
        log.info("indexed: %s", summary(report.__dict__))


class Pumping:
    """The change-events pump of one runtime (``[events]``; nothing without it)."""

    def __init__(self) -> None:
        self._pump: EventPump | None = None

    def start(self, rt: Runtime) -> None:
        """Send change events in the background while the scheduler runs."""
        self._pump = EventPump(rt.events).start() if rt.events is not None else None

    def stop(self, rt: Runtime) -> None:
        """Stop the pump after one last drain (the events of the last runs go out)."""
        if self._pump is not None:
            self._pump.stop()
            self._pump = None
        if rt.events is not None:
            try:
                rt.events.drain()
            except SQLAlchemyError as exc:  # the manifest is gone: the events wait in it
                log.error("change events not drained at exit: %s", exc)
