"""Keeping vendor subscriptions alive: create what is missing, renew before expiry.

A source with ``notification_url`` (sharepoint, gdrive: connectors that are
``Subscribing``) needs one subscription per scope at the vendor, which expires. The
scheduler calls ``keep_subscriptions`` at start and every ``CHECK_EVERY``: a scope
without one gets ``subscribe``; one that expires within its margin (a quarter of the
lifetime it was granted, at most ``RENEW_MARGIN``) gets ``renew``. The state lives in the
manifest (``manifest.subscriptions``), so a restart renews instead of re-creating. A
failed create or renewal is logged, recorded (``status`` shows it, with the error and
the failures in a row) and tried again after a backoff (``RETRY_FIRST`` doubling up to
``RETRY_MAX``); the last good subscription stays recorded until a renewal replaces it.
The clock is a parameter, so tests drive it without sleeping.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from headwater.clock import utcnow
from headwater.connectors.base import Subscribing, Subscription
from headwater.manifest.subscriptions import SubscriptionState
from headwater.runtime import Runtime
from headwater.runtime.sources import close_connector

log = logging.getLogger("headwater.hints")

CHECK_EVERY = timedelta(minutes=1)  # how often the scheduler looks
RENEW_MARGIN = timedelta(hours=1)  # renew at the latest this long before expiry
RETRY_FIRST = timedelta(minutes=1)  # the wait after a first failure, doubled each time
RETRY_MAX = timedelta(minutes=30)


@dataclass
class KeptSubscriptions:
    """What one pass did: scopes created, renewed, failed (``source:scope``)."""

    created: list[str] = field(default_factory=list)
    renewed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def retry_wait(failures: int) -> timedelta:
    """The wait before the next try after ``failures`` failures in a row."""
    doubled: timedelta = RETRY_FIRST * (2 ** min(max(failures - 1, 0), 16))
    return min(doubled, RETRY_MAX)


def renew_due(state: SubscriptionState, now: datetime) -> bool:
    """Whether ``state``'s subscription expires within its margin at ``now``."""
    if state.expires_at is None:
        return True
    granted = state.expires_at - (state.renewed_at or state.expires_at)
    margin = min(RENEW_MARGIN, granted / 4) if granted > timedelta(0) else RENEW_MARGIN
    return state.expires_at - now <= margin


class SubscriptionKeeper:
    """The scheduler's side: a pass at its first cycle, then every ``CHECK_EVERY``."""

    def __init__(self) -> None:
        self._last: datetime | None = None

    def tick(self, rt: Runtime, sources: Sequence[str], now: datetime | None = None) -> None:
        """Run a pass over ``sources`` when one is due; never raises (it logs)."""
        now = now or utcnow()
        if self._last is not None and now < self._last + CHECK_EVERY:
            return
        wanted = [s for s in rt.config.source if s.id in sources and s.notification_url]
        if not wanted:
            return
        self._last = now
        try:
            keep_subscriptions(rt, now, sources)
        except Exception:  # the manifest or a connector failed: the next pass tries again
            log.exception("keeping the vendor subscriptions failed; trying again in %s",
                          CHECK_EVERY)  # fmt: skip


def keep_subscriptions(
    rt: Runtime, now: datetime | None = None, sources: Sequence[str] | None = None
) -> KeptSubscriptions:
    """One pass over every source (of ``sources``) with ``notification_url``."""
    now = now or utcnow()
    kept = KeptSubscriptions()
    for section in rt.config.source:
        if sources is not None and section.id not in sources:
            continue
        if section.notification_url is None or section.webhook_secret is None:
            continue
        secret = section.webhook_secret.get_secret_value()
        connector = rt.sources.connector(section.id)
        try:
            if not isinstance(connector, Subscribing):
                continue
            _keep(rt, section.id, connector, section.notification_url, secret, now, kept)
        finally:
            close_connector(connector)
    return kept


def _keep(
    rt: Runtime,
    source_id: str,
    connector: Subscribing,
    address: str,
    secret: str,
    now: datetime,
    kept: KeptSubscriptions,
) -> None:
    ledger = rt.manifest.subscriptions
    states = {s.scope: s for s in ledger.states(source_id)}
    try:
        scopes = connector.subscription_scopes()
    except Exception as exc:  # the vendor is unreachable: every scope waits for the next pass
        log.error("subscriptions of %s: cannot list its scopes: %s", source_id, exc)
        return
    for scope in set(states) - set(scopes):
        ledger.forget(source_id, scope)  # a library or drive no longer configured
    for scope in scopes:
        state = states.get(scope)
        if state is not None and state.retry_at is not None and now < state.retry_at:
            continue  # a failure waits for its retry
        fresh = state is None or not state.vendor_id
        if not fresh and state is not None and not renew_due(state, now):
            continue
        try:
            if fresh or state is None or state.expires_at is None:
                granted = connector.subscribe(scope, address, secret, now)
            else:
                current = Subscription(scope, state.vendor_id, state.resource_id, state.expires_at)
                granted = connector.renew(current, address, secret, now)
        except Exception as exc:  # recorded, shown in status, tried again after a backoff
            failures = (state.failures if state is not None else 0) + 1
            retry_at = now + retry_wait(failures)
            ledger.failed(source_id, scope, f"{type(exc).__name__}: {exc}", retry_at=retry_at)
            log.error("subscription of %s (scope %r) could not be %s (%d in a row); retrying "
                      "at %s: %s", source_id, scope, "created" if fresh else "renewed",
                      failures, retry_at.isoformat(), exc)  # fmt: skip
            kept.failed.append(f"{source_id}:{scope}")
            continue
        ledger.saved(
            source_id, scope, vendor_id=granted.vendor_id, resource_id=granted.resource_id,
            expires_at=granted.expires_at, now=now,
        )  # fmt: skip
        (kept.created if fresh else kept.renewed).append(f"{source_id}:{scope}")
        log.info("subscription of %s (scope %r) %s until %s", source_id, scope,
                 "created" if fresh else "renewed", granted.expires_at.isoformat())  # fmt: skip
