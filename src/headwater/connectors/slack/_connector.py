"""The Slack connector: each channel's new history since its saved ``oldest``.

A run lists the channels (``conversations.list``), then for each one reads
``conversations.history`` with ``oldest`` = the newest ``ts`` seen so far (the first run:
``history_days`` back). New top-level messages outside threads make the day documents
of their UTC days (a day already partly read is completed with one more history call);
new thread roots are read with ``conversations.replies``. Threads read before are
re-checked with ``conversations.replies?limit=1`` (the root alone): when the root's
``latest_reply``, ``reply_count`` or ``edited`` moved, the thread is re-read; when the
root is gone (``thread_not_found``) it becomes an explicit ``Deleted``. A private
channel's members are re-read every run: a change re-sends every tracked document of the
channel with its new ACL (no content read). The checkpoint is
``{"channels": {id: {"latest", "threads": {ts: sig}, "days": [...], "acl": [...]}}}``
(plus, mid-run, the channels done). Documents that leave the horizon are written to
``aged.json`` in the state dir so ``enumerate()`` keeps reporting them as present.
https://api.slack.com/methods/conversations.history
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Generator, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from headwater.connectors._bearer import BearerApiOptions
from headwater.connectors._governed import governed_transport
from headwater.connectors.base import (
    ConnectorCapabilities,
    ReadStream,
    SourceContext,
)
from headwater.connectors.slack._acl import user_names, workspace_principal
from headwater.connectors.slack._client import SlackApiError, SlackClient
from headwater.connectors.slack._messages import Message, day_of, in_thread, plain, thread_sig
from headwater.connectors.slack._refetch import refetch
from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.retry import RetryPolicy
from headwater.types import (
    Access,
    Checkpoint,
    Deleted,
    KnownVersions,
    ListedGroup,
    SourceDocument,
    SourceItem,
    Window,
)

# users.info's documented errors for a user it cannot show:
# https://api.slack.com/methods/users.info#errors
UNKNOWN_USER = frozenset({"user_not_found", "user_not_visible"})


class SlackOptions(BearerApiOptions):
    """The keys of a ``slack`` source."""

    channels: list[str] = Field(default_factory=list)  # names or ids; [] = every channel
    include_private: bool = True
    history_days: int = Field(default=90, ge=1)
    base_url: str = Field(default="https://slack.com/api", pattern=r"^https?://")
    page_size: int = Field(default=200, ge=1, le=1000)


class SlackConnector:
    """Reads the messages of a workspace's channels, as thread and day documents."""

    type_name: ClassVar[str] = "slack"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities(
        windowed=False, full_listing=False
    )
    Options: ClassVar[type[SlackOptions]] = SlackOptions

    def __init__(self, options: SlackOptions, context: SourceContext) -> None:
        self.options = options
        self.source_id = context.source_id
        self._aged_path = Path(context.state_dir) / "aged.json"
        self._client = SlackClient(
            options.base_url,
            options.token.get_secret_value(),
            timeout=options.timeout,
            user_agent=context.user_agent,
            transport=governed_transport(context, "slack", options.token.get_secret_value()),
            policy=options.retry_policy(),
        )
        self._users: dict[str, Message] = {}
        self._channels: list[Message] | None = None

    # -- validate -------------------------------------------------------------------------

    def validate(self) -> None:
        """Check the token with ``auth.test`` once, without retries."""
        once = RetryPolicy(attempts=1)
        try:
            self._client.call("auth.test", policy=once)
            listed = self._list_channels(once)
            if listed:
                self._client.call(
                    "conversations.history", {"channel": listed[0]["id"], "limit": "1"}, once
                )
            private = next((c for c in listed if c.get("is_private")), None)
            if private is not None:
                self._check_emails(private, once)
        except TransientError as exc:
            raise TransientError(
                f"slack `base_url` {self.options.base_url}: {exc}; check the address and try "
                "again later"
            ) from exc

    def _check_emails(self, channel: Message, policy: RetryPolicy) -> None:
        """A private channel's ACL needs members' emails: ``users:read.email``."""
        body = self._client.call(
            "conversations.members", {"channel": channel["id"], "limit": "1"}, policy
        )
        for member in body.get("members") or []:
            user = self._client.call("users.info", {"user": str(member)}, policy)
            if not (user.get("user") or {}).get("profile", {}).get("email"):
                raise CredentialError(
                    f"slack `token` lacks the scope users:read.email: users.info shows no "
                    f"email for {member!r}, so private channel #{channel.get('name')} would "
                    f"be visible only as slack:{member} ([identity] aliases); expected it; "
                    "add users:read.email and reinstall"
                )

    def _list_channels(self, policy: RetryPolicy | None = None) -> list[Message]:
        """The channels to read, by id; names in ``channels`` that do not exist raise. With
        no ``channels``, the public channels the app is not a member of are left out."""
        if self._channels is not None:
            return self._channels
        private = ",private_channel" if self.options.include_private else ""
        types = "public_channel" + private
        params = {"types": types, "exclude_archived": "true", "limit": str(self.options.page_size)}
        found = [c for page, _ in self._client.pages("conversations.list", "channels", params,
                                                     policy) for c in page]  # fmt: skip
        if self.options.channels:
            by_key = {c["id"]: c for c in found} | {c.get("name", ""): c for c in found}
            unknown = [n for n in self.options.channels if n.lstrip("#") not in by_key]
            if unknown:
                names = sorted(str(c.get("name")) for c in found)
                raise ConfigError(
                    f"slack `channels` names {unknown[0]!r}, which the token cannot see; "
                    f"expected one of {names}; invite the app to it or fix `channels`"
                )
            found = [by_key[n.lstrip("#")] for n in self.options.channels]
        else:  # every channel: conversations.list shows every public channel, `is_member`
            # says whether the app is in it; one it is not in cannot be read (not_in_channel)
            found = [c for c in found if c.get("is_member", True) is not False]
        self._channels = sorted({c["id"]: c for c in found}.values(), key=lambda c: c["id"])
        return self._channels

    # -- read -----------------------------------------------------------------------------

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield each channel's new history since its saved ``oldest``; return the next."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        channels: dict[str, Any] = dict(state.get("channels", {}))
        done: list[str] = list(state.get("done", []))
        listed = self._list_channels()
        for index, channel in enumerate(listed):
            if channel["id"] in done:
                continue
            previous = channels.get(channel["id"])
            channels[channel["id"]] = yield from self._channel(channel, previous, known)
            done.append(channel["id"])
            if index + 1 < len(listed):
                yield Checkpoint(json.dumps({"channels": channels, "done": done}))
        return Checkpoint(json.dumps({"channels": {c["id"]: channels[c["id"]] for c in listed}}))

    def _horizon(self) -> float:
        """The start of the UTC day ``history_days`` ago: a day is wholly in or out."""
        then = datetime.now(UTC) - timedelta(days=self.options.history_days)
        return then.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()

    def _channel(
        self, channel: Message, previous: dict[str, Any] | None, known: KnownVersions
    ) -> Generator[SourceItem, None, dict[str, Any]]:
        """Items of one channel; returns (as the generator's value) its new state."""
        cid = channel["id"]
        horizon = self._horizon()
        st = previous or {"latest": "", "threads": {}, "days": [], "acl": None}
        access = self._access(channel)
        oldest = st["latest"] or f"{horizon:.6f}"
        threads: dict[str, str] = dict(st["threads"])
        tracked, sent, fresh = set(st["days"]), set[str](), set[str]()
        latest, day, bucket = st["latest"], "", list[Message]()
        params = {"channel": cid, "oldest": oldest, "limit": str(self.options.page_size)}
        # history is newest first: a day is complete once an older message arrives, so
        # only one day's messages are held at a time (bounded memory)
        for page, _ in self._client.pages("conversations.history", "messages", params):
            for message in page:
                ts = str(message["ts"])
                latest = max(latest, ts, key=float) if latest else ts
                if in_thread(message):
                    fresh.add(ts)
                    replies = self._replies(cid, ts)
                    if replies is not None:
                        threads[ts] = thread_sig(replies[0])
                        sent.add(f"{cid}/thread/{ts}")
                        yield self._thread_doc(channel, replies, access)
                elif plain(message):
                    if bucket and day_of(ts) != day:
                        yield self._day_doc(channel, day, bucket, access)
                        sent.add(f"{cid}/{day}")
                        tracked.add(day)
                        bucket = []
                    day = day_of(ts)
                    bucket.append(message)
        if bucket:  # the oldest new day may hold messages read before: complete it
            start = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
            if st["latest"] and start < float(st["latest"]):
                more = {"channel": cid, "oldest": f"{start:.6f}", "latest": st["latest"],
                        "inclusive": "true", "limit": str(self.options.page_size)}  # fmt: skip
                for page, _ in self._client.pages("conversations.history", "messages", more):
                    bucket += [m for m in page if not in_thread(m) and plain(m)]
            yield self._day_doc(channel, day, bucket, access)
            sent.add(f"{cid}/{day}")
            tracked.add(day)
        for ts in sorted(set(st["threads"]) - fresh):
            if float(ts) < horizon:
                self._age(f"{cid}/thread/{ts}")
                del threads[ts]
                continue
            head = self._replies(cid, ts, limit=1)  # the root: latest_reply, edited
            if head is None:
                del threads[ts]
                yield Deleted(f"{cid}/thread/{ts}")
            elif thread_sig(head[0]) != st["threads"][ts]:
                replies = self._replies(cid, ts) or head
                threads[ts] = thread_sig(replies[0])
                sent.add(f"{cid}/thread/{ts}")
                yield self._thread_doc(channel, replies, access)
        for day in sorted(tracked):
            end = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC) + timedelta(days=1)
            if end.timestamp() <= horizon:
                self._age(f"{cid}/{day}")
                tracked.discard(day)
        acl = access.key()
        if st["acl"] is not None and st["acl"] != acl:  # membership changed: re-send ACLs
            ids = [f"{cid}/thread/{ts}" for ts in sorted(threads)]
            for object_id in ids + [f"{cid}/{day}" for day in sorted(tracked)]:
                version = known(object_id)
                if object_id not in sent and version:
                    yield self._acl_only(channel, object_id, version, access)
        return {"latest": latest, "threads": threads, "days": sorted(tracked), "acl": acl}

    def _replies(self, cid: str, ts: str, limit: int | None = None) -> list[Message] | None:
        """The thread (root first); None when the root is gone. ``limit``: one page only."""
        params = {"channel": cid, "ts": ts, "limit": str(limit or self.options.page_size)}
        messages: list[Message] = []
        try:
            for page, _ in self._client.pages("conversations.replies", "messages", params):
                messages += page
                if limit:
                    break
        except SlackApiError as exc:
            if exc.code == "thread_not_found":
                return None
            raise
        if not messages or messages[0].get("ts") != ts or messages[0].get("subtype") == "tombstone":
            return None
        return messages

    # -- documents ------------------------------------------------------------------------

    def _access(self, channel: Message) -> Access:
        if not channel.get("is_private"):
            return Access(groups=(workspace_principal(self.source_id),))
        params = {"channel": channel["id"], "limit": str(self.options.page_size)}
        members = [m for page, _ in self._client.pages("conversations.members", "members", params)
                   for m in page]  # fmt: skip
        names = {n for m in members for n in user_names(str(m), self._user(str(m)))}
        return Access(users=tuple(sorted(names)))

    def _user(self, user_id: str) -> Message:
        """The user's record; empty for one users.info does not know or show (a user of
        another workspace in a shared channel, one removed since): named by id only."""
        if user_id not in self._users:
            try:
                body = self._client.call("users.info", {"user": user_id})
            except SlackApiError as exc:
                if exc.code not in UNKNOWN_USER:
                    raise
                body = {}
            self._users[user_id] = dict(body.get("user") or {})
        return self._users[user_id]

    def _line(self, message: Message) -> str:
        user = message.get("user")
        name = str(self._user(user).get("real_name") or user) if user else "bot"
        stamp = datetime.fromtimestamp(float(message["ts"]), UTC).strftime("%H:%M")
        return f"[{stamp}] {name}: {message.get('text', '')}"

    def _meta(self, channel: Message, object_id: str) -> tuple[str, dict[str, str]]:
        """(locator, metadata) of a document: derived from its id and channel only."""
        cid, _, rest = object_id.partition("/")
        meta = {"channel_id": cid, "channel": str(channel.get("name", cid))}
        if rest.startswith("thread/"):
            ts = rest.removeprefix("thread/")
            return f"https://slack.com/archives/{cid}/p{ts.replace('.', '')}", meta
        return f"https://slack.com/archives/{cid}?day={rest}", meta

    def _thread_doc(
        self, channel: Message, replies: list[Message], access: Access
    ) -> SourceDocument:
        root = replies[0]
        object_id = f"{channel['id']}/thread/{root['ts']}"
        locator, meta = self._meta(channel, object_id)
        text = "\n".join(self._line(m) for m in replies)
        return SourceDocument(
            object_id=object_id, locator=locator,
            title=f"#{channel.get('name')}: {str(root.get('text', ''))[:60]}",
            version=thread_sig(root), content=text.encode(), media_type="text/plain",
            updated_at=datetime.fromtimestamp(float(replies[-1]["ts"]), UTC),
            metadata=meta, access=access,
        )  # fmt: skip

    def _day_doc(
        self, channel: Message, day: str, messages: list[Message], access: Access
    ) -> SourceDocument:
        object_id = f"{channel['id']}/{day}"
        messages = sorted(messages, key=lambda m: float(m["ts"]))
        locator, meta = self._meta(channel, object_id)
        marks = "|".join(f"{m['ts']}:{(m.get('edited') or {}).get('ts', '')}" for m in messages)
        return SourceDocument(
            object_id=object_id, locator=locator, title=f"#{channel.get('name')} {day}",
            version=hashlib.sha256(marks.encode()).hexdigest()[:16],
            content="\n".join(self._line(m) for m in messages).encode(),
            media_type="text/plain",
            updated_at=datetime.fromtimestamp(float(messages[-1]["ts"]), UTC),
            metadata=meta, access=access,
        )  # fmt: skip

    def _acl_only(
        self, channel: Message, object_id: str, version: str, access: Access
    ) -> SourceItem:
        """The same version with a new ACL: the runner updates it without a read."""
        locator, meta = self._meta(channel, object_id)
        return SourceDocument(object_id=object_id, locator=locator, title="", version=version,
                              metadata=meta, access=access)  # fmt: skip

    def refetch(self, object_ids: Sequence[str]) -> Iterator[SourceDocument | Deleted]:
        """Each named thread or day document as it is now (see ``_refetch``)."""
        return refetch(self, object_ids)

    # -- enumerate, groups ------------------------------------------------------------------

    def _age(self, object_id: str) -> None:
        aged = set(self._aged())
        if object_id not in aged:
            self._aged_path.parent.mkdir(parents=True, exist_ok=True)
            self._aged_path.write_text(json.dumps(sorted(aged | {object_id})))

    def _aged(self) -> list[str]:
        if not self._aged_path.exists():
            return []
        return list(json.loads(self._aged_path.read_text()))

    def enumerate(self) -> Iterator[str]:
        """The thread and day documents inside the horizon, from a fresh listing of history,
        plus those that left it (reported present); raises on any error."""
        horizon = f"{self._horizon():.6f}"
        for channel in self._list_channels():
            cid = channel["id"]
            params = {"channel": cid, "oldest": horizon, "limit": str(self.options.page_size)}
            days: set[str] = set()
            for page, _ in self._client.pages("conversations.history", "messages", params):
                for message in page:
                    if in_thread(message) and message.get("subtype") != "tombstone":
                        yield f"{cid}/thread/{message['ts']}"
                    elif plain(message):
                        days.add(day_of(message["ts"]))
            yield from (f"{cid}/{day}" for day in sorted(days))
        yield from self._aged()

    def groups(self) -> Iterator[ListedGroup]:
        """``{source_id}:workspace`` with every active human member (``slack:{id}`` and
        the email where shown), via ``users.list``."""
        params = {"limit": str(self.options.page_size)}
        names = sorted(
            name
            for page, _ in self._client.pages("users.list", "members", params)
            for u in page
            if not u.get("deleted") and not u.get("is_bot")
            for name in user_names(str(u["id"]), u)
        )
        yield ListedGroup(
            workspace_principal(self.source_id), names, display_name="everyone in the workspace"
        )
