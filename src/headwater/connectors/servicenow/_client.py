"""A small ServiceNow Table API client: basic auth, offset paging by ``Link``, errors.

Every GET goes through ``BearerClient`` (the shared retry policy): a 429 (an instance's
rate limit rules) waits out ``Retry-After``, a 5xx is retried. 401 names `user` and
`password`; 403 names the table the user may not read (a role or ACL is missing); 400
names the query. Rows come with ``sysparm_exclude_reference_link=true`` (references as
plain sys_ids). See https://www.servicenow.com/docs/bundle/xanadu-api-reference/page/integrate/inbound-rest/concept/c_TableAPI.html
and https://www.servicenow.com/docs/bundle/xanadu-api-reference/page/integrate/inbound-rest/concept/inbound-REST-API-rate-limiting.html.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from headwater.connectors._bearer import BearerClient
from headwater.errors import ConfigError, CredentialError
from headwater.retry import RetryPolicy

__all__ = ["Page", "ServicenowClient"]


@dataclass(frozen=True)
class Page:
    """One page of rows, the ``Link`` header's rel=next (None on the last) and the
    ``X-Total-Count`` header: the rows the query matches in all (None if absent)."""

    rows: list[dict[str, Any]]
    next: str | None
    total: int | None = None


class ServicenowClient:
    """GET rows from ``{base_url}/api/now/table/{table}``, retried."""

    def __init__(
        self,
        base_url: str,
        *,
        user: str,
        password: str,
        timeout: float,
        user_agent: str,
        policy: RetryPolicy,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        basic = base64.b64encode(f"{user}:{password}".encode()).decode()
        self._http = BearerClient(
            "ServiceNow",
            base_url.rstrip("/"),
            basic,
            timeout=timeout,
            user_agent=user_agent,
            policy=policy,
            transport=transport,
            scheme="Basic",
        )

    def page(
        self,
        table_or_url: str,
        params: dict[str, str] | None = None,
        *,
        policy: RetryPolicy | None = None,
    ) -> Page:
        """One page of ``table`` with ``params`` (or of an absolute next-page URL)."""
        absolute = table_or_url.startswith(("http://", "https://"))
        path = table_or_url if absolute else f"/api/now/table/{table_or_url}"
        query = None if absolute else {"sysparm_exclude_reference_link": "true"} | (params or {})
        response = self._http.get(path, query, policy=policy)
        status = response.status_code
        table = path.split("?", 1)[0].rsplit("/", 1)[-1]
        try:
            body = response.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        if status == 200:
            rows = body.get("result") or []
            total = response.headers.get("X-Total-Count", "")
            following = response.links.get("next", {}).get("url")
            return Page(list(rows), following, int(total) if total.isdigit() else None)
        error = body.get("error") or {}
        said = f"{error.get('message', '')}: {error.get('detail', '')}".strip(": ")
        if status == 401:
            raise CredentialError(
                f"ServiceNow GET {table} returned HTTP 401 ({said}); expected `user` and "
                "`password` of an account allowed to use the REST API; fix them"
            )
        if status == 403:
            raise CredentialError(
                f"ServiceNow GET {table} returned HTTP 403 ({said}); the user may not read "
                f"table {table!r}; grant it a role with read access to {table} (e.g. "
                "knowledge_admin for the knowledge tables, snc_read_only or an ACL for the rest)"
            )
        if status == 400:
            raise ConfigError(f"ServiceNow GET {table} returned HTTP 400 ({said}); check the query")
        raise ConfigError(
            f"ServiceNow GET {table} returned HTTP {status}; expected 200; check `base_url` "
            "(the instance, e.g. https://acme.service-now.com)"
        )

    def rows(self, table: str, params: dict[str, str]) -> Iterator[dict[str, Any]]:
        """Every row of ``table`` matching ``params``; raises if any page fails."""
        page: Page | None = self.page(table, {"sysparm_limit": "1000"} | params)
        while page is not None:
            yield from page.rows
            page = self.page(page.next) if page.next else None

    def close(self) -> None:
        """Close the HTTP client."""
        self._http.close()
