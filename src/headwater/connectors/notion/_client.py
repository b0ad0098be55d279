"""A small Notion API client: bearer token, ``Notion-Version``, cursors, errors.

Every call goes through ``BearerClient`` (the shared retry policy): a 429
``rate_limited`` waits out ``Retry-After`` (Notion allows an average of three requests a
second per integration), a 5xx (``internal_server_error``, ``service_unavailable``,
``gateway_timeout``) is retried. The error body's ``code`` says the rest: ``unauthorized``
names the `token` option, ``restricted_resource`` the capability the call needs,
``object_not_found`` is ``MissingAtServer`` (Notion also says so for pages not shared
with the integration), ``validation_error`` is ``BadRequest`` (a cursor it refuses).
See https://developers.notion.com/reference/status-codes,
https://developers.notion.com/reference/request-limits and
https://developers.notion.com/reference/versioning.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx

from headwater.connectors._bearer import BearerClient
from headwater.connectors.http import MissingAtServer
from headwater.errors import ConfigError, CredentialError, ItemError
from headwater.retry import RetryPolicy

__all__ = ["READ_CONTENT", "READ_USERS", "BadRequest", "MissingAtServer", "NotionClient"]

READ_CONTENT = "Read content"
READ_USERS = "Read user information including email addresses"


class BadRequest(ItemError):
    """Notion answered 400 ``validation_error``: a cursor or parameter it refuses."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_request", message, permanent=True)


class NotionClient:
    """GET and POST JSON against the Notion API, retried, with errors a user can act on."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str,
        version: str,
        timeout: float,
        user_agent: str,
        policy: RetryPolicy,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = BearerClient(
            "Notion",
            base_url,
            token,
            timeout=timeout,
            user_agent=user_agent,
            policy=policy,
            transport=transport,
        )
        self._headers = {"Notion-Version": version}

    def get(
        self,
        path: str,
        params: dict[str, str] | None = None,
        *,
        capability: str = READ_CONTENT,
        policy: RetryPolicy | None = None,
    ) -> dict[str, Any]:
        """The JSON object at ``path``."""
        response = self._http.get(path, params, headers=self._headers, policy=policy)
        return _decode(response, path, capability)

    def post(
        self,
        path: str,
        body: dict[str, Any],
        *,
        capability: str = READ_CONTENT,
        policy: RetryPolicy | None = None,
    ) -> dict[str, Any]:
        """The JSON answer to a read-only POST (search, database query)."""
        response = self._http.post(path, body, headers=self._headers, policy=policy)
        return _decode(response, path, capability)

    def every(self, path: str, *, capability: str = READ_CONTENT) -> Iterator[dict[str, Any]]:
        """Every result of a cursor-paged GET list (``start_cursor``/``has_more``)."""
        params = {"page_size": "100"}
        while True:
            answer = self.get(path, params, capability=capability)
            yield from answer.get("results") or []
            if not answer.get("has_more") or not answer.get("next_cursor"):
                return
            params = {"page_size": "100", "start_cursor": str(answer["next_cursor"])}

    def close(self) -> None:
        """Close the HTTP client."""
        self._http.close()


def _decode(response: httpx.Response, path: str, capability: str) -> dict[str, Any]:
    status = response.status_code
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    if status == 200:
        return body
    code, message = str(body.get("code", "")), str(body.get("message", "")).strip()
    shown = f"Notion {path} returned HTTP {status} {code}".rstrip()
    if status == 401:
        raise CredentialError(
            f"{shown}; expected `token` to be a valid internal integration secret (or OAuth "
            "access token); copy it from the integration's settings and set `token`"
        )
    if status == 403:
        raise CredentialError(
            f"{shown}; the integration lacks the capability {capability!r}; enable it in the "
            "integration's Capabilities settings"
        )
    if status == 404:
        raise MissingAtServer(f"{shown}: {message}")
    if code == "missing_version" or "Notion-Version" in message:
        raise ConfigError(f'{shown}: {message}; set `notion_version` to e.g. "2022-06-28"')
    if status == 400:
        raise BadRequest(f"{shown}: {message}")
    raise ConfigError(f"{shown}: {message}; expected 200; check `base_url`")
