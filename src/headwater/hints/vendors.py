"""Vendor webhooks: check the vendor's signature, then turn the payload into hints.

The signature is the webhook's only authentication (``POST /v1/hooks/{source_id}`` takes
no API key), checked with the source's ``webhook_secret`` before the body is even parsed,
in constant time. A webhook proves only that *something* changed: it becomes a hint
naming objects (or the source's scope), and the targeted read asks the source itself.

- github: ``X-Hub-Signature-256: sha256=HMAC-SHA256(secret, body)``.
  https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
  Issue and pull request events name ``{repo}/issues/{n}`` or ``{repo}/pulls/{n}``;
  repository-wide events (visibility, collaborators, teams) are a scope hint.
  https://docs.github.com/en/webhooks/webhook-events-and-payloads
- slack: ``X-Slack-Signature: v0=HMAC-SHA256(secret, "v0:{timestamp}:{body}")`` with
  ``X-Slack-Request-Timestamp`` at most 5 minutes off; ``url_verification`` is answered
  with its ``challenge``. https://api.slack.com/authentication/verifying-requests-from-slack
  https://api.slack.com/events/url_verification. A ``message`` event names its day
  document (``{channel}/{YYYY-MM-DD}``) or its thread (``{channel}/thread/{ts}``) and
  the root's day; other events are a scope hint.
- jira, confluence: ``X-Hub-Signature: sha256=HMAC-SHA256(secret, body)`` (WebSub).
  https://developer.atlassian.com/cloud/jira/platform/webhooks/#secure-admin-webhooks
  A payload's ``issue.id`` (jira) or ``page.id``/``blogpost.id`` (confluence) is the
  object; anything else a scope hint.
- sharepoint (Microsoft Graph change notifications): a ``validationToken`` query is
  echoed as ``text/plain``; each notification's ``clientState`` must equal the secret.
  https://learn.microsoft.com/en-us/graph/change-notifications-delivery-webhooks
  Notifications on a drive are a scope hint (Graph names the drive, not the item).
- gdrive (push notification channel): ``X-Goog-Channel-Token`` must equal the secret;
  ``X-Goog-Resource-State: sync`` (the channel's first message) is no change; any other
  is a scope hint (the changes since the last run are listed by the sync).
  https://developers.google.com/drive/api/guides/push
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from headwater.manifest.hints import CHANGED, DELETED

SLACK_WINDOW_S = 300  # Slack: refuse a timestamp more than five minutes off


@dataclass(frozen=True)
class Verdict:
    """What one webhook request is: refused, a handshake to answer, or hints to queue."""

    status: int  # 401 refused, 200 a handshake answered, 202 hints (maybe none) accepted
    reason: str = ""  # why refused: the `reason` label of headwater_hooks_rejected_total
    object_ids: tuple[str, ...] = ()
    scope: bool = False  # "something changed in this source": a sync reads it
    kind: str = CHANGED
    reply: Any = None  # a handshake's answer body
    media_type: str = "application/json"


def refused(reason: str) -> Verdict:
    """A 401 with ``reason``."""
    return Verdict(401, reason)


Reader = Callable[[str, Mapping[str, str], Mapping[str, str], bytes, float], Verdict]


def _hmac(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def _json(body: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(body or b"{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def github(
    secret: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes, now: float
) -> Verdict:
    """A GitHub webhook delivery."""
    signature = headers.get("x-hub-signature-256")
    if signature is None:
        return refused("missing_signature")
    if not _same(signature, "sha256=" + _hmac(secret, body)):
        return refused("bad_signature")
    payload = _json(body)
    if payload is None:
        return Verdict(202)
    event = headers.get("x-github-event", "")
    repo = str((payload.get("repository") or {}).get("full_name") or "")
    action = str(payload.get("action") or "")
    if event in ("issues", "issue_comment") and repo and isinstance(payload.get("issue"), dict):
        issue = payload["issue"]
        kind = "pulls" if "pull_request" in issue else "issues"
        gone = event == "issues" and action in ("deleted", "transferred")
        return Verdict(202, object_ids=(f"{repo}/{kind}/{issue.get('number')}",),
                       kind=DELETED if gone else CHANGED)  # fmt: skip
    pull = payload.get("pull_request")
    if event.startswith("pull_request") and repo and isinstance(pull, dict):
        return Verdict(202, object_ids=(f"{repo}/pulls/{pull.get('number')}",))
    if event in ("repository", "member", "team_add", "membership", "public", "organization"):
        return Verdict(202, scope=True)  # who may read the repo changed
    return Verdict(202)  # ping and events Headwater does not read


def slack(
    secret: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes, now: float
) -> Verdict:
    """A Slack Events API request."""
    signature, stamp = headers.get("x-slack-signature"), headers.get("x-slack-request-timestamp")
    if signature is None or stamp is None:
        return refused("missing_signature")
    if not stamp.isdigit() or abs(now - int(stamp)) > SLACK_WINDOW_S:
        return refused("stale_timestamp")
    if not _same(signature, "v0=" + _hmac(secret, b"v0:" + stamp.encode() + b":" + body)):
        return refused("bad_signature")
    payload = _json(body) or {}
    if payload.get("type") == "url_verification":
        return Verdict(200, reply={"challenge": str(payload.get("challenge", ""))})
    if payload.get("type") == "event_callback":
        event = payload.get("event")
        ids = _slack_objects(event) if isinstance(event, dict) else ()
        return Verdict(202, object_ids=ids) if ids else Verdict(202, scope=True)
    return Verdict(202)


def _slack_objects(event: dict[str, Any]) -> tuple[str, ...]:
    """The documents a ``message`` event touches: its day document, or its thread and the
    day of the thread's root (the root leaves the day document when its first reply
    comes). An edit or a delete names the message in ``message`` / ``previous_message``.
    Anything else (membership, channel events) names nothing: a scope hint.
    https://api.slack.com/events/message, https://api.slack.com/events/message/message_changed
    https://api.slack.com/events/message/message_deleted
    """
    channel = event.get("channel")
    if event.get("type") != "message" or not isinstance(channel, str) or not channel:
        return ()
    inner = event.get("message") or event.get("previous_message") or {}
    ts = str(inner.get("ts") or event.get("deleted_ts") or event.get("ts") or "")
    thread = str(event.get("thread_ts") or inner.get("thread_ts") or "")
    try:
        day = datetime.fromtimestamp(float(thread or ts), UTC).strftime("%Y-%m-%d")
    except ValueError:
        return ()
    ids = [f"{channel}/{day}"]
    if thread:
        ids.insert(0, f"{channel}/thread/{thread}")
    return tuple(ids)


def _atlassian(id_keys: tuple[str, ...], deleted: tuple[str, ...]) -> Reader:
    def read(
        secret: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes, now: float
    ) -> Verdict:
        signature = headers.get("x-hub-signature")
        if signature is None:
            return refused("missing_signature")
        if not _same(signature, "sha256=" + _hmac(secret, body)):
            return refused("bad_signature")
        payload = _json(body) or {}
        event = str(payload.get("webhookEvent") or payload.get("eventType") or "")
        for key in id_keys:
            entity = payload.get(key)
            if isinstance(entity, dict) and entity.get("id") is not None:
                gone = any(word in event for word in deleted)
                return Verdict(202, object_ids=(str(entity["id"]),),
                               kind=DELETED if gone else CHANGED)  # fmt: skip
        return Verdict(202, scope=True)

    return read


def sharepoint(
    secret: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes, now: float
) -> Verdict:
    """A Microsoft Graph change notification (or its subscription's validation)."""
    token = query.get("validationToken")
    if token is not None:
        return Verdict(200, reply=token, media_type="text/plain")
    payload = _json(body)
    values = payload.get("value") if payload is not None else None
    if not isinstance(values, list) or not values:
        return refused("missing_signature")
    for note in values:
        state = note.get("clientState") if isinstance(note, dict) else None
        if state is None:
            return refused("missing_signature")
        if not _same(str(state), secret):
            return refused("bad_signature")
    return Verdict(202, scope=True)


def gdrive(
    secret: str, headers: Mapping[str, str], query: Mapping[str, str], body: bytes, now: float
) -> Verdict:
    """A Google Drive push notification."""
    token = headers.get("x-goog-channel-token")
    if token is None:
        return refused("missing_signature")
    if not _same(token, secret):
        return refused("bad_signature")
    if headers.get("x-goog-resource-state", "") == "sync":
        return Verdict(202)  # the channel's first message: nothing changed yet
    return Verdict(202, scope=True)


READERS: dict[str, Reader] = {
    "github": github,
    "slack": slack,
    "jira": _atlassian(("issue",), ("issue_deleted",)),
    "confluence": _atlassian(("page", "blogpost"), ("removed", "trashed", "deleted")),
    "sharepoint": sharepoint,
    "gdrive": gdrive,
}


def read_webhook(
    source_type: str,
    secret: str | None,
    headers: Mapping[str, str],
    query: Mapping[str, str],
    body: bytes,
    now: float,
) -> Verdict | None:
    """The verdict on one request to a ``source_type`` source; None: that type takes no
    webhooks. A source without ``webhook_secret`` refuses every request (``no_secret``)."""
    reader = READERS.get(source_type)
    if reader is None:
        return None
    if not secret:
        return refused("no_secret")
    lowered = {k.lower(): v for k, v in headers.items()}
    return reader(secret, lowered, query, body, now)
