"""A fake Microsoft Graph for Teams: teams, channels, members, channel message delta and
replies, written from the Graph reference.

- ``GET /teams`` and ``GET /teams/{id}``: https://learn.microsoft.com/en-us/graph/api/teams-list
  and https://learn.microsoft.com/en-us/graph/api/team-get (unknown team: 404 ``NotFound``)
- ``GET /teams/{id}/channels`` (``membershipType`` ``standard``, ``private``, ``shared``):
  https://learn.microsoft.com/en-us/graph/api/channel-list and
  https://learn.microsoft.com/en-us/graph/api/resources/channel
- ``GET /teams/{id}/members`` and ``GET /teams/{id}/channels/{id}/members``
  (``aadUserConversationMember`` with ``email``, ``roles``):
  https://learn.microsoft.com/en-us/graph/api/team-list-members and
  https://learn.microsoft.com/en-us/graph/api/channel-list-members
- ``GET /teams/{id}/channels/{id}/messages/delta``: root messages only (no replies), pages
  by ``@odata.nextLink`` (``$skiptoken``) ending in an ``@odata.deltaLink``
  (``$deltatoken``); later rounds answer what changed since, a removed message as
  ``{"id", "@removed": {"reason": "deleted"}}``; a token the service no longer keeps
  answers 410 Gone (``resyncRequired``), an unknown one 400:
  https://learn.microsoft.com/en-us/graph/api/chatmessage-delta and
  https://learn.microsoft.com/en-us/graph/delta-query-overview
- ``GET /teams/{id}/channels/{id}/messages/{id}`` (a deleted one keeps its id with
  ``deletedDateTime`` set): https://learn.microsoft.com/en-us/graph/api/chatmessage-get
- ``GET /teams/{id}/channels/{id}/messages/{id}/replies``; a reply does not make its root
  message appear in delta (delta lists root messages only):
  https://learn.microsoft.com/en-us/graph/api/chatmessage-list-replies
- errors ``{"error": {"code", "message"}}``: 401 ``InvalidAuthenticationToken``; 403
  ``Forbidden`` "Missing role permissions … API requires one of '…'" naming the
  application permission (Team.ReadBasic.All, Channel.ReadBasic.All, TeamMember.Read.All,
  ChannelMember.Read.All, ChannelMessage.Read.All); 429 ``TooManyRequests`` with
  ``Retry-After``: https://learn.microsoft.com/en-us/graph/errors and
  https://learn.microsoft.com/en-us/graph/throttling and
  https://learn.microsoft.com/en-us/graph/permissions-reference
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from fakes.confluence.server import Answer, Call, FakeApi

__all__ = ["FakeTeams"]

_ids = itertools.count(1700000000000)


def graph_error(status: int, code: str, message: str) -> Answer:
    return Answer(status, {"error": {"code": code, "message": message}})


@dataclass
class Message:
    id: str
    author: str
    body: str
    seq: int
    reply_to: str | None = None
    deleted: bool = False
    replies: list[Message] = field(default_factory=list)

    def resource(self, team: str, channel: str) -> dict[str, Any]:
        stamp = f"2024-06-01T10:{self.seq // 60 % 60:02d}:{self.seq % 60:02d}Z"
        return {
            "id": self.id, "replyToId": self.reply_to, "etag": str(self.seq),
            "messageType": "message", "createdDateTime": stamp, "lastModifiedDateTime": stamp,
            "deletedDateTime": stamp if self.deleted else None, "subject": None,
            "body": {"contentType": "html", "content": self.body},
            "from": {"user": {"id": "u-" + self.author, "displayName": self.author}},
            "channelIdentity": {"teamId": team, "channelId": channel},
            "webUrl": f"https://teams.microsoft.com/l/message/{channel}/{self.id}",
        }  # fmt: skip


@dataclass
class Channel:
    id: str
    name: str
    kind: str | None  # membershipType; None: the answer lacks it
    members: list[str] = field(default_factory=list)
    messages: dict[str, Message] = field(default_factory=dict)


class FakeTeams(FakeApi):
    """``with FakeTeams() as graph: graph.team("t1", "Eng", ["ann@x"])``."""

    def __init__(self) -> None:
        super().__init__(user="app@example.com", token="graph-teams-token")
        self.permissions = {
            "Team.ReadBasic.All", "Channel.ReadBasic.All", "TeamMember.Read.All",
            "ChannelMember.Read.All", "ChannelMessage.Read.All",
        }  # fmt: skip
        self.teams: dict[str, tuple[str, list[str], dict[str, Channel]]] = {}
        self.seq = 0
        self.floor = 0  # delta tokens older than this are gone (410)
        self.rate_limited = 0
        self.retry_after = "0"
        self._tokens: dict[str, dict[str, Any]] = {}

    def authorized(self, headers: dict[str, str]) -> bool:
        return True  # answered in `answer`, with Graph's own 401

    # -- state ---------------------------------------------------------------------------

    def team(self, team_id: str, name: str, members: list[str]) -> None:
        with self.lock:
            self.teams[team_id] = (name, members, {})

    def channel(
        self, team_id: str, channel_id: str, name: str, kind: str | None, members: list[str]
    ) -> None:
        with self.lock:
            self.teams[team_id][2][channel_id] = Channel(channel_id, name, kind, members)

    def post(self, team_id: str, channel_id: str, author: str, body: str) -> str:
        with self.lock:
            self.seq += 1
            message = Message(str(next(_ids)), author, body, self.seq)
            self.teams[team_id][2][channel_id].messages[message.id] = message
            return message.id

    def reply(self, team_id: str, channel_id: str, root: str, author: str, body: str) -> None:
        with self.lock:
            self.seq += 1
            parent = self.teams[team_id][2][channel_id].messages[root]
            parent.replies.append(Message(str(next(_ids)), author, body, self.seq, root))

    def edit(self, team_id: str, channel_id: str, message_id: str, body: str) -> None:
        with self.lock:
            self.seq += 1
            message = self.teams[team_id][2][channel_id].messages[message_id]
            message.body, message.seq = body, self.seq

    def delete(self, team_id: str, channel_id: str, message_id: str) -> None:
        with self.lock:
            self.seq += 1
            message = self.teams[team_id][2][channel_id].messages[message_id]
            message.deleted, message.seq = True, self.seq

    # -- routing -------------------------------------------------------------------------

    def answer(self, call: Call) -> Answer:
        if self.rate_limited > 0:
            self.rate_limited -= 1
            answer = graph_error(429, "TooManyRequests", "Too many requests")
            answer.headers["Retry-After"] = self.retry_after
            return answer
        if call.headers.get("authorization") != f"Bearer {self.token}":
            return graph_error(
                401,
                "InvalidAuthenticationToken",
                "Lifetime validation failed, the token is expired.",
            )
        parts = call.path.removeprefix("/v1.0/").strip("/").split("/")
        needed = _permission(parts)
        if needed not in self.permissions:
            return graph_error(
                403, "Forbidden",
                f"Missing role permissions on the request. API requires one of '{needed}'. "
                f"Roles on the request '{', '.join(sorted(self.permissions))}'.",
            )  # fmt: skip
        if parts == ["teams"]:
            rows = [{"id": t, "displayName": v[0]} for t, v in sorted(self.teams.items())]
            return Answer(200, {"value": rows})
        team = self.teams.get(parts[1])
        if team is None:
            return graph_error(404, "NotFound", f"No team found with Group Id {parts[1]}")
        name, members, channels = team
        rest = parts[2:]
        if not rest:
            return Answer(200, {"id": parts[1], "displayName": name})
        if rest == ["members"]:
            return Answer(200, {"value": [_member(e) for e in members]})
        if rest == ["channels"]:
            rows = [
                {"id": c.id, "displayName": c.name, "webUrl": f"https://teams.microsoft.com/l/channel/{c.id}"}
                | ({"membershipType": c.kind} if c.kind else {})
                for c in channels.values()
            ]  # fmt: skip
            return Answer(200, {"value": rows})
        channel = channels.get(rest[1])
        if channel is None:
            return graph_error(404, "NotFound", f"Channel {rest[1]} not found")
        tail = rest[2:]
        if tail == ["members"]:
            return Answer(200, {"value": [_member(e) for e in channel.members]})
        if tail == ["messages", "delta"]:
            return self._delta(parts[1], channel, call.query, call.path)
        if len(tail) == 2 and tail[0] == "messages":  # one root message (deleted: marked)
            found = channel.messages.get(tail[1])
            if found is None:
                return graph_error(404, "NotFound", f"Message {tail[1]} not found")
            return Answer(200, found.resource(parts[1], channel.id))
        if len(tail) == 3 and tail[0] == "messages" and tail[2] == "replies":
            root = channel.messages.get(tail[1])
            if root is None:
                return graph_error(404, "NotFound", f"Message {tail[1]} not found")
            rows = [r.resource(parts[1], channel.id) for r in root.replies]
            return Answer(200, {"value": rows})
        return graph_error(400, "BadRequest", f"Resource not found for the segment '{tail}'")

    def _delta(self, team: str, channel: Channel, query: dict[str, str], path: str) -> Answer:
        link = f"{self.url}{path}"
        top = int(query.get("$top", 20))
        if "$deltatoken" in query or "$skiptoken" in query:
            token = query.get("$deltatoken") or query.get("$skiptoken", "")
            state = self._tokens.get(token)
            if state is None or state["kind"] != ("delta" if "$deltatoken" in query else "page"):
                return graph_error(400, "BadRequest", f"The token '{token}' is invalid.")
            if state["kind"] == "delta":
                if state["seq"] < self.floor:
                    return graph_error(410, "resyncRequired", "The delta token has expired.")
                changed = [m for m in channel.messages.values() if m.seq > state["seq"]]
                rows = sorted(m.id for m in changed)
                state = {
                    "kind": "page",
                    "seq": self.seq,
                    "rows": rows,
                    "offset": 0,
                    "top": state["top"],
                }
        else:
            rows = sorted(m.id for m in channel.messages.values() if not m.deleted)
            state = {"kind": "page", "seq": self.seq, "rows": rows, "offset": 0, "top": top}
        start, top = state["offset"], state["top"]
        value = []
        for message_id in state["rows"][start : start + top]:
            message = channel.messages[message_id]
            if message.deleted:
                value.append({"id": message.id, "@removed": {"reason": "deleted"}})
            else:
                value.append(message.resource(team, channel.id))
        token = f"tok{next(_ids)}"
        if start + top < len(state["rows"]):
            self._tokens[token] = state | {"offset": start + top}
            return Answer(200, {"value": value, "@odata.nextLink": f"{link}?$skiptoken={token}"})
        self._tokens[token] = {"kind": "delta", "seq": state["seq"], "top": top}
        return Answer(200, {"value": value, "@odata.deltaLink": f"{link}?$deltatoken={token}"})


def _member(email: str) -> dict[str, Any]:
    return {
        "@odata.type": "#microsoft.graph.aadUserConversationMember", "id": "m-" + email,
        "roles": [], "displayName": email.split("@")[0], "userId": "u-" + email, "email": email,
    }  # fmt: skip


def _permission(parts: list[str]) -> str:
    """The application permission Graph requires for the path (permissions reference)."""
    if "messages" in parts:
        return "ChannelMessage.Read.All"
    if parts[-1] == "members":
        return "ChannelMember.Read.All" if "channels" in parts else "TeamMember.Read.All"
    if "channels" in parts:
        return "Channel.ReadBasic.All"
    return "Team.ReadBasic.All"
