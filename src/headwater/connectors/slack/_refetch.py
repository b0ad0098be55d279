"""Slack's targeted read: named thread and day documents read again, without a listing.

A hint names ``{channel}/thread/{ts}`` or ``{channel}/{YYYY-MM-DD}``. The channel is
looked up with ``conversations.info`` (is it one this source reads, and who may read it:
a private channel's members), a thread with ``conversations.replies`` and a day with one
``conversations.history`` between the day's bounds: the same calls, documents and ACL
as the incremental read, for exactly the named objects. ``Deleted`` only when Slack
confirms: the thread's root is gone (``thread_not_found``, a tombstone) or has no replies
left, or the day holds no message any more. A channel this source does not read, or that
Slack no longer shows (``channel_not_found``), and days beyond ``history_days`` yield
nothing (the hint is dropped; the periodic read decides).
https://api.slack.com/methods/conversations.info
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from headwater.connectors.slack._client import SlackClient
from headwater.connectors.slack._messages import Message, in_thread, plain
from headwater.errors import ConfigError
from headwater.types import Access, Deleted, SourceDocument

TS = re.compile(r"\d+\.\d+")
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


class _SlackReader(Protocol):
    """What the targeted read uses of the connector (``_connector.SlackConnector``)."""

    options: Any  # SlackOptions
    _client: SlackClient

    def _horizon(self) -> float: ...
    def _replies(self, cid: str, ts: str, limit: int | None = None) -> list[Message] | None: ...
    def _access(self, channel: Message) -> Access: ...
    def _thread_doc(
        self, channel: Message, replies: list[Message], access: Access
    ) -> SourceDocument: ...
    def _day_doc(
        self, channel: Message, day: str, messages: list[Message], access: Access
    ) -> SourceDocument: ...


def refetch(conn: _SlackReader, object_ids: Sequence[str]) -> Iterator[SourceDocument | Deleted]:
    """The current state of each selected document of ``object_ids``."""
    channels: dict[str, tuple[Message, Access] | None] = {}
    horizon = conn._horizon()
    for object_id in object_ids:
        cid, _, rest = object_id.partition("/")
        if cid not in channels:
            channels[cid] = _channel(conn, cid)
        found = channels[cid]
        if found is None:
            continue
        channel, access = found
        if rest.startswith("thread/") and TS.fullmatch(ts := rest.removeprefix("thread/")):
            if float(ts) < horizon:
                continue
            replies = conn._replies(cid, ts)
            if replies is None or not in_thread(replies[0]):
                yield Deleted(object_id)
            else:
                yield conn._thread_doc(channel, replies, access)
        elif DAY.fullmatch(rest):
            start = datetime.strptime(rest, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
            if start + 86400 <= horizon:
                continue
            messages = _day(conn, cid, start)
            yield conn._day_doc(channel, rest, messages, access) if messages else Deleted(object_id)


def _channel(conn: _SlackReader, cid: str) -> tuple[Message, Access] | None:
    """The channel and its readers when this source reads it; None otherwise."""
    try:
        channel = dict(conn._client.call("conversations.info", {"channel": cid})["channel"])
    except ConfigError:  # channel_not_found (the client's only ConfigError here)
        return None
    options = conn.options
    if channel.get("is_archived") or (channel.get("is_private") and not options.include_private):
        return None
    if options.channels:
        names = {n.lstrip("#") for n in options.channels}
        if cid not in names and channel.get("name") not in names:
            return None
    elif channel.get("is_member") is False:
        return None
    return channel, conn._access(channel)


def _day(conn: _SlackReader, cid: str, start: float) -> list[Message]:
    """The day's top-level messages outside threads, as the day document holds them."""
    params = {"channel": cid, "oldest": f"{start:.6f}", "latest": f"{start + 86400 - 1e-6:.6f}",
              "inclusive": "true", "limit": str(conn.options.page_size)}  # fmt: skip
    return [
        m
        for page, _ in conn._client.pages("conversations.history", "messages", params)
        for m in page
        if not in_thread(m) and plain(m)
    ]
