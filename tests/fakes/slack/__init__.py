"""A fake Slack Web API (conversations.*, users.*, auth.test) on 127.0.0.1.

Follows the documented behaviour of:
- every method answers HTTP 200 with ``{"ok": true, ...}`` or ``{"ok": false, "error"}``;
  ``missing_scope`` carries ``needed`` and ``provided``: https://api.slack.com/web
- cursor pagination, ``limit`` and ``response_metadata.next_cursor`` ("" on the last
  page): https://api.slack.com/apis/pagination
- rate limits: HTTP 429 with ``Retry-After`` seconds: https://api.slack.com/apis/rate-limits
- conversations.list (``types``, ``exclude_archived``; every public channel of the
  workspace, ``is_member`` telling whether the app is in it; only the private channels
  it was invited to): https://api.slack.com/methods/conversations.list and a channel's
  history and replies answer ``not_in_channel`` to an app that is not in it:
  https://api.slack.com/methods/conversations.history#errors
- conversations.history: top-level messages only, newest first, ``oldest``/``latest``
  exclusive unless ``inclusive``; a thread root carries ``thread_ts``, ``reply_count``,
  ``latest_reply``; an edited message carries ``edited.ts``:
  https://api.slack.com/methods/conversations.history
- conversations.replies: the parent message first, then replies (after ``oldest`` when
  given); an unknown ``ts`` answers ``thread_not_found``; deleting a root that has
  replies leaves a parent with ``subtype: tombstone`` (history keeps listing it):
  https://api.slack.com/methods/conversations.replies
- conversations.members: https://api.slack.com/methods/conversations.members
- conversations.info (one channel: ``is_private``, ``is_archived``, ``is_member``;
  ``channel_not_found``): https://api.slack.com/methods/conversations.info
- users.info / users.list (``profile.email`` needs users:read.email):
  https://api.slack.com/methods/users.info, https://api.slack.com/methods/users.list
- auth.test (``invalid_auth`` for a bad token): https://api.slack.com/methods/auth.test
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from fakes._server import Answer, FakeService

TOKEN = "xoxb-test-token"
SCOPES = {
    "conversations.list": "channels:read",
    "conversations.history": "channels:history",
    "conversations.replies": "channels:history",
    "conversations.members": "channels:read",
    "conversations.info": "channels:read",
    "users.info": "users:read",
    "users.list": "users:read",
}


@dataclass
class Msg:
    ts: str
    user: str
    text: str
    edited: str = ""
    replies: list[Msg] = field(default_factory=list)
    subtype: str = ""

    def body(self, root: Msg | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "message", "ts": self.ts, "user": self.user,
                               "text": self.text}  # fmt: skip
        if self.subtype:
            out |= {"subtype": self.subtype, "user": "USLACKBOT"}
        if self.edited:
            out["edited"] = {"user": self.user, "ts": self.edited}
        if root is not None:
            out["thread_ts"] = root.ts
        elif self.replies:
            out |= {"thread_ts": self.ts, "reply_count": len(self.replies),
                    "latest_reply": self.replies[-1].ts,
                    "reply_users": sorted({r.user for r in self.replies})}  # fmt: skip
        return out


@dataclass
class Channel:
    id: str
    name: str
    private: bool
    members: list[str]
    messages: dict[str, Msg] = field(default_factory=dict)
    app_member: bool = True  # False: a public channel the app was not invited to
    archived: bool = False


class FakeSlack(FakeService):
    def __init__(self) -> None:
        super().__init__()
        start = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0)
        self.base = start - timedelta(days=3)
        self.minutes = 0
        self.users: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, Channel] = {}
        self.missing: set[str] = set()  # scopes the token lacks
        self.broken = False  # True: every history page after the first answers 500

    # -- mutations ---------------------------------------------------------------------

    def user(self, uid: str, email: str, *, bot: bool = False, deleted: bool = False) -> None:
        name = email.split("@")[0].title()
        self.users[uid] = {"id": uid, "name": name.lower(), "real_name": name, "is_bot": bot,
                           "deleted": deleted,
                           "profile": {"real_name": name, "email": email}}  # fmt: skip

    def channel(self, cid: str, name: str, members: list[str], private: bool = False) -> None:
        self.channels[cid] = Channel(cid, name, private, members)

    def _ts(self, day: int) -> str:
        with self.lock:
            self.minutes += 1
            moment = self.base + timedelta(days=day, minutes=self.minutes)
            return f"{moment.timestamp():.6f}"

    def post(self, cid: str, user: str, text: str, *, day: int = 0) -> str:
        ts = self._ts(day)
        with self.lock:
            self.channels[cid].messages[ts] = Msg(ts, user, text)
        return ts

    def reply(self, cid: str, root: str, user: str, text: str) -> str:
        parent = self.channels[cid].messages[root]
        day = int((float(parent.ts) - self.base.timestamp()) // 86400)
        ts = self._ts(day)
        with self.lock:
            parent.replies.append(Msg(ts, user, text))
        return ts

    def edit(self, cid: str, ts: str, text: str) -> None:
        with self.lock:
            message = self.channels[cid].messages[ts]
            message.text, message.edited = text, f"{datetime.now(UTC).timestamp():.6f}"

    def remove(self, cid: str, ts: str) -> None:
        """Deleting a root with replies leaves a ``tombstone`` parent; others vanish."""
        with self.lock:
            message = self.channels[cid].messages[ts]
            if message.replies:
                message.subtype, message.text = "tombstone", "This message was deleted."
            else:
                del self.channels[cid].messages[ts]

    # -- the API -------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> Answer:
        name = path.removeprefix("/api/")
        if headers.get("authorization") != f"Bearer {TOKEN}":
            return 200, {"ok": False, "error": "invalid_auth"}, {}
        scope = SCOPES.get(name)
        if scope in self.missing:
            provided = ",".join(sorted(set(SCOPES.values()) - self.missing))
            return 200, {"ok": False, "error": "missing_scope", "needed": scope,
                         "provided": provided}, {}  # fmt: skip
        if name == "auth.test":
            return 200, {"ok": True, "url": "https://acme.slack.com/", "team": "Acme",
                         "user": "headwater", "team_id": "T1", "user_id": "UBOT"}, {}  # fmt: skip
        if name == "conversations.list":
            types = query.get("types", "public_channel").split(",")
            rows = [{"id": c.id, "name": c.name, "is_channel": True, "is_private": c.private,
                     "is_archived": c.archived, "is_member": c.app_member}
                    for c in sorted(self.channels.values(), key=lambda c: c.id)
                    if ("private_channel" if c.private else "public_channel") in types
                    and not (c.archived and query.get("exclude_archived") == "true")]  # fmt: skip
            return self._page(query, "channels", rows)
        if name in ("users.info", "users.list"):
            if "users:read.email" in self.missing:
                users = {k: {**u, "profile": {"real_name": u["real_name"]}}
                         for k, u in self.users.items()}  # fmt: skip
            else:
                users = self.users
            if name == "users.list":
                return self._page(query, "members", [users[k] for k in sorted(users)])
            if query.get("user") not in users:
                return 200, {"ok": False, "error": "user_not_found"}, {}
            return 200, {"ok": True, "user": users[query["user"]]}, {}
        channel = self.channels.get(query.get("channel", ""))
        if channel is None:
            return 200, {"ok": False, "error": "channel_not_found"}, {}
        if name == "conversations.members":
            return self._page(query, "members", list(channel.members))
        if name == "conversations.info":
            return 200, {"ok": True, "channel": {
                "id": channel.id, "name": channel.name, "is_channel": True,
                "is_private": channel.private, "is_archived": channel.archived,
                "is_member": channel.app_member}}, {}  # fmt: skip
        if not channel.app_member:  # history and replies need the app in the channel
            return 200, {"ok": False, "error": "not_in_channel"}, {}
        if name == "conversations.history":
            if self.broken and query.get("cursor"):
                return 500, {"ok": False, "error": "internal_error"}, {}
            oldest, latest = float(query.get("oldest") or 0), float(query.get("latest") or 9e12)
            inclusive = query.get("inclusive") == "true"
            rows = [m.body() for ts, m in sorted(channel.messages.items(),
                    key=lambda kv: -float(kv[0]))
                    if (oldest <= float(ts) <= latest if inclusive
                        else oldest < float(ts) < latest)]  # fmt: skip
            return self._page(query, "messages", rows, has_more=True)
        if name == "conversations.replies":
            root = channel.messages.get(query.get("ts", ""))
            if root is None:
                return 200, {"ok": False, "error": "thread_not_found"}, {}
            oldest = float(query.get("oldest") or 0)
            rows = [root.body()] + [r.body(root) for r in root.replies if float(r.ts) > oldest]
            return self._page(query, "messages", rows, has_more=True)
        return 200, {"ok": False, "error": "unknown_method"}, {}

    def _page(self, query: dict[str, str], key: str, rows: list[Any], *,
              has_more: bool = False) -> Answer:  # fmt: skip
        start = int(query.get("cursor", "").removeprefix("next:") or 0)
        limit = int(query.get("limit") or 100)
        more = start + limit < len(rows)
        out: dict[str, Any] = {
            "ok": True,
            key: rows[start : start + limit],
            "response_metadata": {"next_cursor": f"next:{start + limit}" if more else ""},
        }
        if has_more:
            out["has_more"] = more
        return 200, out, {}
