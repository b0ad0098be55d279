"""A small Microsoft Graph client: bearer token, JSON, retries, Graph's error shape.

Graph throttles with HTTP 429 (and 503) carrying ``Retry-After``
(https://learn.microsoft.com/en-us/graph/throttling); those, other 5xx and transport
faults become ``TransientError`` with the wait and are retried through ``headwater.retry``.
Every other status comes back to the caller (a 410 on delta means "resync").
"""

from __future__ import annotations

from typing import Any

import httpx

from headwater.connectors._bearer import BearerClient
from headwater.errors import CredentialError, ItemError
from headwater.retry import RetryPolicy

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


class GraphClient(BearerClient):
    """GETs of Graph URLs (relative to ``base_url`` or absolute nextLinks)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float,
        user_agent: str,
        policy: RetryPolicy,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(
            "Graph",
            base_url,
            token,
            timeout=timeout,
            user_agent=user_agent,
            policy=policy,
            transport=transport,
            busy=_graph_busy,
            follow_redirects=True,  # /content answers 302 to a pre-authenticated URL
        )

    def json(self, url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        """The JSON object Graph answers for ``url``, or the error its status means."""
        response = self.get(url, headers=headers)
        raise_for_status(response, url)
        body = response.json()
        if not isinstance(body, dict):
            raise ItemError("bad_response", f"Graph {url} answered {body!r}; expected an object")
        return body


def _graph_busy(response: httpx.Response) -> str | None:
    if response.status_code == 429 or response.status_code >= 500:
        return graph_error(response)[0] or "busy"
    return None


def raise_for_status(response: httpx.Response, url: str) -> None:
    """Raise the error a non-200 Graph response means (credentials, missing, busy…)."""
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
