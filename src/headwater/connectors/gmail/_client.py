"""A small Gmail API client: a delegated token per mailbox, retries, Google's errors.

A 429, a 5xx and a 403 whose reason is ``rateLimitExceeded`` or
``userRateLimitExceeded`` wait out ``Retry-After`` (else the shared backoff) through the
shared retry policy; 404 is ``MissingAtServer`` (a message deleted, or a ``historyId``
too old to list history from); another 403 names the scope.
See https://developers.google.com/gmail/api/guides/handle-errors and
https://developers.google.com/gmail/api/reference/quota.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from headwater.connectors.gmail._auth import SCOPE, DelegatedKey
from headwater.connectors.http import MissingAtServer, describe_network_error, parse_retry_after
from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.retry import RetryPolicy, call_with_retry

RATE_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})

__all__ = ["GmailClient", "MissingAtServer"]


def _reason(response: httpx.Response) -> tuple[str, str]:
    try:
        error = response.json().get("error", {})
    except (ValueError, AttributeError):
        return "", response.text[:200]
    if not isinstance(error, dict):
        return "", str(error)[:200]
    reasons = [e.get("reason", "") for e in error.get("errors") or [] if isinstance(e, dict)]
    return next((r for r in reasons if r), str(error.get("status", ""))), str(
        error.get("message", "")
    )


class GmailClient:
    """GET JSON from ``{api_url}/gmail/v1/users/{user}/…`` as each user."""

    def __init__(
        self,
        api_url: str,
        key: DelegatedKey,
        *,
        timeout: float,
        user_agent: str,
        policy: RetryPolicy,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.api = api_url.rstrip("/") + "/gmail/v1/users/"
        self.key = key
        self.policy = policy
        self._http = httpx.Client(
            transport=transport, timeout=timeout, headers={"User-Agent": user_agent}
        )

    def get(
        self,
        user: str,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        policy: RetryPolicy | None = None,
    ) -> dict[str, Any]:
        """The JSON answer of ``users/{user}/{path}``."""
        used = policy or self.policy
        url = self.api + quote(user, safe="@") + "/" + path

        def attempt() -> httpx.Response:
            token = self.key.token(user, self._http, used)
            try:
                response = self._http.get(
                    url, params=params, headers={"Authorization": f"Bearer {token}"}
                )
            except httpx.HTTPError as exc:
                raise TransientError(describe_network_error(exc, url)) from exc
            status = response.status_code
            if (
                status == 429
                or status >= 500
                or (status == 403 and _reason(response)[0] in RATE_REASONS)
            ):
                raise TransientError(
                    f"Gmail {path} for {user} returned HTTP {status}; throttled or failing, "
                    "retry later",
                    retry_after=parse_retry_after(response.headers.get("retry-after")),
                )
            return response

        response = call_with_retry(attempt, used)
        status = response.status_code
        if status == 200:
            body = response.json()
            return body if isinstance(body, dict) else {}
        reason, message = _reason(response)
        shown = f"Gmail {path.split('?', 1)[0]} for {user} returned HTTP {status} {reason}".rstrip()
        if status == 404:
            raise MissingAtServer(f"{shown}: {message}")
        if status in (401, 403):
            raise CredentialError(
                f"{shown}: {message}; the delegated token lacks access; grant the service "
                f"account domain-wide delegation for {SCOPE}"
            )
        raise ConfigError(f"{shown}: {message}; expected 200; check `api_url`")

    def close(self) -> None:
        """Close the HTTP client."""
        self._http.close()
