"""What the bearer-token SaaS connectors (Drive, SharePoint, Slack) share.

Their options carry the same token, timeout and retry keys (``BearerApiOptions``), and
their clients make the same retried GET: a bearer token header, transport faults as
``TransientError``, and an API-specific test (``busy``) that turns a throttling or
failing answer into ``TransientError`` with the server's ``Retry-After``. What an
answer means beyond that (a 401, a 410, ``ok: false``) stays with each API's client.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpx
from pydantic import Field, SecretStr

from headwater.connectors.base import ConnectorOptions
from headwater.connectors.http import describe_network_error, parse_retry_after
from headwater.errors import TransientError
from headwater.retry import RetryPolicy, call_with_retry

# The answer's reason when it is a throttle or a server fault to wait out, else None.
BusyTest = Callable[[httpx.Response], str | None]


class BearerApiOptions(ConnectorOptions):
    """The token, timeout and retry keys of a bearer-token API source."""

    token: SecretStr
    timeout: float = Field(default=30.0, gt=0)
    retry_attempts: int = Field(default=6, ge=1)
    retry_initial_wait: float = Field(default=1.0, ge=0)
    retry_max_wait: float = Field(default=120.0, ge=0)

    def retry_policy(self) -> RetryPolicy:
        """The retry policy these options configure."""
        return RetryPolicy(
            attempts=self.retry_attempts,
            initial_wait=self.retry_initial_wait,
            max_wait=self.retry_max_wait,
        )


def busy_when_429_or_5xx(response: httpx.Response) -> str | None:
    """``"busy"`` for an HTTP 429 or 5xx response (worth retrying), else None."""
    code = response.status_code
    return "busy" if code == 429 or code >= 500 else None


class BearerClient:
    """Retried GETs with one bearer token against ``base_url`` (or absolute URLs)."""

    def __init__(
        self,
        api: str,
        base_url: str,
        token: str,
        *,
        timeout: float,
        user_agent: str,
        policy: RetryPolicy,
        busy: BusyTest = busy_when_429_or_5xx,
        follow_redirects: bool = False,
        scheme: str = "Bearer",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.api = api
        self.base_url = base_url.rstrip("/")
        self.policy = policy
        self._busy = busy
        self._client = httpx.Client(
            transport=transport,
            headers={"Authorization": f"{scheme} {token}", "User-Agent": user_agent},
            timeout=timeout,
            follow_redirects=follow_redirects,
        )

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def get(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        policy: RetryPolicy | None = None,
    ) -> httpx.Response:
        """The answer to GET ``path``; throttling and server faults are waited out."""
        return self._send("GET", path, params, None, headers, policy)

    def post(
        self,
        path: str,
        body: object,
        *,
        headers: Mapping[str, str] | None = None,
        policy: RetryPolicy | None = None,
    ) -> httpx.Response:
        """The answer to POST ``path`` with the JSON ``body`` (a read-only query, such as
        a search: safe to repeat); throttling and server faults are waited out."""
        return self._send("POST", path, None, body, headers, policy)

    def patch(
        self,
        path: str,
        body: object,
        *,
        headers: Mapping[str, str] | None = None,
        policy: RetryPolicy | None = None,
    ) -> httpx.Response:
        """The answer to PATCH ``path`` with the JSON ``body`` (an update that sets
        values: safe to repeat); throttling and server faults are waited out."""
        return self._send("PATCH", path, None, body, headers, policy)

    def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: object,
        headers: Mapping[str, str] | None,
        policy: RetryPolicy | None,
    ) -> httpx.Response:
        url = path if path.startswith(("http://", "https://")) else self.base_url + path

        def attempt() -> httpx.Response:
            try:
                if method == "GET":
                    response = self._client.get(url, params=params, headers=headers)
                else:
                    response = self._client.request(method, url, json=body, headers=headers)
            except httpx.HTTPError as exc:
                raise TransientError(describe_network_error(exc, url)) from exc
            reason = self._busy(response)
            if reason is not None:
                raise TransientError(
                    f"{self.api} {path} returned HTTP {response.status_code} ({reason}); the "
                    "API is throttling or failing, retry later",
                    retry_after=parse_retry_after(response.headers.get("retry-after")),
                )
            return response

        return call_with_retry(attempt, policy or self.policy)
