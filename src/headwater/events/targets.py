"""Where the publisher sends events: the contract (``Target``, ``Session``).

A target opens a session (a connection) for one drain; the session sends one event at a
time, in the order given, and returns only once the other side confirmed it. Both raise
``TransientError`` when the other side is unreachable or refuses: the event stays in the
outbox and is sent again by a later drain, so a target never drops one.
"""

from __future__ import annotations

from typing import Protocol

from headwater.manifest.outbox import OutboxEvent


class Session(Protocol):
    """One open connection to a target."""

    def send(self, event: OutboxEvent) -> None:
        """Send ``event``; return once it is confirmed (``TransientError`` otherwise)."""

    def close(self) -> None:
        """Close the connection."""


class Target(Protocol):
    """Where events go: NATS JetStream or a webhook."""

    kind: str

    def open(self) -> Session:
        """A session for one drain (``TransientError`` when unreachable)."""
