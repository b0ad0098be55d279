"""A small JSON client for Atlassian Cloud REST APIs, shared by Confluence and Jira.

Basic auth with an account email and an API token, JSON GETs, and one place that turns
HTTP answers into Headwater errors: 401 names the token option, 403 names the scope the
call needs, 404 becomes ``MissingAtServer`` (the caller decides what a missing space,
page or project means), 429 and 5xx become ``TransientError`` with the server's
``Retry-After`` and are retried through the one retry helper, ``headwater.retry``.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urljoin

import httpx

from headwater.connectors.http import (
    TRANSIENT_STATUSES,
    MissingAtServer,
    Params,
    describe_network_error,
    parse_retry_after,
)
from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.retry import RetryPolicy, call_with_retry


class AtlassianClient:
    """GET JSON from one Atlassian Cloud site, retried, with errors a user can act on."""

    def __init__(
        self,
        base_url: str,
        *,
        email: str,
        token: str,
        product: str,
        timeout: float,
        user_agent: str,
        policy: RetryPolicy,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.product = product
        self.policy = policy
        self._client = httpx.Client(
            transport=transport,
            auth=(email, token),
            timeout=timeout,
            headers={"User-Agent": user_agent, "Accept": "application/json"},
            follow_redirects=False,
        )

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def url(self, path: str) -> str:
        """An absolute URL for an API path (``/wiki/...``) or an absolute next link."""
        return path if path.startswith("http") else urljoin(self.base_url + "/", path.lstrip("/"))

    def get(
        self,
        path: str,
        params: Params | None = None,
        *,
        scope: str,
        policy: RetryPolicy | None = None,
    ) -> Any:
        """The decoded JSON body of a 200 answer to ``GET path``."""
        url = self.url(path)

        def once() -> Any:
            try:
                response = self._client.get(url, params=dict(params) if params else None)
            except httpx.HTTPError as exc:
                raise TransientError(describe_network_error(exc, url)) from exc
            return self._decode(response, url, scope)

        return call_with_retry(once, policy or self.policy)

    def _decode(self, response: httpx.Response, url: str, scope: str) -> Any:
        status = response.status_code
        shown = url.split("?", 1)[0]
        if status in TRANSIENT_STATUSES:
            raise TransientError(
                f"{self.product} GET {shown} returned HTTP {status}; the API is rate limiting "
                "or failing; it is retried after the server's Retry-After",
                retry_after=parse_retry_after(response.headers.get("retry-after")),
            )
        if status == 401:
            raise CredentialError(
                f"{self.product} GET {shown} returned HTTP 401; expected `email` and "
                "`api_token` to be a valid account email and API token; create a token at "
                "https://id.atlassian.com/manage-profile/security/api-tokens and set `api_token`"
            )
        if status == 403:
            raise CredentialError(
                f"{self.product} GET {shown} returned HTTP 403; the token lacks the scope "
                f"`{scope}` (or the account lacks that permission); grant `{scope}` to the "
                "API token's account"
            )
        if status == 404:
            raise MissingAtServer(f"{self.product} GET {shown} returned HTTP 404")
        if status != 200:
            raise ConfigError(
                f"{self.product} GET {shown} returned HTTP {status}; expected 200; check "
                "`base_url` (the site's address, e.g. https://example.atlassian.net)"
            )
        try:
            return response.json()
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{self.product} GET {shown} did not answer JSON ({exc}); expected the REST "
                "API there; check `base_url`"
            ) from exc
