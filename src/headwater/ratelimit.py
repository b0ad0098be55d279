"""The rate-limit governor's rules: rates as users write them, vendor defaults, the bucket.

Sources that share a credential share one budget. The budget is a token bucket per
credential, kept as GCRA state (a *theoretical arrival time* per rate, ``tat``): a
request may start once ``max(tat, now) - tolerance <= now``, and each start moves
``tat`` one interval on. That is a token bucket of ``count`` tokens refilled at
``count / period`` per second, stored as one number, so several processes can share it
through one row of the manifest (``manifest.throttles``). A 429 with ``Retry-After``
blocks the credential for everyone until then and empties its buckets, so the calls
that resume after the block are paced, not a burst. The decisions here are pure
functions of the stored state and the clock; the I/O lives in a ``RateStore`` (the
manifest's ``manifest.throttles.RateLedger``, or Redis: ``ratelimit_redis``) and the
HTTP transport (``connectors._governed``); ``SharedGovernor`` binds a source to a store.

A rate is ``"N/s"``, ``"N/min"``, ``"N/h"`` or ``"N/day"``; a source's ``rate_limit``
is one rate or a list of them (a per-second rate and a daily quota, say). A rate per
second or per minute spaces requests evenly; an hourly or daily quota is a bucket that
starts full, so a sync may spend it at the speed of the shorter rate.
``VENDOR_RATES`` holds each SaaS vendor's documented default, with the page it is from.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

PERIODS: Mapping[str, int] = {"s": 1, "min": 60, "h": 3600, "day": 86400}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(s|min|h|day)\s*$")
BURST_FROM_S = 60
"""Rates over a longer period than this may burst (see ``Rate.tolerance``)."""
DEFAULT_BLOCK_S = 1.0
"""How long a 429 without ``Retry-After`` blocks the credential."""


@dataclass(frozen=True)
class Rate:
    """At most ``count`` requests per ``period_s`` seconds (a bucket of ``count`` tokens)."""

    count: float
    period_s: int

    @property
    def interval(self) -> float:
        """Seconds between two requests at the steady rate."""
        return self.period_s / self.count

    @property
    def tolerance(self) -> float:
        """How far ahead of ``tat`` a request may start: none for a rate per second or
        per minute (vendors count those over a sliding window, so requests are spaced
        evenly), a full bucket's burst for an hourly or daily quota (spent at the speed
        of the shorter rates beside it)."""
        if self.period_s <= BURST_FROM_S or self.count <= 1:
            return 0.0
        return (self.count - 1) * self.interval

    def __str__(self) -> str:
        unit = next(name for name, seconds in PERIODS.items() if seconds == self.period_s)
        return f"{self.count:g}/{unit}"


def parse_rate(value: str) -> Rate:
    """``"10/s"``, ``"600/min"``, ``"5000/h"`` or ``"10000/day"`` as a ``Rate``.

    Raises ``ValueError`` naming the value and the form expected.
    """
    match = _RATE.match(value)
    if not match or float(match.group(1)) <= 0:
        raise ValueError(
            f"{value!r} is not a rate; expected a positive count per period, e.g. '10/s', "
            "'600/min', '5000/h' or '10000/day'"
        )
    return Rate(float(match.group(1)), PERIODS[match.group(2)])


def parse_rates(value: str | Sequence[str]) -> tuple[Rate, ...]:
    """A ``rate_limit`` setting (one rate or a list) as rates; ``ValueError`` if invalid."""
    values = [value] if isinstance(value, str) else list(value)
    if not values:
        raise ValueError(
            "rate_limit is an empty list; expected e.g. '10/s' or ['10/s', '10000/day']"
        )
    rates = tuple(parse_rate(v) for v in values)
    periods = [r.period_s for r in rates]
    if len(set(periods)) != len(periods):
        raise ValueError(
            f"rate_limit {values!r} names one period twice; expected at most one rate per "
            "period (s, min, h, day)"
        )
    return rates


@dataclass(frozen=True)
class VendorRate:
    """A vendor's documented rates, for requests to its hosted service (``hosts``: host
    names, or ``.suffix`` for any host under a domain). A self-hosted server (GitLab,
    GitHub Enterprise) or a proxy sets its own limits: only its 429s, and the source's
    ``rate_limit``, apply there."""

    rates: tuple[Rate, ...]
    hosts: tuple[str, ...]

    def serves(self, host: str) -> bool:
        """Whether ``host`` is the vendor's hosted service."""
        host = host.lower()
        return any(host.endswith(h) if h.startswith(".") else host == h for h in self.hosts)


# Each vendor's documented rate for one credential, with the page it is from. A vendor
# absent here documents no fixed request rate, and only its 429 / Retry-After answers are
# honoured (Atlassian's cost-based limits, Dropbox, Microsoft Graph, Gmail's per-method
# quota units, ServiceNow's instance-configured rules).
VENDOR_RATES: Mapping[str, VendorRate] = {
    # "Tier 3: 50+ per minute" (conversations.history, conversations.replies)
    # https://api.slack.com/apis/rate-limits
    "slack": VendorRate((parse_rate("50/min"),), ("slack.com",)),
    # "5,000 requests per hour" for an authenticated user or app (primary limit)
    # https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
    "github": VendorRate((parse_rate("5000/h"),), ("api.github.com",)),
    # GitLab.com: "Authenticated API traffic (for a given user): 2,000 requests each minute"
    # https://docs.gitlab.com/user/gitlab_com/#rate-limits-on-gitlabcom
    "gitlab": VendorRate((parse_rate("2000/min"),), ("gitlab.com",)),
    # "an average of three requests per second" per integration
    # https://developers.notion.com/reference/request-limits
    "notion": VendorRate((parse_rate("3/s"),), ("api.notion.com",)),
    # Support API: 200 requests per minute on the smallest plan (Team)
    # https://developer.zendesk.com/api-reference/introduction/rate-limits/
    "zendesk": VendorRate((parse_rate("200/min"),), (".zendesk.com",)),
    # "Queries per 60 seconds per user: 12,000"
    # https://developers.google.com/workspace/drive/api/guides/limits
    "gdrive": VendorRate((parse_rate("12000/min"),), ("www.googleapis.com",)),
}


