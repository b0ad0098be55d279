"""A small Dropbox API v2 client: RPC POSTs, content downloads, errors a user can act on.

Every call goes through ``BearerClient`` (the shared retry policy): a 429
``too_many_requests`` waits out ``Retry-After``, a 5xx is retried. A 401 names the token
(``invalid_access_token``, ``expired_access_token``) or the missing scope
(``missing_scope`` with ``required_scope``); a 409 is an endpoint error, raised as
``EndpointError`` with its tag path (``reset``, ``path/not_found``). With
``select_user`` (a team member id) a team token acts as that member
(``Dropbox-API-Select-User``). See https://www.dropbox.com/developers/documentation/http/documentation
(errors, rate limits) and https://developers.dropbox.com/oauth-guide (scopes).
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from headwater.connectors._bearer import BearerClient
from headwater.errors import ConfigError, CredentialError, ItemError
from headwater.retry import RetryPolicy

__all__ = ["DropboxClient", "EndpointError"]


class EndpointError(ItemError):
    """A 409: the endpoint's own error, ``tag`` its summary path (``reset``, ``path/not_found``)."""

    def __init__(self, tag: str, message: str) -> None:
        super().__init__("not_found" if "not_found" in tag else "dropbox_error", message)
        self.tag = tag


class DropboxClient:
    """POST to the API and content hosts with one token, retried."""

    def __init__(
        self,
        api_url: str,
        content_url: str,
        *,
        token: str,
        select_user: str | None,
        timeout: float,
        user_agent: str,
        policy: RetryPolicy,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._api = BearerClient(
            "Dropbox",
            api_url,
            token,
            timeout=timeout,
            user_agent=user_agent,
            policy=policy,
            transport=transport,
        )
        self._content = BearerClient(
            "Dropbox",
            content_url,
            token,
            timeout=timeout,
            user_agent=user_agent,
            policy=policy,
            transport=transport,
        )
        self._select = {"Dropbox-API-Select-User": select_user} if select_user else {}

    def rpc(
        self,
        route: str,
        body: dict[str, Any] | None,
        *,
        policy: RetryPolicy | None = None,
        as_team: bool = False,
    ) -> dict[str, Any]:
        """The JSON answer of the RPC endpoint ``/2/{route}``."""
        headers = {} if as_team else self._select
        response = self._api.post(f"/2/{route}", body, headers=headers, policy=policy)
        _check(response, route)
        answer = response.json()
        return answer if isinstance(answer, dict) else {}

    def download(self, rev: str) -> bytes:
        """The bytes of the file revision ``rev``."""
        headers = self._select | {"Dropbox-API-Arg": json.dumps({"path": f"rev:{rev}"})}
        response = self._content.post("/2/files/download", None, headers=headers)
        _check(response, "files/download")
        return response.content

    def close(self) -> None:
        """Close the HTTP clients."""
        self._api.close()
        self._content.close()


def _check(response: httpx.Response, route: str) -> None:
    status = response.status_code
    if status == 200:
        return
    try:
        body = response.json()
    except ValueError:
        body = {"error_summary": response.text[:200]}
    body = body if isinstance(body, dict) else {}
    summary = str(body.get("error_summary", "")).rstrip("./")
    error = body.get("error") or {}
    tag = str(error.get(".tag", "")) if isinstance(error, dict) else ""
    shown = f"Dropbox {route} returned HTTP {status} {summary}".rstrip()
    if status == 401 and tag == "missing_scope":
        scope = error.get("required_scope", "?")
        raise CredentialError(
            f"{shown}; the token lacks the scope `{scope}`; add it to the app's permissions "
            "and issue a new token"
        )
    if status == 401:
        raise CredentialError(
            f"{shown}; expected `token` to be a valid, unexpired access token of the app; "
            "create one (or refresh it) and set `token`"
        )
    if status == 409:
        raise EndpointError(summary.split("/..", 1)[0], f"{shown}")
    if status == 400:
        raise ConfigError(f"{shown}: {response.text[:200]}; check the options")
    raise ConfigError(f"{shown}; expected 200; check `api_url` and `content_url`")
