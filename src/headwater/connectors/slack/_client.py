"""A small Slack Web API client: bearer token, cursor pages, retries, Slack's error shape.

Every method answers HTTP 200 with ``{"ok": false, "error": ...}`` on failure
(https://api.slack.com/web#evaluating_responses). Rate limits answer HTTP 429 with
``Retry-After`` seconds (https://api.slack.com/apis/rate-limits); those, ``ratelimited``
and the other passing ``ok: false`` errors (``PASSING_ERRORS``), 5xx and transport faults
become ``TransientError`` with the wait and are retried through ``headwater.retry``.
Lists page with ``cursor`` / ``response_metadata.next_cursor``
(https://api.slack.com/apis/pagination).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx

from headwater.connectors._bearer import BearerClient
from headwater.connectors.http import parse_retry_after
from headwater.errors import ConfigError, CredentialError, ItemError, TransientError
from headwater.retry import RetryPolicy, call_with_retry

AUTH_ERRORS = {"invalid_auth", "not_authed", "token_revoked", "token_expired",
               "account_inactive"}  # fmt: skip
# ``ok: false`` errors every method documents as passing: the rate limit, and the server
# faults "likely due to a transient issue on our end" (internal_error, fatal_error) or a
# "temporarily unavailable" service. https://api.slack.com/methods/conversations.history
PASSING_ERRORS = frozenset({"ratelimited", "internal_error", "fatal_error",
                            "service_unavailable"})  # fmt: skip


class SlackApiError(ItemError):
    """An ``ok: false`` answer the caller may handle (``thread_not_found``)."""

    def __init__(self, method: str, code: str) -> None:
        super().__init__(code, f"Slack {method} answered error {code!r}; expected ok")
        self.code = code


class SlackClient(BearerClient):
    """Calls of Web API methods, relative to ``base_url`` (``https://slack.com/api``)."""

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
            "Slack",
            base_url,
            token,
            timeout=timeout,
            user_agent=user_agent,
            policy=policy,
            transport=transport,
        )

    def call(
        self, method: str, params: dict[str, str] | None = None, policy: RetryPolicy | None = None
    ) -> dict[str, Any]:
        """The body of the Web API ``method``, with rate limits and passing errors waited out."""

        def attempt() -> dict[str, Any]:
            # One attempt of the HTTP call (429 and 5xx are waited out inside it); an
            # ``ok: false`` body with a passing error is waited out here, around it.
            response = self.get(f"/{method}", params or {}, policy=RetryPolicy(attempts=1))
            try:
                body = response.json()
            except ValueError:
                body = None
            if response.status_code != 200 or not isinstance(body, dict):
                raise ItemError(
                    f"http_{response.status_code}",
                    f"Slack {method} returned HTTP {response.status_code} "
                    f"{response.text[:200]!r}; expected a JSON object",
                )
            if body.get("error") in PASSING_ERRORS:
                raise TransientError(
                    f"Slack {method} answered `{body['error']}`; retry later",
                    retry_after=parse_retry_after(response.headers.get("retry-after")),
                )
            return body

        body = call_with_retry(attempt, policy or self.policy)
        if not body.get("ok"):
            raise_for_error(method, body, params or {})
        return body

    def pages(
        self, method: str, key: str, params: dict[str, str], policy: RetryPolicy | None = None
    ) -> Iterator[tuple[list[dict[str, Any]], str]]:
        """(entries under ``key``, next cursor) of each page; "" after the last one."""
        cursor = params.get("cursor", "")
        while True:
            body = self.call(method, {**params, "cursor": cursor} if cursor else params, policy)
            cursor = str((body.get("response_metadata") or {}).get("next_cursor") or "")
            yield list(body.get(key) or []), cursor
            if not cursor:
                return


def raise_for_error(method: str, body: dict[str, Any], params: dict[str, str]) -> None:
    """Raise the error that a failed Web API body means (credentials, scope, config…)."""
    code = str(body.get("error") or "unknown_error")
    if code in AUTH_ERRORS:
        raise CredentialError(
            f"slack `token` was rejected by {method} ({code}); expected a valid bot token "
            "(xoxb-...) of the workspace; reinstall the app and set `token`"
        )
    if code == "missing_scope":
        needed = body.get("needed") or "?"
        raise CredentialError(
            f"slack `token` lacks the scope {needed} that {method} needs (missing_scope); "
            f"expected the scopes listed in docs/connectors/slack.md; add {needed} to the "
            "app's bot token scopes and reinstall it"
        )
    if code in ("channel_not_found", "not_in_channel"):
        channel = params.get("channel", "?")
        raise ConfigError(
            f"slack channel {channel!r} cannot be read by {method} ({code}); expected a "
            "channel the app was invited to; invite the app or fix `channels`"
        )
    raise SlackApiError(method, code)
