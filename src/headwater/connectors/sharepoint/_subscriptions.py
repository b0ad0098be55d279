"""Microsoft Graph change-notification subscriptions, one per document library.

With a source's ``notification_url``, the scheduler keeps one subscription on each
library's root (``drives/{id}/root``, change type ``updated``: Graph's only one for drive
items) whose ``clientState`` is the source's ``webhook_secret``. Graph expires a
subscription at its ``expirationDateTime`` (at most 42,300 minutes ahead for drive
items); ``renew`` extends it with ``PATCH /subscriptions/{id}``, and when Graph no
longer knows it (404: it expired, or was deleted) creates a new one. A create is sent
once, never retried here: the scheduler's next try follows its own backoff, so a create
that timed out is not sent twice at once.
https://learn.microsoft.com/en-us/graph/api/subscription-post-subscriptions
https://learn.microsoft.com/en-us/graph/api/subscription-update
https://learn.microsoft.com/en-us/graph/api/resources/subscription#subscription-lifetime
"""

from __future__ import annotations

from datetime import datetime, timedelta

from headwater.clock import as_utc
from headwater.connectors.base import Subscription
from headwater.connectors.sharepoint._client import GraphClient, raise_for_status
from headwater.errors import ItemError
from headwater.retry import RetryPolicy

MAX_LIFETIME = timedelta(minutes=42300)  # Graph's limit for driveItem subscriptions


def _when(moment: datetime) -> str:
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _granted(body: dict[str, object], scope: str) -> Subscription:
    try:
        expires = datetime.fromisoformat(str(body["expirationDateTime"]).replace("Z", "+00:00"))
        return Subscription(scope, str(body["id"]), "", as_utc(expires))
    except (KeyError, ValueError) as exc:
        raise ItemError(
            "bad_response", f"Graph answered a subscription without id or expiry: {body!r}"
        ) from exc


def subscribe(
    client: GraphClient, drive: str, address: str, secret: str, expires: datetime
) -> Subscription:
    """A new subscription to the changes of library ``drive``."""
    body = {
        "changeType": "updated",
        "notificationUrl": address,
        "resource": f"drives/{drive}/root",
        "expirationDateTime": _when(expires),
        "clientState": secret,
    }
    response = client.post("/subscriptions", body, policy=RetryPolicy(attempts=1))
    if response.status_code != 201:
        raise_for_status(response, "/subscriptions")
    return _granted(response.json(), drive)


def renew(
    client: GraphClient, current: Subscription, address: str, secret: str, expires: datetime
) -> Subscription:
    """``current`` extended to ``expires``; a new one when Graph no longer has it."""
    url = f"/subscriptions/{current.vendor_id}"
    response = client.patch(url, {"expirationDateTime": _when(expires)})
    if response.status_code == 404:
        return subscribe(client, current.scope, address, secret, expires)
    raise_for_status(response, url)
    return _granted(response.json(), current.scope)
