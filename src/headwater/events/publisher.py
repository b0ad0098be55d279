"""Draining the outbox into a target, in commit order, and the pump that keeps doing it.

``EventPublisher.drain`` opens one session, sends the oldest events page by page in
``seq`` order (so in revision order per document), and removes from the outbox only what
the target confirmed. It stops at the first event the target does not take: that event
and every later one stay, so nothing is lost and no document's events overtake each
other. A crash between a confirmed send and its removal sends the event again on the next
drain; JetStream drops it by its message id (``Nats-Msg-Id``). A drain never raises for
an unreachable target: the sync that called it goes on, and the outbox just grows.
``EventPump`` drains in a background thread (``run`` and ``serve``): every second while
events wait, backing off up to 30 s while the target is down.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from headwater import failpoints
from headwater.errors import TransientError
from headwater.events.targets import Target
from headwater.manifest.outbox import Outbox

log = logging.getLogger(__name__)

PAGE = 500
INTERVAL_S = 1.0
MAX_BACKOFF_S = 30.0


@dataclass(frozen=True)
class DrainReport:
    """One drain: events sent, events still waiting, and why it stopped early (if it did)."""

    sent: int
    depth: int
    error: str | None = None


class EventPublisher:
    """Sends the outbox's events to one target (one drain at a time per process)."""

    def __init__(self, outbox: Outbox, target: Target, *, page: int = PAGE) -> None:
        self.outbox = outbox
        self.target = target
        self.page = page
        self.last_error: str | None = None
        self._lock = threading.Lock()

    @property
    def kind(self) -> str:
        """The target's type (``nats`` or ``webhook``)."""
        return self.target.kind

    def depth(self) -> int:
        """How many events wait in the outbox."""
        return self.outbox.depth()

    def drain(self) -> DrainReport:
        """Send every waiting event the target takes, in order; never raises for a
        target that is down (the events wait for the next drain)."""
        with self._lock:
            report = self._drain()
        self.last_error = report.error
        if report.error is not None:
            log.warning("events: %d sent, %d waiting: %s", report.sent, report.depth, report.error)
        return report

    def _drain(self) -> DrainReport:
        if self.outbox.depth() == 0:
            return DrainReport(0, 0)
        try:
            session = self.target.open()
        except TransientError as exc:
            return DrainReport(0, self.outbox.depth(), str(exc))
        sent, error = 0, None
        try:
            while error is None:
                events = self.outbox.pending(self.page)
                if not events:
                    break
                confirmed: list[int] = []
                try:
                    for event in events:
                        session.send(event)
                        confirmed.append(event.seq)
                except TransientError as exc:
                    error = str(exc)
                if confirmed:
                    failpoints.failpoint(failpoints.AFTER_EVENTS_PUBLISHED)
                    self.outbox.remove(confirmed)
                sent += len(confirmed)
        finally:
            session.close()
        return DrainReport(sent, self.outbox.depth(), error)


class EventPump:
    """A daemon thread draining ``publisher`` until stopped; ``wake`` drains now."""

    def __init__(self, publisher: EventPublisher, interval: float = INTERVAL_S) -> None:
        self.publisher = publisher
        self.interval = interval
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="headwater-events", daemon=True)

    def start(self) -> EventPump:
        """Start the thread (once)."""
        if not self._thread.is_alive() and not self._stop.is_set():
            self._thread.start()
        return self

    def wake(self) -> None:
        """Drain now rather than at the next tick."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread after its current drain."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _loop(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                report = self.publisher.drain()
            except Exception:  # the pump must outlive a manifest hiccup; logged, retried
                log.exception("events: draining the outbox failed; retrying")
                report = DrainReport(0, 1, "manifest error")
            failures = failures + 1 if report.error is not None else 0
            wait = min(MAX_BACKOFF_S, self.interval * 2**failures) if failures else self.interval
            self._wake.wait(wait)
            self._wake.clear()


def publisher_for(
    outbox: Outbox,
    tenant: str,
    *,
    kind: str,
    url: str,
    stream: str,
    prefix: str,
    secret: str | None,
) -> EventPublisher:
    """The publisher of an ``[events]`` table (its values, already validated)."""
    # Imported here: a workspace without [events] (and `headwater search`) loads neither
    # the HTTP client nor the NATS client.
    target: Target
    if kind == "webhook":
        from headwater.events.webhook import WebhookTarget

        assert secret is not None  # the config requires it
        target = WebhookTarget(url, secret, tenant, prefix=prefix)
    else:
        from headwater.events.jetstream import JetStreamTarget

        target = JetStreamTarget(url, stream, prefix, tenant)
    return EventPublisher(outbox, target)
