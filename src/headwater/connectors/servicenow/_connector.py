"""The ServiceNow connector: published Knowledge Base articles of chosen knowledge bases.

Articles are listed from the Table API (``kb_knowledge``, ``workflow_state=published`` in
the configured knowledge bases, ordered by ``sys_updated_on`` then ``sys_id``), offset
paged by the ``Link`` header with a checkpoint after every page. After the first run the
query asks ``sys_updated_on>=`` the newest seen minus ``window_overlap``. The article's
HTML comes with the listing. Deletes: ``enumerate()`` lists the published articles, so a
retired, unpublished or deleted one leaves it. Readers from user criteria (see _acl.py);
an article whose criteria cannot be read, or cannot be expressed, fails closed.
See docs/connectors/servicenow.md.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from pydantic import Field, SecretStr, field_validator

from headwater.connectors._governed import governed_transport
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
)
from headwater.connectors.servicenow._acl import ServicenowAcl, Unexpressible
from headwater.connectors.servicenow._client import ServicenowClient
from headwater.errors import ConfigError, TransientError
from headwater.retry import RetryPolicy
from headwater.types import (
    Checkpoint,
    Failure,
    KnownVersions,
    ListedGroup,
    SourceDocument,
    SourceItem,
    Stage,
    Window,
)
from headwater.units import parse_duration

FIELDS = (
    "sys_id,number,short_description,text,kb_knowledge_base,sys_updated_on,"
    "can_read_user_criteria,cannot_read_user_criteria,workflow_state"
)
GLIDE = "%Y-%m-%d %H:%M:%S"  # sys_updated_on as the API gives it (UTC)


class ServicenowOptions(ConnectorOptions):
    """The keys of a ``servicenow`` source."""

    base_url: str = Field(pattern=r"^https?://")  # https://{instance}.service-now.com
    user: str = Field(min_length=1)
    password: SecretStr
    knowledge_bases: list[str] = Field(min_length=1)  # titles or sys_ids
    window_overlap: str = "1m"
    page_size: int = Field(default=100, ge=1, le=10000)
    timeout: float = Field(default=30.0, gt=0)
    retry_attempts: int = Field(default=6, ge=1)
    retry_initial_wait: float = Field(default=1.0, ge=0)
    retry_max_wait: float = Field(default=120.0, ge=0)

    @field_validator("window_overlap")
    @classmethod
    def _duration(cls, value: str) -> str:
        try:
            parse_duration(value)
        except (ValueError, ConfigError) as exc:
            raise ValueError(f'window_overlap {value!r} is not a duration, e.g. "1m"') from exc
        return value


class ServicenowConnector:
    """Reads the published articles of the configured knowledge bases."""

    type_name: ClassVar[str] = "servicenow"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[ServicenowOptions]] = ServicenowOptions

    def __init__(self, options: ServicenowOptions, context: SourceContext) -> None:
        self.options = options
        self._web = options.base_url.rstrip("/")
        self._overlap = parse_duration(options.window_overlap) or timedelta(0)
        self._client = ServicenowClient(
            options.base_url,
            user=options.user,
            password=options.password.get_secret_value(),
            timeout=options.timeout,
            user_agent=context.user_agent,
            transport=governed_transport(
                context, "servicenow", options.user + ":" + options.password.get_secret_value()
            ),
            policy=RetryPolicy(
                attempts=options.retry_attempts,
                initial_wait=options.retry_initial_wait,
                max_wait=options.retry_max_wait,
            ),
        )
        self._acl = ServicenowAcl(self._client, context.source_id)
        self._bases: list[str] | None = None
        self._expected: int | None = None  # X-Total-Count of the running read's query

    def _kbs(self, policy: RetryPolicy | None = None) -> list[str]:
        """The sys_ids of the configured knowledge bases; ConfigError naming unknown ones."""
        if self._bases is None:
            params = {"sysparm_fields": "sys_id,title", "sysparm_limit": "1000"}
            rows = self._client.page("kb_knowledge_base", params, policy=policy).rows
            by_name = {str(r["title"]): str(r["sys_id"]) for r in rows}
            by_name |= {str(r["sys_id"]): str(r["sys_id"]) for r in rows}
            unknown = [kb for kb in self.options.knowledge_bases if kb not in by_name]
            if unknown:
                known = ", ".join(sorted(str(r["title"]) for r in rows)) or "none"
                raise ConfigError(
                    f"servicenow `knowledge_bases`: no knowledge base {unknown} visible to "
                    f"{self.options.user}; expected a title or sys_id of one of: {known}"
                )
            self._bases = sorted({by_name[kb] for kb in self.options.knowledge_bases})
            self._acl.load_bases(self._bases)
        return self._bases

    def validate(self) -> None:
        """Resolve the knowledge bases once, without retries."""
        try:
            self._kbs(RetryPolicy(attempts=1))
        except TransientError as exc:
            raise TransientError(
                f"servicenow `base_url` {self.options.base_url}: {exc}; expected the instance "
                "answering there; check `base_url` and try again later"
            ) from exc

    def _query(self, since: str | None) -> str:
        parts = ["workflow_state=published", "kb_knowledge_baseIN" + ",".join(self._kbs())]
        if since:
            parts.append(f"sys_updated_on>={since}")
        return "^".join([*parts, "ORDERBYsys_updated_on", "ORDERBYsys_id"])

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the published articles updated since the last run, oldest first."""
        state = json.loads(checkpoint.cursor) if checkpoint else {}
        before: str | None = state.get("newest")
        at: dict[str, Any] = state.get("at") or {}
        newest: str | None = at.get("newest")
        if at.get("next"):
            page = self._client.page(str(at["next"]))
        else:
            since = None
            if before:
                edge = datetime.strptime(before, GLIDE).replace(tzinfo=UTC) - self._overlap
                since = edge.strftime(GLIDE)
            params = {"sysparm_query": self._query(since), "sysparm_fields": FIELDS}
            page = self._client.page(
                "kb_knowledge", params | {"sysparm_limit": str(self.options.page_size)}
            )
        self._expected = page.total
        while True:
            for row in page.rows:
                updated = str(row.get("sys_updated_on") or "")
                if updated and (newest is None or updated > newest):
                    newest = updated
                yield self._item(row)
            if page.next is None:
                break
            yield Checkpoint(
                json.dumps({"newest": before, "at": {"next": page.next, "newest": newest}})
            )
            page = self._client.page(page.next)
        if before is not None and (newest is None or before > newest):
            newest = before
        return Checkpoint(json.dumps({"newest": newest}))

    def expected_total(self) -> int | None:
        """The articles the running read's query matches (its ``X-Total-Count``)."""
        return self._expected

    def _item(self, row: dict[str, Any]) -> SourceItem:
        sid = str(row["sys_id"])
        oid, locator = f"kb_knowledge/{sid}", f"{self._web}/kb_view.do?sys_kb_id={sid}"
        self._kbs()
        try:
            access = self._acl.article_access(row)
        except Unexpressible as exc:
            return Failure(
                oid, locator, Stage.FETCH.value, exc.error_class, str(exc), permanent=True
            )
        except TransientError as exc:
            return Failure(
                oid,
                locator,
                Stage.FETCH.value,
                "acl_unavailable",
                f"servicenow article {row.get('number', sid)}: its user criteria could not be "
                f"read ({exc}); not indexed with a guessed ACL; the next sync tries again",
            )
        title = str(row.get("short_description") or row.get("number") or sid)
        head = f"<html><head><title>{html.escape(title)}</title></head>"
        body = f"{head}<body>{row.get('text') or ''}</body></html>"
        updated = row.get("sys_updated_on")
        return SourceDocument(
            object_id=oid,
            locator=locator,
            title=title,
            version=str(updated or ""),
            content=body.encode(),
            media_type="text/html",
            updated_at=datetime.strptime(str(updated), GLIDE).replace(tzinfo=UTC)
            if updated
            else None,
            metadata={
                "number": str(row.get("number", "")),
                "knowledge_base": str(row.get("kb_knowledge_base", "")),
            },
            access=access,
        )

    def _published(self, fields: str) -> Iterator[dict[str, Any]]:
        params = {"sysparm_query": self._query(None), "sysparm_fields": fields}
        return self._client.rows("kb_knowledge", params)

    def enumerate(self) -> Iterator[str]:
        """Every published article of the knowledge bases; raises if a page fails."""
        for row in self._published("sys_id"):
            yield f"kb_knowledge/{row['sys_id']}"

    def groups(self) -> Iterator[ListedGroup]:
        """Each combination of user criteria the articles need, with its people."""
        self._kbs()
        return self._acl.groups(self._published(FIELDS))
