"""A small Microsoft Graph client: bearer token, JSON, retries, Graph's error shape.

Graph throttles with HTTP 429 (and 503) carrying ``Retry-After``
(https://learn.microsoft.com/en-us/graph/throttling); those, other 5xx and transport
faults become ``TransientError`` with the wait and are retried through ``headwater.retry``.
Every other status comes back to the caller (a 410 on delta means "resync").
"""

from __future__ import annotations

from typing import Any

import httpx

from headwater.connectors.http import describe_network_error, parse_retry_after
from headwater.errors import CredentialError, ItemError, TransientError
from headwater.retry import RetryPolicy, call_with_retry

PERMISSION = "Sites.Read.All"


def graph_error(response: httpx.Response) -> tuple[str, str]:
    """(code, message) of a Graph error body."""
    try:
        error = response.json().get("error", {})
    except ValueError:
        return "", response.text[:200]
    if not isinstance(error, dict):
        return "", str(error)[:200]
    return str(error.get("code", "")), str(error.get("message", ""))


class GraphClient:
    """GETs of Graph URLs (relative to ``base_url`` or absolute nextLinks)."""

    def __init__(
        self, base_url: str, token: str, *, timeout: float, user_agent: str, policy: RetryPolicy
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.policy = policy
        self._client = httpx.Client(
            headers={"Authorization": f"Bearer {token}", "User-Agent": user_agent},
            timeout=timeout,
            follow_redirects=True,  # /content answers 302 to a pre-authenticated URL
        )

    def get(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        policy: RetryPolicy | None = None,
    ) -> httpx.Response:
        full = url if url.startswith(("http://", "https://")) else self.base_url + url

        def attempt() -> httpx.Response:
            try:
                response = self._client.get(full, headers=headers)
            except httpx.HTTPError as exc:
                raise TransientError(describe_network_error(exc, full)) from exc
            if response.status_code == 429 or response.status_code >= 500:
                code = graph_error(response)[0] or "busy"
                raise TransientError(
                    f"Graph {url} returned HTTP {response.status_code} ({code}); the API is "
                    "throttling or failing, retry later",
                    retry_after=parse_retry_after(response.headers.get("retry-after")),
                )
            return response

        return call_with_retry(attempt, policy or self.policy)

    def json(self, url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        response = self.get(url, headers=headers)
        raise_for_status(response, url)
        body = response.json()
        if not isinstance(body, dict):
            raise ItemError("bad_response", f"Graph {url} answered {body!r}; expected an object")
        return body


def raise_for_status(response: httpx.Response, url: str) -> None:
    status = response.status_code
    if status == 200:
        return
    code, message = graph_error(response)
    if status == 401:
        raise CredentialError(
            f"sharepoint `token` was rejected by Graph (HTTP 401 {code}: {message}); expected a "
            "valid Microsoft Graph access token; get a new one and set `token`"
        )
    if status == 403:
        raise CredentialError(
            f"sharepoint `token` may not read {url} (HTTP 403 {code}); expected the "
            f"application permission {PERMISSION}; grant it (with admin consent) and issue a "
            "new token"
        )
    raise ItemError(
        "not_found" if status == 404 else f"http_{status}",
        f"Graph {url} returned HTTP {status} ({code}: {message}); expected 200",
        permanent=status == 404,
    )
