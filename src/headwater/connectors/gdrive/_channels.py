"""Google Drive push notification channels on the changes feed, one per Drive scope.

With a source's ``notification_url``, the scheduler keeps one channel per scope (``""``:
everything the token sees, or a shared drive id) made by ``changes.watch`` (type
``web_hook``, ``token`` = the source's ``webhook_secret``, which Drive sends back as
``X-Goog-Channel-Token``). Drive never renews a channel: it stops at its ``expiration``
(at most a week for the changes resource). ``renew`` opens a new channel first, then
stops the old one with ``channels.stop`` (its id and ``resourceId``), so no change
falls between the two; an old channel Drive no longer knows (404) is already stopped.
A watch is sent once, never retried here: the scheduler's next try follows its backoff.
https://developers.google.com/drive/api/reference/rest/v3/changes/watch
https://developers.google.com/drive/api/reference/rest/v3/channels/stop
https://developers.google.com/drive/api/guides/push (Renew notification channels)
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from headwater.connectors.base import Subscription
from headwater.connectors.gdrive._client import DriveClient, raise_for_status
from headwater.errors import ItemError
from headwater.retry import RetryPolicy

log = logging.getLogger(__name__)

MAX_LIFETIME = timedelta(days=7)  # Drive's limit for a channel on the changes resource


def watch(
    client: DriveClient, scope: str, address: str, secret: str, expires: datetime
) -> Subscription:
    """A new channel on the changes of ``scope``, from the current start page token."""
    params = {"supportsAllDrives": "true", **({"driveId": scope} if scope else {})}
    start = client.json("/drive/v3/changes/startPageToken", params)["startPageToken"]
    query = {"pageToken": str(start), "includeItemsFromAllDrives": "true", **params}
    body = {"id": str(uuid.uuid4()), "type": "web_hook", "address": address, "token": secret,
            "expiration": str(int(expires.timestamp() * 1000))}  # fmt: skip
    path = f"/drive/v3/changes/watch?{urlencode(query)}"
    response = client.post(path, body, policy=RetryPolicy(attempts=1))
    raise_for_status(response, "/drive/v3/changes/watch")
    channel = response.json()
    try:
        granted = datetime.fromtimestamp(int(channel["expiration"]) / 1000, UTC)
        return Subscription(scope, str(channel["id"]), str(channel["resourceId"]), granted)
    except (KeyError, ValueError) as exc:
        raise ItemError(
            "bad_response", f"Drive answered a channel without id, resourceId or expiration: "
            f"{channel!r}"
        ) from exc  # fmt: skip


def stop(client: DriveClient, channel: Subscription) -> None:
    """Stop ``channel``; one Drive no longer knows (404) is already stopped."""
    body = {"id": channel.vendor_id, "resourceId": channel.resource_id}
    response = client.post("/drive/v3/channels/stop", body)
    if response.status_code in (200, 204, 404):
        return
    raise_for_status(response, "/drive/v3/channels/stop")


def renew(
    client: DriveClient, current: Subscription, address: str, secret: str, expires: datetime
) -> Subscription:
    """A new channel of ``current.scope``; the old one stopped once the new one stands (a
    failed stop is logged: the old channel ends at its expiration anyway)."""
    fresh = watch(client, current.scope, address, secret, expires)
    if current.vendor_id:
        try:
            stop(client, current)
        except Exception as exc:  # the new channel stands; the old one expires by itself
            log.warning("gdrive: channel %s not stopped (%s); it expires at %s",
                        current.vendor_id, exc, current.expires_at)  # fmt: skip
    return fresh
