"""A small Box API 2.0 client: retried GETs, marker and offset paging, Box's error shape.

Every call goes through ``BearerClient`` (the shared retry policy): a 429
``rate_limit_exceeded`` waits out ``Retry-After``, a 5xx is retried
(https://developer.box.com/guides/api-calls/permissions-and-errors/rate-limits). A 401
names `token`; a 403 ``insufficient_scope`` names the scope the call needs
(``root_readonly`` for files and folders, ``manage_groups`` for groups,
https://developer.box.com/guides/api-calls/permissions-and-errors/scopes); any other
error is a ``BoxError`` carrying Box's ``status`` and ``code``
(https://developer.box.com/guides/api-calls/status-codes).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from headwater.connectors._bearer import BearerClient
from headwater.errors import CredentialError, ItemError
from headwater.retry import RetryPolicy

__all__ = ["BoxClient", "BoxError"]


class BoxError(ItemError):
    """A Box error answer other than credentials: ``status`` and Box's ``code``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(
            "not_found" if status == 404 else f"http_{status}", message, permanent=status == 404
        )
        self.status, self.code = status, code


class BoxClient:
    """GETs of ``{api_url}/2.0/…`` with one token, retried; redirects followed (content)."""

    def __init__(
        self, api_url: str, token: str, *, timeout: float, user_agent: str, policy: RetryPolicy
    ) -> None:
        self._http = BearerClient(
            "Box",
            api_url.rstrip("/") + "/2.0",
            token,
            timeout=timeout,
            user_agent=user_agent,
            policy=policy,
            follow_redirects=True,  # /files/{id}/content answers 302 to a download URL
        )

    def get(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        policy: RetryPolicy | None = None,
    ) -> httpx.Response:
        """The answer to GET ``path`` (under ``/2.0``), raising what an error means."""
        response = self._http.get(path, params, policy=policy)
        check(response, path)
        return response

    def json(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        policy: RetryPolicy | None = None,
    ) -> dict[str, Any]:
        """The JSON object Box answers for ``path``."""
        body = self.get(path, params, policy=policy).json()
        if not isinstance(body, dict):
            raise BoxError(200, "bad_response", f"Box {path} answered {body!r}; expected an object")
        return body

    def marker_pages(
        self, path: str, params: Mapping[str, str], marker: str | None = None
    ) -> Iterator[tuple[list[dict[str, Any]], str | None]]:
        """(entries, next marker) of each page of a marker-paged collection."""
        while True:
            query = dict(params) | {"usemarker": "true"} | ({"marker": marker} if marker else {})
            body = self.json(path, query)
            marker = body.get("next_marker") or None
            yield list(body.get("entries") or []), marker
            if marker is None:
                return

    def offset_entries(self, path: str, limit: int) -> Iterator[dict[str, Any]]:
        """Every entry of an offset-paged collection (``total_count``)."""
        offset = 0
        while True:
            body = self.json(path, {"offset": str(offset), "limit": str(limit)})
            entries = list(body.get("entries") or [])
            yield from entries
            offset += len(entries)
            if not entries or offset >= int(body.get("total_count") or 0):
                return

    def close(self) -> None:
        """Close the HTTP client."""
        self._http.close()


def check(response: httpx.Response, path: str) -> None:
    """Raise what a non-2xx Box answer means."""
    status = response.status_code
    if status < 300:
        return
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    code = str(body.get("code") or "")
    message = str(body.get("message") or response.headers.get("www-authenticate", ""))
    if status == 401:
        raise CredentialError(
            f"box `token` was rejected (HTTP 401 {message}); expected a valid, unexpired "
            "access token (developer token, OAuth or JWT app token); get a new one and set "
            "`token`"
        )
    if status == 403 and code == "insufficient_scope":
        scope = "manage_groups" if path.startswith("/groups") else "root_readonly"
        raise CredentialError(
            f"box `token` lacks the scope `{scope}` for {path} (HTTP 403 insufficient_scope); "
            f"enable it in the app's configuration (Developer Console) and issue a new token"
        )
    raise BoxError(
        status, code, f"Box {path} returned HTTP {status} {code}: {message}; expected 200"
    )
