"""The Teams connector: each channel's message ``delta``, from its saved deltaLink.

The teams (`teams`, or every team the app sees: ``GET /teams``) and their channels
(``/teams/{id}/channels``) are listed each run, in order. The first run reads
``/teams/{t}/channels/{c}/messages/delta`` from the start: every root message, page by
page (``@odata.nextLink``), ending in an ``@odata.deltaLink`` kept for the next run, which
then reads only what changed. Each root message is one document together with its
replies (``…/messages/{id}/replies``, which delta does not carry), rendered as HTML for
the parser; a row with ``@removed`` (or a ``deletedDateTime``) is ``Deleted``. A link
Graph no longer keeps (410 Gone, or 400 for a token it does not know) starts that channel
over, and ``enumerate()`` (a fresh delta) lets the runner prune what it no longer lists.
Delta lists root messages only: the threads active within `reply_days` are kept in the
checkpoint and re-read after the deltas, so a reply to an unchanged root is seen. The
checkpoint holds ``{"links": {team/channel: deltaLink}, "recent": {thread: latest}}``
plus, mid-run, the channels done, the nextLink in progress and the threads already read,
so a run resumes mid-listing.
https://learn.microsoft.com/en-us/graph/api/chatmessage-delta
"""

from __future__ import annotations

import html
import json
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar

from pydantic import Field

from headwater.clock import as_utc, utcnow
from headwater.connectors._bearer import BearerApiOptions
from headwater.connectors.base import ConnectorCapabilities, ReadStream, SourceContext
from headwater.connectors.teams._acl import (
    OWN_MEMBERS,
    audience,
    channel_principal,
    member_emails,
    team_principal,
)
from headwater.connectors.teams._client import GraphClient, GraphError, check
from headwater.errors import ConfigError, ItemError, TransientError
from headwater.retry import RetryPolicy
from headwater.types import (
    Access,
    Checkpoint,
    Deleted,
    Failure,
    KnownVersions,
    ListedGroup,
    SourceDocument,
    SourceItem,
    Stage,
    Window,
)

Channel = tuple[str, dict[str, Any]]  # (team id, channel resource)


@dataclass
class _Run:
    """A read's state, as its checkpoints hold it: each channel's deltaLink, the channels
    done and the nextLink in progress (mid-run), the recent threads (object id → latest
    activity) and the threads already read in this run (mid-run)."""

    links: dict[str, str]
    done: list[str]
    pending: dict[str, str] | None
    recent: dict[str, str]
    fresh: list[str]

    @classmethod
    def load(cls, state: dict[str, Any]) -> _Run:
        return cls(
            dict(state.get("links", {})), list(state.get("done", [])),
            state.get("pending"), dict(state.get("recent", {})), list(state.get("fresh", [])),
        )  # fmt: skip

    def dump(self) -> str:
        state: dict[str, Any] = {"links": self.links, "done": self.done}
        if self.pending:
            state["pending"] = self.pending
        return json.dumps(state | {"recent": self.recent, "fresh": self.fresh})


class TeamsOptions(BearerApiOptions):
    """The keys of a ``teams`` source."""

    teams: list[str] = Field(default_factory=list)  # team (group) ids; empty: every team
    base_url: str = Field(default="https://graph.microsoft.com/v1.0", pattern=r"^https?://")
    page_size: int = Field(default=50, ge=1, le=50)  # delta's $top
    reply_days: int = Field(default=14, ge=0)  # threads re-read for replies this long


