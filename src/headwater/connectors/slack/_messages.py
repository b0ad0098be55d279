"""Slack messages as the connector reads them: days, threads, and what counts as a post."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

Message = dict[str, Any]


def day_of(ts: str) -> str:
    """The UTC date of the Slack timestamp ``ts`` (``YYYY-MM-DD``)."""
    return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d")


def in_thread(message: Message) -> bool:
    """A thread root with replies (a plain message has no ``reply_count``)."""
    return int(message.get("reply_count") or 0) > 0


def plain(message: Message) -> bool:
    """A user's message outside threads (joins, topic changes and tombstones are not)."""
    return not message.get("subtype") or message.get("subtype") == "thread_broadcast"


def thread_sig(root: Message) -> str:
    """A signature of a thread root that changes when a reply or an edit arrives."""
    edited = (root.get("edited") or {}).get("ts", "")
    return f"{root['ts']}:{root.get('latest_reply', '')}:{root.get('reply_count', 0)}:{edited}"
