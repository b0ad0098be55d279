"""A fake Zendesk API: Help Center articles (incremental export and list), user segments,
users, group and organization memberships, as the docs describe them.

- API-token authentication: ``Authorization: Basic base64("{email}/token:{api_token}")``;
  a bad one answers ``401 {"error": "Couldn't authenticate you"}``:
  https://developer.zendesk.com/api-reference/introduction/security-and-auth/
- the incremental article export ``GET /api/v2/help_center/incremental/articles
  ?start_time={epoch}``: every article whose metadata changed at or after the start
  time, oldest first, up to 1,000 a page (``page_limit`` here), with ``end_time`` (the
  last article's time) and ``next_page`` (the same query from ``end_time``; null on the
  last page); agents and admins only (403 for an end user):
  https://developer.zendesk.com/documentation/help_center/help-center-api/understanding-incremental-article-exports/
  https://developer.zendesk.com/api-reference/help_center/help-center-api/articles/#list-articles
- the article object (``draft``, ``locale``, ``user_segment_id``, ``user_segment_ids``,
  ``html_url``, ``body``); archived articles are not in the article lists:
  https://developer.zendesk.com/api-reference/help_center/help-center-api/articles/
- cursor pagination (``page[size]`` ≤ 100, ``page[after]``, ``meta.has_more``,
  ``meta.after_cursor``, ``links.next``); a cursor it did not issue is a 400:
  https://developer.zendesk.com/api-reference/introduction/pagination/
- user segments (``user_type``, ``group_ids``, ``organization_ids``, ``tags``, ``or_tags``,
  ``added_user_ids``), users (``role``, ``active``, ``suspended``, ``tags``,
  ``organization_id``), group and organization memberships:
  https://developer.zendesk.com/api-reference/help_center/help-center-api/user_segments/
  https://developer.zendesk.com/api-reference/ticketing/users/users/
  https://developer.zendesk.com/api-reference/ticketing/groups/group_memberships/
  https://developer.zendesk.com/api-reference/ticketing/organizations/organization_memberships/
- rate limits: 429 with ``Retry-After`` (seconds):
  https://developer.zendesk.com/api-reference/introduction/rate-limits/
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from fakes.confluence.server import Answer, Call, FakeApi

__all__ = ["Article", "FakeZendesk"]


def zd_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Article:
    id: int
    title: str
    body: str
    updated: datetime
    locale: str = "en-us"
    draft: bool = False
    archived: bool = False
    segments: list[int] = field(default_factory=list)


class FakeZendesk(FakeApi):
    """``with FakeZendesk() as zd: zd.articles[1] = Article(...)``."""

    def __init__(self) -> None:
        super().__init__(user="agent@example.com", token="zd-token")
        self.role = "admin"
        self.articles: dict[int, Article] = {}
        self.segments: dict[int, dict[str, Any]] = {}
        self.users: list[dict[str, Any]] = []
        self.group_memberships: list[tuple[int, int]] = []  # (user_id, group_id)
        self.org_memberships: list[tuple[int, int]] = []  # (user_id, organization_id)
        self.page_limit = 1000
        self.rate_limited = 0
        self.retry_after = "0"
        self.help_center = True
        self._cursors: dict[str, int] = {}

    def authorized(self, headers: dict[str, str]) -> bool:
        expected = base64.b64encode(f"{self.user}/token:{self.token}".encode()).decode()
        return headers.get("authorization") == f"Basic {expected}"

    def _faults(self, call: Call) -> Answer | None:
        if self.rate_limited > 0:
            self.rate_limited -= 1
            body = {"error": "APIRateLimitExceeded",
                    "description": "Number of allowed API requests per minute exceeded"}  # fmt: skip
            return Answer(429, body, {"Retry-After": self.retry_after})
        return super()._faults(call)

    def _dispatch(
        self, method: str, raw: str, headers: dict[str, str], body: bytes = b""
    ) -> Answer:
        answer = super()._dispatch(method, raw, headers, body)
        if answer.status == 401:  # Zendesk's own body for a bad credential
            return Answer(401, {"error": "Couldn't authenticate you"})
        return answer

    def answer(self, call: Call) -> Answer:
        path = call.path.removesuffix(".json")
        if path == "/api/v2/users/me":
            return Answer(200, {"user": {"id": 1, "email": self.user, "role": self.role}})
        if path.startswith("/api/v2/help_center") and not self.help_center:
            return Answer(404, {"error": "RecordNotFound", "description": "Not found"})
        staff_only = path.startswith(("/api/v2/help_center/incremental", "/api/v2/help_center/user_segments", "/api/v2/users", "/api/v2/group_memberships", "/api/v2/organization_memberships"))  # fmt: skip
        if staff_only and self.role not in ("agent", "admin"):
            return Answer(403, {"error": "Forbidden", "description": "You do not have access to this page. Please contact the account owner of this help desk for further help."})  # fmt: skip
        if path == "/api/v2/help_center/incremental/articles":
            return self._export(call)
        if path == "/api/v2/help_center/articles":
            rows = [
                self._article(a)
                for a in sorted(self.articles.values(), key=lambda a: a.id)
                if not a.archived
            ]
            return self._cursor_page(call, "articles", rows)
        if path == "/api/v2/help_center/user_segments":
            return self._cursor_page(
                call, "user_segments", [self.segments[k] for k in sorted(self.segments)]
            )
        if path.startswith("/api/v2/help_center/user_segments/"):
            found = self.segments.get(int(path.rsplit("/", 1)[1]))
            if found is None:
                return Answer(404, {"error": "RecordNotFound", "description": "Not found"})
            return Answer(200, {"user_segment": found})
        if path == "/api/v2/users":
            return self._cursor_page(call, "users", self.users)
        if path == "/api/v2/group_memberships":
            rows = [{"user_id": u, "group_id": g} for u, g in self.group_memberships]
            return self._cursor_page(call, "group_memberships", rows)
        if path == "/api/v2/organization_memberships":
            rows = [{"user_id": u, "organization_id": o} for u, o in self.org_memberships]
            return self._cursor_page(call, "organization_memberships", rows)
        return Answer(404, {"error": "InvalidEndpoint", "description": "Not found"})

    def _article(self, article: Article) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": article.id,
            "title": article.title,
            "body": article.body,
            "locale": article.locale,
            "source_locale": article.locale,
            "draft": article.draft,
            "updated_at": zd_time(article.updated),
            "html_url": f"{self.url}/hc/{article.locale}/articles/{article.id}",
            "section_id": 7,
            "label_names": [],
            "user_segment_id": article.segments[0] if len(article.segments) == 1 else None,
        }
        if len(article.segments) > 1:
            row["user_segment_ids"] = list(article.segments)
        return row

    def _export(self, call: Call) -> Answer:
        if "start_time" not in call.query:
            return Answer(400, {"error": "InvalidValue", "description": "start_time is required"})
        start = int(call.query["start_time"])
        rows = sorted(
            (a for a in self.articles.values() if int(a.updated.timestamp()) >= start),
            key=lambda a: (a.updated, a.id),
        )
        page = rows[: self.page_limit]
        end = int(page[-1].updated.timestamp()) if page else start
        more = len(rows) > self.page_limit
        following = f"{self.url}{call.path}?{urlencode({'start_time': end})}" if more else None
        body = {"articles": [self._article(a) for a in page], "count": len(page),
                "end_time": end, "next_page": following}  # fmt: skip
        return Answer(200, body)

    def _cursor_page(self, call: Call, key: str, rows: list[Any]) -> Answer:
        size = min(int(call.query.get("page[size]", 100)), 100)
        start = 0
        if "page[after]" in call.query:
            if call.query["page[after]"] not in self._cursors:
                return Answer(400, {"error": "InvalidPaginationParameter", "description": "cursor is invalid"})  # fmt: skip
            start = self._cursors[call.query["page[after]"]]
        end = start + size
        more = end < len(rows)
        meta: dict[str, Any] = {"has_more": more, "after_cursor": None, "before_cursor": None}
        links: dict[str, Any] = {"next": None, "prev": None}
        if more:
            token = str(uuid.uuid4())
            self._cursors[token] = end
            meta["after_cursor"] = token
            links["next"] = (
                f"{self.url}{call.path}?{urlencode({'page[size]': size, 'page[after]': token})}"
            )
        return Answer(200, {key: rows[start:end], "meta": meta, "links": links})