class TeamsConnector:
    """Reads the channel messages of Microsoft Teams through Graph delta."""

    type_name: ClassVar[str] = "teams"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[TeamsOptions]] = TeamsOptions

    def __init__(self, options: TeamsOptions, context: SourceContext) -> None:
        self.options = options
        self.source_id = context.source_id
        self._client = GraphClient(
            options.base_url,
            options.token.get_secret_value(),
            timeout=options.timeout,
            user_agent=context.user_agent,
            policy=options.retry_policy(),
        )
        self._teams: dict[str, str] | None = None

    def _json(self, url: str, policy: RetryPolicy | None = None) -> dict[str, Any]:
        return check(self._client.get(url, policy=policy), url)

    def _list(self, url: str | None, policy: RetryPolicy | None = None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while url:
            body = self._json(url, policy)
            found += body.get("value") or []
            url = body.get("@odata.nextLink")
        return found

    # -- validate, teams, channels -------------------------------------------------------

    def validate(self) -> None:
        """The teams and their channels once, without retries; then one request of each
        other kind (members, messages, a private channel's members), so a missing
        permission is named before a sync needs it."""
        once = RetryPolicy(attempts=1)
        try:
            channels = [
                (team, channel)
                for team in self._team_names(once)
                for channel in self._list(f"/teams/{team}/channels", once)
            ]
            for team in list(self._team_names(once))[:1]:
                self._json(f"/teams/{team}/members", once)
            for team, channel in channels[:1]:
                self._json(f"/teams/{team}/channels/{channel['id']}/messages/delta?$top=1", once)
            own = [(t, c) for t, c in channels if c.get("membershipType") in OWN_MEMBERS]
            for team, channel in own[:1]:
                self._json(f"/teams/{team}/channels/{channel['id']}/members", once)
        except TransientError as exc:
            raise TransientError(
                f"teams `base_url` {self.options.base_url}: {exc}; check the address and try "
                "again later"
            ) from exc

    def _team_names(self, policy: RetryPolicy | None = None) -> dict[str, str]:
        """{team id: display name} of the teams to read, in order."""
        if self._teams is not None:
            return self._teams
        if not self.options.teams:
            found = self._list("/teams", policy)
            self._teams = {str(t["id"]): str(t.get("displayName", "")) for t in found}
            return self._teams
        teams: dict[str, str] = {}
        for team in self.options.teams:
            try:
                teams[team] = str(self._json(f"/teams/{team}", policy).get("displayName", ""))
            except GraphError as exc:
                if exc.status not in (400, 404):
                    raise
                raise ConfigError(
                    f"teams `teams` names {team!r}, which Graph does not know (HTTP "
                    f"{exc.status} {exc.code}); expected a team's group id; fix `teams`"
                ) from exc
        self._teams = teams
        return teams

    def _channels(self) -> list[Channel]:
        return [
            (team, channel)
            for team in self._team_names()
            for channel in sorted(self._list(f"/teams/{team}/channels"), key=lambda c: c["id"])
        ]

    # -- read ----------------------------------------------------------------------------

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield each channel's changes since its saved deltaLink (every thread at first),
        then the recent threads delta did not report, for their new replies."""
        run = _Run.load(json.loads(checkpoint.cursor) if checkpoint else {})
        pending, run.pending = run.pending, None
        channels = self._channels()
        keys = [f"{team}/{channel['id']}" for team, channel in channels]
        for index, (key, (team, channel)) in enumerate(zip(keys, channels, strict=True)):
            if key in run.done:
                continue
            start = pending.get("next") if pending and pending.get("key") == key else None
            run.links[key] = yield from self._delta(team, channel, start or run.links.get(key), run)
            run.done.append(key)
            if index + 1 < len(channels):
                yield Checkpoint(run.dump())
        yield from self._refresh(dict(zip(keys, channels, strict=True)), run)
        final = {"links": {k: run.links[k] for k in keys}, "recent": run.recent}
        return Checkpoint(json.dumps(final))

    def _first(self, team: str, channel: str) -> str:
        return f"/teams/{team}/channels/{channel}/messages/delta?$top={self.options.page_size}"

    def _delta(
        self, team: str, channel: dict[str, Any], url: str | None, run: _Run
    ) -> Generator[SourceItem, None, str]:
        """Threads from ``url`` (a delta or next link) or from the start; returns the deltaLink."""
        key = f"{team}/{channel['id']}"
        url, restarted = url or self._first(team, channel["id"]), url is None
        while True:
            try:
                body = self._json(url)
            except GraphError as exc:
                if exc.status not in (400, 410) or restarted:
                    raise
                url, restarted = self._first(team, channel["id"]), True  # resync: start over
                continue
            for row in body.get("value") or []:
                if "@removed" in row or row.get("deletedDateTime"):
                    run.recent.pop(f"{key}/{row['id']}", None)
                    yield Deleted(f"{key}/{row['id']}")
                elif row.get("messageType", "message") == "message" and not row.get("replyToId"):
                    yield self._tracked(team, channel, row, run)
            if body.get("@odata.deltaLink"):
                return str(body["@odata.deltaLink"])
            url = str(body["@odata.nextLink"])
            run.pending = {"key": key, "next": url}
            yield Checkpoint(run.dump())
            run.pending = None

    def _tracked(
        self, team: str, channel: dict[str, Any], root: dict[str, Any], run: _Run
    ) -> SourceDocument | Failure:
        """The thread, remembered as read in this run, and as recent while its latest
        activity lies within `reply_days` (a failed one stays as it was: tried again)."""
        item = self._thread(team, channel, root)
        run.fresh.append(item.object_id)
        if isinstance(item, Failure):
            return item
        latest = item.updated_at
        if latest and latest >= utcnow() - timedelta(days=self.options.reply_days):
            run.recent[item.object_id] = latest.isoformat()
        else:
            run.recent.pop(item.object_id, None)
        return item

    def _refresh(self, channels: dict[str, Channel], run: _Run) -> Iterator[SourceItem]:
        """Re-read the recent threads not read in this run: delta reports root messages
        only, so a reply to an unchanged root shows up here (unchanged ones are skipped
        by the version gate)."""
        for object_id in sorted(set(run.recent) - set(run.fresh)):
            key, _, message = object_id.rpartition("/")
            if key not in channels:
                run.recent.pop(object_id)  # the channel is gone: enumeration prunes
                continue
            team, channel = channels[key]
            try:
                root = self._json(f"/teams/{team}/channels/{channel['id']}/messages/{message}")
            except GraphError as exc:
                if exc.status != 404:
                    raise
                root = {"id": message, "deletedDateTime": "gone"}
            if root.get("deletedDateTime"):
                run.recent.pop(object_id)
                yield Deleted(object_id)
            else:
                yield self._tracked(team, channel, root, run)

    def _thread(
        self, team: str, channel: dict[str, Any], root: dict[str, Any]
    ) -> SourceDocument | Failure:
        object_id = f"{team}/{channel['id']}/{root['id']}"
        locator = str(root.get("webUrl") or object_id)
        principal = audience(self.source_id, team, channel)
        if principal is None:
            return Failure(
                object_id, locator, Stage.FETCH.value, "acl_unavailable",
                f"teams channel {channel['id']} has membershipType "
                f"{channel.get('membershipType')!r}, expected standard, private or shared; "
                "its messages are not indexed with a guessed ACL; the next sync tries again",
            )  # fmt: skip
        try:
            url = f"/teams/{team}/channels/{channel['id']}/messages/{root['id']}/replies"
            replies = [r for r in self._list(url) if not r.get("deletedDateTime")]
        except (TransientError, ItemError) as exc:
            return Failure(
                object_id, locator, Stage.FETCH.value, "replies_unavailable",
                f"teams thread {object_id}: its replies could not be read ({exc}); the next "
                "sync tries again",
            )  # fmt: skip
        messages = [root, *sorted(replies, key=lambda r: str(r.get("createdDateTime", "")))]
        latest = max(str(m.get("lastModifiedDateTime") or "") for m in messages)
        title = str(root.get("subject") or "") or f"{channel.get('displayName', '')} thread"
        return SourceDocument(
            object_id=object_id,
            locator=locator,
            title=title,
            version=f"{root.get('etag', '')}:{len(replies)}:{latest}",
            content=render(title, messages).encode(),
            media_type="text/html",
            updated_at=_moment(latest),
            metadata={
                "team": self._team_names().get(team, team),
                "channel": str(channel.get("displayName", "")),
                "membership": str(channel.get("membershipType", "")),
                "replies": str(len(replies)),
            },
            access=Access(groups=(principal,)),
        )

    # -- enumerate, groups ---------------------------------------------------------------

    def enumerate(self) -> Iterator[str]:
        """Every current thread id, from a fresh delta of each channel; raises on any error."""
        for team, channel in self._channels():
            url: str | None = self._first(team, channel["id"])
            while url:
                body = self._json(url)
                for row in body.get("value") or []:
                    if "@removed" in row or row.get("deletedDateTime") or row.get("replyToId"):
                        continue
                    if row.get("messageType", "message") == "message":
                        yield f"{team}/{channel['id']}/{row['id']}"
                url = body.get("@odata.nextLink")

    def groups(self) -> Iterator[ListedGroup]:
        """Each team's members (``TeamMember.Read.All``) and each private or shared
        channel's own members (``ChannelMember.Read.All``), by email; they do not nest."""
        for team, name in self._team_names().items():
            members = member_emails(self._list(f"/teams/{team}/members"))
            yield ListedGroup(team_principal(self.source_id, team), members, display_name=name)
        for team, channel in self._channels():
            if channel.get("membershipType") in OWN_MEMBERS:
                url = f"/teams/{team}/channels/{channel['id']}/members"
                yield ListedGroup(
                    channel_principal(self.source_id, str(channel["id"])),
                    member_emails(self._list(url)),
                    display_name=f"{self._team_names()[team]} / {channel.get('displayName', '')}",
                )


def render(title: str, messages: list[dict[str, Any]]) -> str:
    """A thread as one HTML page: each message's author, time and body (Graph bodies are
    HTML or text)."""
    parts = [f"<html><head><title>{html.escape(title)}</title></head><body>"]
    for message in messages:
        author = ((message.get("from") or {}).get("user") or {}).get("displayName") or "unknown"
        body = message.get("body") or {}
        content = str(body.get("content") or "")
        if body.get("contentType") != "html":
            content = html.escape(content)
        when = html.escape(str(message.get("createdDateTime") or ""))
        parts.append(f"<section><p><b>{html.escape(str(author))}</b> {when}</p>{content}</section>")
    return "".join(parts) + "</body></html>"


def _moment(text: str) -> datetime | None:
    """A Graph timestamp (``2024-06-01T10:00:01.123Z``) as an aware datetime, else None."""
    try:
        return as_utc(datetime.fromisoformat(text))
    except ValueError:
        return None