def rates_for(vendor: str, host: str, override: Sequence[Rate] | None) -> tuple[Rate, ...]:
    """The rates a source's requests to ``host`` keep to: its ``rate_limit``, else the
    vendor's documented rates when ``host`` is the vendor's hosted service, else none."""
    if override:
        return tuple(override)
    known = VENDOR_RATES.get(vendor)
    return known.rates if known is not None and known.serves(host) else ()


def credential_key(secret: str) -> str:
    """The key a credential's budget is kept under: the SHA-256 hex of the secret (the
    secret itself is never stored)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Reservation:
    """A decision of ``reserve``: when the request may start, and the buckets after it."""

    start: float
    tats: Mapping[int, float]


def reserve(
    tats: Mapping[int, float], blocked_until: float, rates: Sequence[Rate], now: float
) -> Reservation:
    """Reserve one request at ``now``: it starts when every bucket has a token and the
    credential is no longer blocked; each bucket's ``tat`` moves one interval on from there.

    >>> r = reserve({}, 0.0, [Rate(2, 1)], now=100.0)
    >>> r.start, r.tats[1]
    (100.0, 100.5)
    """
    start = max(now, blocked_until)
    for rate in rates:
        start = max(start, tats.get(rate.period_s, 0.0) - rate.tolerance)
    moved = dict(tats)
    for rate in rates:
        moved[rate.period_s] = max(tats.get(rate.period_s, 0.0), start) + rate.interval
    return Reservation(start, moved)


def block(tats: Mapping[int, float], until: float, rates: Sequence[Rate]) -> dict[int, float]:
    """The buckets after a block until ``until``: empty then, so what resumes is paced."""
    moved = dict(tats)
    for rate in rates:
        moved[rate.period_s] = max(tats.get(rate.period_s, 0.0), until + rate.tolerance)
    return moved


class Throttle(Protocol):
    """One source's hold on its credential's budget (what the HTTP transport calls)."""

    def acquire(self, host: str) -> None:
        """Wait until the credential's budget allows one more request to ``host``, and
        take it."""

    def blocked(self, seconds: float, reason: str) -> None:
        """The vendor said to wait ``seconds`` (a 429): block everyone sharing it."""


class Governor(Protocol):
    """What the runtime gives a source's connector: a throttle for each credential."""

    def bind(self, vendor: str, secret: str) -> Throttle:
        """The throttle of this source for ``secret`` at ``vendor``."""


@dataclass(frozen=True)
class Throttled:
    """A source whose credential is blocked: until when, and the vendor's answer."""

    source_id: str
    until: datetime
    reason: str


class RateStore(Protocol):
    """Where the budgets live, shared by every process that reads with a credential."""

    def register(self, source_id: str, key: str) -> None:
        """Record that ``source_id`` reads with the credential ``key`` (for `status`)."""

    def reserve(self, key: str, vendor: str, rates: Sequence[Rate]) -> float:
        """Reserve one request on ``key``'s budget; the seconds to wait before sending it."""

    def block(
        self, key: str, vendor: str, seconds: float, reason: str, rates: Sequence[Rate]
    ) -> None:
        """Block ``key`` for ``seconds`` from now for everyone (never shortening a block)."""

    def throttled(self) -> dict[str, Throttled]:
        """The sources whose credential is blocked now, by source id."""


class _SharedThrottle:
    """One source's hold on one credential's budget in a store."""

    def __init__(
        self,
        store: RateStore,
        key: str,
        vendor: str,
        override: Sequence[Rate] | None,
        sleep: Callable[[float], None],
    ) -> None:
        self._store, self._key, self._vendor = store, key, vendor
        self._override = override
        self._rates: tuple[Rate, ...] = ()  # those of the last host asked for
        self._sleep = sleep

    def acquire(self, host: str) -> None:
        self._rates = rates_for(self._vendor, host, self._override)
        wait = self._store.reserve(self._key, self._vendor, self._rates)
        if wait > 0:
            self._sleep(wait)

    def blocked(self, seconds: float, reason: str) -> None:
        self._store.block(self._key, self._vendor, seconds, reason, self._rates)


class SharedGovernor:
    """The governor of one source: its ``rate_limit`` (else the vendor's documented rate)
    on a budget shared, through ``store``, with every source using the same credential."""

    def __init__(
        self,
        store: RateStore,
        source_id: str,
        override: Sequence[Rate] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.source_id = source_id
        self.override = tuple(override) if override else None
        self._sleep = sleep

    def bind(self, vendor: str, secret: str) -> Throttle:
        """The source's throttle for ``secret`` at ``vendor``."""
        key = credential_key(secret)
        self.store.register(self.source_id, key)
        return _SharedThrottle(self.store, key, vendor, self.override, self._sleep)
