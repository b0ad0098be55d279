"""A small GitHub REST v3 client: token auth, Link paging, ETags, rate limits.

A 304 to a conditional request (``If-None-Match``) comes back as data with no body (it
costs no rate limit and downloads nothing). Rate limits become ``TransientError`` with a
``retry_after``: a ``retry-after`` header is waited out first, then the primary limit
(403/429 with ``x-ratelimit-remaining: 0``) waits until ``x-ratelimit-reset``, then a
secondary limit without either header (a 429, or a 403 whose message names a rate limit)
waits a minute, as GitHub asks; they are retried through ``headwater.retry``. 401 names
the `token` option, another 403 the permission the call needs, 404 and 410 (an issue
deleted from a repository the token reads) become ``MissingAtServer``.
See https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api and
https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from headwater.connectors.http import (
    MissingAtServer,
    Params,
    describe_network_error,
    parse_retry_after,
)
from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.retry import RetryPolicy, call_with_retry

__all__ = ["GithubClient", "MissingAtServer", "Page"]


@dataclass(frozen=True)
class Page:
    """One answer: ``body`` is None for a 304; ``next`` is the Link header's rel=next."""

    status: int
    body: Any
    etag: str | None
    next: str | None


class GithubClient:
    """GET JSON from the GitHub REST API, retried, with errors a user can act on."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str,
        timeout: float,
        user_agent: str,
        policy: RetryPolicy,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.policy = policy
        self._client = httpx.Client(
            transport=transport,
            timeout=timeout,
            follow_redirects=True,
            headers={
                "User-Agent": user_agent,
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {token}",
                "X-GitHub-Api-Version": "2022-11-28",
            },
        )

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def page(
        self,
        path: str,
        params: Params | None = None,
        *,
        permission: str,
        etag: str | None = None,
        policy: RetryPolicy | None = None,
    ) -> Page:
        """One page of ``path`` with its Link header and ETag (a conditional GET when given one)."""
        url = path if path.startswith("http") else self.base_url + path
        headers = {"If-None-Match": etag} if etag else {}

        def once() -> Page:
            try:
                response = self._client.get(
                    url, params=dict(params) if params else None, headers=headers
                )
            except httpx.HTTPError as exc:
                raise TransientError(describe_network_error(exc, url)) from exc
            return self._decode(response, url, permission)

        return call_with_retry(once, policy or self.policy)

    def get(self, path: str, params: Params | None = None, *, permission: str) -> Any:
        """The JSON body of ``path``."""
        return self.page(path, params, permission=permission).body

    def every(self, path: str, params: Params | None = None, *, permission: str) -> list[Any]:
        """Every item of a Link-paged list; raises if any page fails."""
        rows: list[Any] = []
        page: Page | None = self.page(path, params, permission=permission)
        while page is not None:
            rows.extend(page.body or [])
            page = self.page(page.next, permission=permission) if page.next else None
        return rows

    def _decode(self, response: httpx.Response, url: str, permission: str) -> Page:
        status, headers = response.status_code, response.headers
        shown = url.split("?", 1)[0]
        if status in (403, 429) and "retry-after" in headers:
            raise TransientError(
                f"GitHub GET {shown} returned HTTP {status} (secondary rate limit); waiting "
                "for Retry-After",
                retry_after=parse_retry_after(headers.get("retry-after")) or 60.0,
            )
        if status in (403, 429) and headers.get("x-ratelimit-remaining") == "0":
            reset = headers.get("x-ratelimit-reset", "")
            wait = max(0.0, float(reset) - time.time()) if reset.isdigit() else 60.0
            raise TransientError(
                f"GitHub GET {shown}: primary rate limit exhausted; waiting {wait:.0f}s for "
                "x-ratelimit-reset",
                retry_after=wait,
            )
        if status == 429 or (status == 403 and _says_rate_limit(response)):
            # a secondary limit without either header: GitHub asks for at least a minute
            raise TransientError(
                f"GitHub GET {shown} returned HTTP {status} (secondary rate limit); waiting "
                "a minute, as GitHub asks",
                retry_after=60.0,
            )
        if status >= 500:
            raise TransientError(f"GitHub GET {shown} returned HTTP {status}; retrying")
        if status == 401:
            raise CredentialError(
                f"GitHub GET {shown} returned HTTP 401 Bad credentials; expected `token` to "
                "be a valid personal access token or app token; create one and set `token`"
            )
        if status == 403:
            raise CredentialError(
                f"GitHub GET {shown} returned HTTP 403; the token lacks the permission "
                f"`{permission}`; grant `{permission}` to the token"
            )
        if status in (404, 410):  # 410 Gone: an issue deleted from a repo the token reads
            raise MissingAtServer(f"GitHub GET {shown} returned HTTP {status}")
        if status == 304:
            return Page(304, None, headers.get("etag"), None)
        if status != 200:
            raise ConfigError(
                f"GitHub GET {shown} returned HTTP {status}; expected 200; check `base_url`"
            )
        following = response.links.get("next", {}).get("url")
        return Page(200, response.json(), headers.get("etag"), following)


def _says_rate_limit(response: httpx.Response) -> bool:
    """A 403 whose message names a rate limit ("You have exceeded a secondary rate limit")."""
    try:
        body = response.json()
    except ValueError:
        return "rate limit" in response.text.lower()
    message = body.get("message", "") if isinstance(body, dict) else ""
    return "rate limit" in str(message).lower()
