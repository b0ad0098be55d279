"""The Zendesk connector: Help Center articles, with readers from their user segments.

Articles are listed with the incremental article export
(``/api/v2/help_center/incremental/articles?start_time=``, up to 1,000 a page, body
included), following ``next_page`` with a checkpoint after every page; the next run
starts at the last page's ``end_time``, as Zendesk asks. A time-based export repeats the
article at a page boundary (the next page starts at the time the last one ended): the
articles already given at that second are remembered and skipped. The export is
time-based: there is no cursor to expire, and a saved page is a start time. A draft
(unpublished) article is ``Deleted``; archived and deleted articles leave the listing of
``enumerate()`` (every article, cursor paged). An article whose user segment cannot be
read fails closed (a ``Failure``, never indexed with a guessed ACL).
See docs/connectors/zendesk.md.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from headwater.clock import as_utc
from headwater.connectors._bearer import BearerApiOptions
from headwater.connectors._governed import governed_transport
from headwater.connectors.base import ConnectorCapabilities, ReadStream, SourceContext
from headwater.connectors.zendesk._acl import ZendeskAcl, segment_ids
from headwater.connectors.zendesk._client import MissingAtServer, ZendeskClient
from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.retry import RetryPolicy
from headwater.types import (
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

EXPORT = "/api/v2/help_center/incremental/articles"


class ZendeskOptions(BearerApiOptions):
    """The keys of a ``zendesk`` source (``token``: an API token of ``email``)."""

    base_url: str = Field(pattern=r"^https?://")  # https://{subdomain}.zendesk.com
    email: str = Field(min_length=3, pattern=r"@")
    locales: list[str] = Field(default_factory=list)  # empty: every locale
    start_time: int = Field(default=0, ge=0)  # the first run's export start (epoch seconds)


def _time(value: str | None) -> datetime | None:
    return as_utc(datetime.fromisoformat(value.replace("Z", "+00:00"))) if value else None


def _epoch(value: str | None) -> int | None:
    moment = _time(value)
    return int(moment.timestamp()) if moment else None


class ZendeskConnector:
    """Reads the Help Center articles of one Zendesk account."""

    type_name: ClassVar[str] = "zendesk"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[ZendeskOptions]] = ZendeskOptions

    def __init__(self, options: ZendeskOptions, context: SourceContext) -> None:
        self.options = options
        self._client = ZendeskClient(
            options.base_url,
            email=options.email,
            token=options.token.get_secret_value(),
            timeout=options.timeout,
            user_agent=context.user_agent,
            transport=governed_transport(context, "zendesk", options.token.get_secret_value()),
            policy=options.retry_policy(),
        )
        self._acl = ZendeskAcl(self._client, context.source_id)

    def validate(self) -> None:
        """Who the token's user is (an agent or admin), and that Help Center answers."""
        once = RetryPolicy(attempts=1)
        try:
            me = self._client.get("/api/v2/users/me", policy=once).get("user") or {}
            if me.get("role") not in ("agent", "admin"):
                raise CredentialError(
                    f"zendesk `email` {self.options.email} signs in as {me.get('role')!r}; "
                    "expected an agent or admin (the incremental article export and user "
                    "segments need one); use such a user's `email` and API `token`"
                )
            try:
                self._client.get("/api/v2/help_center/articles", {"page[size]": "1"}, policy=once)
            except MissingAtServer as exc:
                raise ConfigError(
                    f"zendesk `base_url` {self.options.base_url}: no Help Center answers there "
                    "(HTTP 404); check the subdomain and that Help Center is activated"
                ) from exc
        except TransientError as exc:
            raise TransientError(
                f"zendesk `base_url` {self.options.base_url}: {exc}; expected Zendesk "
                "answering there; check `base_url` and try again later"
            ) from exc

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the articles changed since the last export's end time, page by page."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        start = int(state.get("start_time", self.options.start_time))
        at: dict[str, Any] = state.get("at") or {}
        url: str | None = at.get("next")
        edge, given = at.get("end"), set(at.get("given") or [])
        first = f"{EXPORT}?start_time={start}"
        while True:
            answer = self._client.get(url or first)
            articles = list(answer.get("articles") or [])
            for article in articles:
                when = _epoch(article.get("updated_at"))
                if edge is not None and when == edge and int(article["id"]) in given:
                    continue  # given at the end of the page before
                item = self._item(article)
                if item is not None:
                    yield item
            end = answer.get("end_time")
            if end is not None and int(end) != edge:
                edge, given = int(end), set()
            given |= {int(a["id"]) for a in articles if _epoch(a.get("updated_at")) == edge}
            following = answer.get("next_page")
            if not following or not articles:
                break
            if following == (url or first):
                raise ConfigError(
                    f"zendesk: more than a page of articles changed within the second "
                    f"{edge}; the time-based export cannot page past them; nothing is "
                    "deleted; set `start_time` past that second to go on"
                )
            url = str(following)
            spot = {"next": url, "end": edge, "given": sorted(given)}
            yield Checkpoint(json.dumps({"start_time": start, "at": spot}))
        return Checkpoint(json.dumps({"start_time": edge if edge is not None else start}))

    def _item(self, article: dict[str, Any]) -> SourceItem | None:
        oid = f"articles/{article['id']}"
        if self.options.locales and article.get("locale") not in self.options.locales:
            return None
        if article.get("draft"):
            return Deleted(oid)  # unpublished: readers no longer see it
        locator = str(article.get("html_url") or article.get("url") or oid)
        try:
            access = self._acl.article_access(article)
        except (TransientError, MissingAtServer) as exc:
            return Failure(
                oid,
                locator,
                Stage.FETCH.value,
                "acl_unavailable",
                f"zendesk article {article['id']}: its user segments could not be read "
                f"({exc}); it is not indexed with a guessed ACL; the next sync tries again",
            )
        title = str(article.get("title") or "")
        body = (
            f"<html><head><title>{html.escape(title)}</title></head><body>"
            f"<h1>{html.escape(title)}</h1>{article.get('body') or ''}</body></html>"
        )
        updated = _time(article.get("updated_at"))
        return SourceDocument(
            object_id=oid,
            locator=locator,
            title=title,
            version=f"{article.get('updated_at', '')}|{segment_ids(article)}",
            content=body.encode(),
            media_type="text/html",
            updated_at=updated,
            metadata={
                "locale": str(article.get("locale", "")),
                "section_id": str(article.get("section_id", "")),
                "labels": ", ".join(str(x) for x in article.get("label_names") or []),
            },
            access=access,
        )

    def enumerate(self) -> Iterator[str]:
        """Every published article (archived ones are not listed); raises on a failure."""
        for article in self._client.every("/api/v2/help_center/articles", "articles"):
            if article.get("draft"):
                continue
            if self.options.locales and article.get("locale") not in self.options.locales:
                continue
            yield f"articles/{article['id']}"

    def groups(self) -> Iterator[ListedGroup]:
        """Each user segment with its members' emails."""
        return self._acl.groups()
