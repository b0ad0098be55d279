"""When a read lists a container (a Confluence space, a Jira project) in full.

Connectors that ask a server for "what changed since" per container cannot see a change
of the container's permissions in that answer: every item keeps its update time. So a
container is listed in full on the first windowed read that has a history, when its
permission fingerprint differs from the one recorded at its last full listing, when no
full listing is recorded, and every ``acl_refresh_every``; otherwise only the window's
changes are listed. The per-container state kept in the checkpoint is
``{"acl": fingerprint, "full_at": iso time of the last full listing}``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from headwater.clock import as_utc, iso
from headwater.types import Checkpoint, Window


def needs_full_listing(
    window: Window,
    checkpoint: Checkpoint | None,
    before: dict[str, str] | None,
    mark: str,
    refresh: timedelta,
) -> bool:
    """Whether the container with permission fingerprint ``mark`` (state ``before``) must
    be listed in full in ``window``."""
    if window.start is None:
        return True
    if checkpoint is None:
        return False  # no history: trust the window
    if before is None or before.get("acl") != mark or "full_at" not in before:
        return True  # a new container, or its permissions changed
    return window.end - as_utc(datetime.fromisoformat(before["full_at"])) >= refresh


def container_state(
    mark: str, full: bool, window: Window, before: dict[str, str] | None
) -> dict[str, str]:
    """The state to record for a container after this read."""
    full_at = iso(window.end) if full else (before or {}).get("full_at")
    return {"acl": mark} | ({"full_at": full_at} if full_at else {})
