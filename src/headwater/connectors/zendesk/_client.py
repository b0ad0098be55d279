"""A small Zendesk API client: API-token auth, cursor paging, errors a user can act on.

Requests carry ``Authorization: Basic base64("{email}/token:{api_token}")``. Every GET
goes through ``BearerClient`` (the shared retry policy): a 429 waits out ``Retry-After``
(the account's plan sets requests a minute; the incremental exports allow 10 a minute), a
5xx is retried. 401 names `email` and `token`; 403 says the user must be an agent or
admin; 404 is ``MissingAtServer``; 400 and 422 are ``BadRequest`` (a cursor or start time
Zendesk refuses). See https://developer.zendesk.com/api-reference/introduction/security-and-auth/,
https://developer.zendesk.com/api-reference/introduction/rate-limits/ and
https://developer.zendesk.com/api-reference/introduction/pagination/.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx

from headwater.connectors._bearer import BearerClient
from headwater.connectors.http import MissingAtServer
from headwater.errors import ConfigError, CredentialError, ItemError
from headwater.retry import RetryPolicy

__all__ = ["BadRequest", "MissingAtServer", "ZendeskClient"]


class BadRequest(ItemError):
    """Zendesk answered 400 or 422: a cursor or parameter it refuses."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_request", message, permanent=True)


class ZendeskClient:
    """GET JSON from ``{base_url}/api/v2``, retried."""

    def __init__(
        self,
        base_url: str,
        *,
        email: str,
        token: str,
        timeout: float,
        user_agent: str,
        policy: RetryPolicy,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        basic = base64.b64encode(f"{email}/token:{token}".encode()).decode()
        self.email = email
        self._http = BearerClient(
            "Zendesk",
            base_url.rstrip("/"),
            basic,
            timeout=timeout,
            user_agent=user_agent,
            policy=policy,
            transport=transport,
            scheme="Basic",
        )

    def get(
        self, path: str, params: dict[str, str] | None = None, *, policy: RetryPolicy | None = None
    ) -> dict[str, Any]:
        """The JSON object at ``path`` (under the site or an absolute next-page URL)."""
        response = self._http.get(path, params, policy=policy)
        status, shown = response.status_code, f"Zendesk GET {path.split('?', 1)[0]}"
        try:
            body = response.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        if status == 200:
            return body
        said = str(body.get("description") or body.get("error") or "").strip()
        if status == 401:
            raise CredentialError(
                f"{shown} returned HTTP 401 ({said}); expected `email` and `token` to be an "
                "agent's email and an API token of the account; create a token in Admin Center "
                "> Apps and integrations > Zendesk API and set both"
            )
        if status == 403:
            raise CredentialError(
                f"{shown} returned HTTP 403 ({said}); {self.email} may not read this: the "
                "incremental article export and user segments need an agent or admin with "
                "Guide access; use such a user's `email` and token"
            )
        if status == 404:
            raise MissingAtServer(f"{shown} returned HTTP 404 {said}")
        if status in (400, 422):
            raise BadRequest(f"{shown} returned HTTP {status} {said}")
        raise ConfigError(f"{shown} returned HTTP {status}; expected 200; check `base_url`")

    def every(self, path: str, key: str) -> Iterator[dict[str, Any]]:
        """Every item under ``key`` of a cursor-paged list (``page[size]``, ``links.next``
        while ``meta.has_more``)."""
        answer = self.get(path, {"page[size]": "100"})
        while True:
            yield from answer.get(key) or []
            following = (answer.get("links") or {}).get("next")
            if not (answer.get("meta") or {}).get("has_more") or not following:
                return
            answer = self.get(str(following))

    def close(self) -> None:
        """Close the HTTP client."""
        self._http.close()
