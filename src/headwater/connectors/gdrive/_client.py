"""A small Drive v3 client: bearer token, JSON, retries, and Drive's error shapes.

Transport faults, HTTP 429, 5xx and Drive's rate-limit 403s (``userRateLimitExceeded``,
``rateLimitExceeded``; https://developers.google.com/drive/api/guides/limits and
https://developers.google.com/drive/api/guides/handle-errors) become ``TransientError``
carrying the server's ``Retry-After`` and are retried through ``headwater.retry``. Every
other status comes back to the caller, which decides what a 401, 403, 404 or 410 means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from headwater.connectors._bearer import BearerClient
from headwater.errors import CredentialError, ItemError
from headwater.retry import RetryPolicy

READONLY_SCOPE = "https://www.googleapis.com/auth/drive.readonly"
RATE_LIMIT_REASONS = frozenset({"userRateLimitExceeded", "rateLimitExceeded"})
SCOPE_REASONS = frozenset({"insufficientPermissions", "ACCESS_TOKEN_SCOPE_INSUFFICIENT"})
FILE_FIELDS = (  # what the connector reads of a file resource, in listings and files.get
    "id,name,mimeType,modifiedTime,md5Checksum,size,trashed,driveId,webViewLink,parents,"
    "permissions(type,role,emailAddress,domain,deleted)"
)


def error_reason(response: httpx.Response) -> tuple[str, str]:
    """(reason, message) of a Google API error body; empty strings when there is none."""
    try:
        error = response.json().get("error", {})
    except ValueError:
        return "", response.text[:200]
    if not isinstance(error, dict):
        return "", str(error)[:200]
    reasons = [e.get("reason", "") for e in error.get("errors", []) if isinstance(e, dict)]
    details = [d.get("reason", "") for d in error.get("details", []) if isinstance(d, dict)]
    reason = next((r for r in reasons + details if r), str(error.get("status", "")))
    return reason, str(error.get("message", ""))


class DriveClient(BearerClient):
    """GETs against ``base_url`` with one access token, retried on transient faults."""

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
            "Drive API",
            base_url,
            token,
            timeout=timeout,
            user_agent=user_agent,
            policy=policy,
            transport=transport,
            busy=_drive_busy,
        )

    def json(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The JSON body of a 200; CredentialError for 401/403, ItemError otherwise."""
        response = self.get(path, params)
        raise_for_status(response, path)
        body = response.json()
        if not isinstance(body, dict):
            raise ItemError(
                "bad_response", f"Drive API {path} answered {body!r}; expected an object"
            )
        return body


def _drive_busy(response: httpx.Response) -> str | None:
    """Drive throttles with 429 and with 403 rate-limit reasons; 5xx is a server fault."""
    status = response.status_code
    rate_limited = status == 403 and error_reason(response)[0] in RATE_LIMIT_REASONS
    if status == 429 or status >= 500 or rate_limited:
        return error_reason(response)[0] or "busy"
    return None


def token_refused(response: httpx.Response) -> bool:
    """Drive no longer accepts a changes page token: 410 Gone, or 400 invalid ``pageToken``.

    The changes reference says a rejected token is to be discarded and the listing
    restarted; the API rejects it with 400 ``Invalid Value`` at location ``pageToken``.
    https://developers.google.com/drive/api/reference/rest/v3/changes/list
    """
    if response.status_code == 410:
        return True
    if response.status_code != 400:
        return False
    try:
        error = response.json().get("error", {})
    except (ValueError, AttributeError):
        return False
    if not isinstance(error, dict):
        return False
    located = [e.get("location") for e in error.get("errors", []) if isinstance(e, dict)]
    return "pageToken" in located or "pagetoken" in str(error.get("message", "")).lower()


def raise_for_status(response: httpx.Response, path: str) -> None:
    """Raise the error a user can act on for a non-200 Drive answer."""
    status = response.status_code
    if status == 200:
        return
    reason, message = error_reason(response)
    if status == 401:
        raise CredentialError(
            f"gdrive `token` was rejected by {path} (HTTP 401: {message or reason}); expected a "
            "valid OAuth 2.0 access token; refresh it and set `token` again"
        )
    if status == 403 and reason in SCOPE_REASONS:
        raise CredentialError(
            f"gdrive `token` lacks the scope {READONLY_SCOPE} ({path}: HTTP 403 {reason}); "
            "grant that scope to the OAuth client or service account and issue a new token"
        )
    raise ItemError(
        "not_found" if status == 404 else f"http_{status}",
        f"Drive API {path} returned HTTP {status} ({reason}: {message}); expected 200",
        permanent=status in (403, 404),
    )
