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
The checkpoint holds ``{"links": {team/channel: deltaLink}}`` plus, mid-run, the
channels done and the nextLink in progress, so a run resumes mid-listing.
https://learn.microsoft.com/en-us/graph/api/chatmessage-delta
"""

from __future__ import annotations

import html
import json
from collections.abc import Generator, Iterator
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

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


class TeamsOptions(BearerApiOptions):
    """The keys of a ``teams`` source."""

    teams: list[str] = Field(default_factory=list)  # team (group) ids; empty: every team
    base_url: str = Field(default="https://graph.microsoft.com/v1.0", pattern=r"^https?://")
    page_size: int = Field(default=50, ge=1, le=50)  # delta's $top


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
        """The teams and their channels once, without retries."""
        once = RetryPolicy(attempts=1)
        try:
            for team in self._team_names(once):
                self._list(f"/teams/{team}/channels", once)
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
        """Yield each channel's changes since its saved deltaLink (every thread at first)."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        links: dict[str, str] = dict(state.get("links", {}))
        done: list[str] = list(state.get("done", []))
        pending: dict[str, str] = state.get("pending") or {}
        channels = self._channels()
        keys = [f"{team}/{channel['id']}" for team, channel in channels]
        for index, (key, (team, channel)) in enumerate(zip(keys, channels, strict=True)):
            if key in done:
                continue
            start = pending.get("next") if pending.get("key") == key else None
            links[key] = yield from self._delta(team, channel, start or links.get(key), links, done)
            done.append(key)
            if index + 1 < len(channels):
                yield Checkpoint(json.dumps({"links": links, "done": done}))
        return Checkpoint(json.dumps({"links": {k: links[k] for k in keys}}))

    def _first(self, team: str, channel: str) -> str:
        return f"/teams/{team}/channels/{channel}/messages/delta?$top={self.options.page_size}"

    def _delta(
        self, team: str, channel: dict[str, Any], url: str | None, links: dict[str, str],
        done: list[str],
    ) -> Generator[SourceItem, None, str]:  # fmt: skip
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
                    yield Deleted(f"{key}/{row['id']}")
                elif row.get("messageType", "message") == "message" and not row.get("replyToId"):
                    yield self._thread(team, channel, row)
            if body.get("@odata.deltaLink"):
                return str(body["@odata.deltaLink"])
            url = str(body["@odata.nextLink"])
            pending = {"key": key, "next": url}
            yield Checkpoint(json.dumps({"links": links, "done": done, "pending": pending}))

    def _thread(self, team: str, channel: dict[str, Any], root: dict[str, Any]) -> SourceItem:
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
            updated_at=datetime.fromisoformat(latest) if latest else None,
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
