"""The choke point of every SaaS request: an httpx transport that asks the governor first.

Each SaaS client (``BearerClient``, the Atlassian, GitHub and Gmail clients) sends
through ``governed_transport(context, vendor, secret)``: before a request goes out it
takes a token of the credential's shared budget (``Throttle.acquire``, which waits when
the budget is spent or the credential is blocked); when the vendor answers that it is
throttling (a 429, a 503 with ``Retry-After``, GitHub's 403 with an exhausted
``x-ratelimit-remaining``) it blocks the credential for every process sharing it until
the vendor's time. The answer still goes back to the client, whose retry policy decides
what to do next. Without a governor (a connector built outside a workspace) requests go
straight out.
"""

from __future__ import annotations

import time

import httpx

from headwater.connectors.base import SourceContext
from headwater.connectors.http import parse_retry_after
from headwater.ratelimit import DEFAULT_BLOCK_S, Throttle


def throttle_wait(response: httpx.Response, now: float | None = None) -> float | None:
    """Seconds the vendor asks every caller of this credential to wait, or None."""
    status, headers = response.status_code, response.headers
    after = parse_retry_after(headers.get("retry-after"))
    if status == 429:
        return after if after is not None else DEFAULT_BLOCK_S
    if status == 503 and after is not None:
        return after
    if status == 403 and headers.get("x-ratelimit-remaining") == "0":
        # GitHub's primary limit: wait for the reset (epoch seconds)
        # https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
        reset = headers.get("x-ratelimit-reset", "")
        if reset.isdigit():
            return max(0.0, float(reset) - (time.time() if now is None else now))
        return after if after is not None else DEFAULT_BLOCK_S
    return None


class GovernedTransport(httpx.BaseTransport):
    """Sends through ``inner`` once ``throttle`` allows; reports throttling answers."""

    def __init__(self, throttle: Throttle, inner: httpx.BaseTransport | None = None) -> None:
        self.throttle = throttle
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.throttle.acquire(request.url.host)
        response = self.inner.handle_request(request)
        wait = throttle_wait(response)
        if wait is not None:
            where = f"{request.method} {request.url.copy_with(query=None)}"
            self.throttle.blocked(wait, f"HTTP {response.status_code} to {where}")
        return response

    def close(self) -> None:
        self.inner.close()


def governed_transport(
    context: SourceContext, vendor: str, secret: str
) -> httpx.BaseTransport | None:
    """The transport a SaaS client of ``vendor`` sends through with ``secret``; None (a
    plain transport) when the context has no governor."""
    if context.governor is None:
        return None
    return GovernedTransport(context.governor.bind(vendor, secret))
