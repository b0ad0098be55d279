"""The one clock: every timestamp Headwater writes comes from here (UTC, aware)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """Treat a naive datetime as UTC (databases often drop the zone)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def iso(moment: datetime | None) -> str | None:
    """``moment`` in UTC as ISO 8601 text; None stays None."""
    return None if moment is None else as_utc(moment).isoformat()
