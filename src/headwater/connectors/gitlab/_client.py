"""A small GitLab REST v4 client: bearer token, Link paging, errors a user can act on.

Every GET goes through ``BearerClient`` (the shared retry policy): a 429 waits out
``Retry-After`` (GitLab sends it with ``RateLimit-Reset`` on a throttled answer), and a
5xx is retried. 401 names the `token` option; a 403 whose body says
``insufficient_scope`` names the scope the token lacks (``read_api``); another 403 names
the permission; 404 becomes ``MissingAtServer`` (GitLab answers 404 for a project the
token may not see); a 400 becomes ``BadRequest`` (a page token or ref GitLab refuses).
See https://docs.gitlab.com/api/rest/ (pagination, status codes) and
https://docs.gitlab.com/security/rate_limits/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from headwater.connectors._bearer import BearerClient
from headwater.connectors.http import MissingAtServer, Params
from headwater.errors import ConfigError, CredentialError, ItemError
from headwater.retry import RetryPolicy

__all__ = ["BadRequest", "GitlabClient", "MissingAtServer", "Page", "project_path"]

SCOPE = "read_api"


class BadRequest(ItemError):
    """GitLab answered 400: a page token, ref or parameter it refuses."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_request", message, permanent=True)


@dataclass(frozen=True)
class Page:
    """One answer: its JSON ``body`` and the Link header's rel=next (None on the last)."""

    body: Any
    next: str | None


def project_path(project: str) -> str:
    """``/projects/{id}`` with the ``namespace/project`` path URL-encoded, as GitLab asks."""
    return "/projects/" + quote(project, safe="")


class GitlabClient:
    """GET JSON (or raw bytes) from ``{base_url}/api/v4``, retried."""

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
        self.api = base_url.rstrip("/") + "/api/v4"
        self._http = BearerClient(
            "GitLab",
            self.api,
            token,
            timeout=timeout,
            user_agent=user_agent,
            policy=policy,
            transport=transport,
        )

    def page(
        self, path: str, params: Params | None = None, *, policy: RetryPolicy | None = None
    ) -> Page:
        """One page of ``path`` (a path under the API root or an absolute next link)."""
        response = self._get(path, params, policy)
        return Page(response.json(), response.links.get("next", {}).get("url"))

    def get(
        self, path: str, params: Params | None = None, *, policy: RetryPolicy | None = None
    ) -> Any:
        """The JSON body of ``path``."""
        return self._get(path, params, policy).json()

    def raw(self, path: str, params: Params | None = None) -> bytes:
        """The raw bytes of ``path`` (a blob)."""
        return self._get(path, params, None).content

    def every(self, path: str, params: Params | None = None) -> list[Any]:
        """Every item of a Link-paged list; raises if any page fails."""
        rows: list[Any] = []
        page: Page | None = self.page(path, params)
        while page is not None:
            rows.extend(page.body or [])
            page = self.page(page.next) if page.next else None
        return rows

    def close(self) -> None:
        """Close the HTTP client."""
        self._http.close()

    def _get(self, path: str, params: Params | None, policy: RetryPolicy | None) -> httpx.Response:
        query = {k: str(v) for k, v in params.items()} if params else None
        response = self._http.get(path, query, policy=policy)
        status = response.status_code
        shown = path.split("?", 1)[0]
        if status == 200:
            return response
        if status == 401:
            raise CredentialError(
                f"GitLab GET {shown} returned HTTP 401 Unauthorized; expected `token` to be a "
                "valid, unexpired personal, group or project access token; create one and set "
                "`token`"
            )
        if status == 403 and _body(response).get("error") == "insufficient_scope":
            raise CredentialError(
                f"GitLab GET {shown} returned HTTP 403 insufficient_scope; the token lacks the "
                f"scope `{SCOPE}`; create a token with the `{SCOPE}` scope and set `token`"
            )
        if status == 403:
            raise CredentialError(
                f"GitLab GET {shown} returned HTTP 403 Forbidden; the token's user may not "
                "read this; give the user at least the Reporter role on the project"
            )
        if status == 404:
            raise MissingAtServer(f"GitLab GET {shown} returned HTTP 404 {_message(response)}")
        if status == 400:
            raise BadRequest(f"GitLab GET {shown} returned HTTP 400 {_message(response)}")
        raise ConfigError(
            f"GitLab GET {shown} returned HTTP {status}; expected 200; check `base_url` "
            "(the instance root, e.g. https://gitlab.com)"
        )


def _body(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _message(response: httpx.Response) -> str:
    body = _body(response)
    return str(body.get("message") or body.get("error") or "").strip()
