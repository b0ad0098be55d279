"""Events to a webhook: each one POSTed as JSON, signed, retried with backoff.

The body is the event's JSON (``payload.event_body``). ``X-Headwater-Signature`` is
``sha256=`` and the hex HMAC-SHA256 of the raw body under ``[events] secret`` (the GitHub
convention: recompute it over the bytes received and compare in constant time);
``X-Headwater-Event-Id`` is the event's de-duplication id and ``X-Headwater-Subject`` the
subject it would have on NATS. Any 2xx confirms the event. Anything else (a connection
error, a timeout, any other status) is retried with the project's backoff
(``retry.call_with_retry``); after the last try the event stays in the outbox, and the
events after it wait behind it, so order per document holds and nothing is dropped.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

import httpx

from headwater.errors import TransientError
from headwater.events.payload import event_body, message_id, subject_of
from headwater.manifest.outbox import OutboxEvent
from headwater.retry import RetryPolicy, call_with_retry

SIGNATURE_HEADER = "X-Headwater-Signature"
EVENT_ID_HEADER = "X-Headwater-Event-Id"
SUBJECT_HEADER = "X-Headwater-Subject"
POLICY = RetryPolicy(attempts=4, initial_wait=0.5, max_wait=10.0)


def signature(secret: str, body: bytes) -> str:
    """The ``X-Headwater-Signature`` value of ``body``: ``sha256=<hex HMAC-SHA256>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is the signature of ``body`` (what a receiver checks)."""
    return header is not None and hmac.compare_digest(signature(secret, body), header)


class WebhookSession:
    """One HTTP client posting events in order."""

    def __init__(self, target: WebhookTarget) -> None:
        self.target = target
        self.client = httpx.Client(timeout=target.timeout)

    def _post(self, body: bytes, headers: Mapping[str, str]) -> None:
        url = self.target.url
        try:
            response = self.client.post(url, content=body, headers=dict(headers))
        except httpx.HTTPError as exc:
            raise TransientError(
                f"the events webhook {url} did not answer ({type(exc).__name__}: {exc}); "
                "the event stays in the outbox and is sent again. Check [events] url"
            ) from exc
        if not response.is_success:
            retry_after = response.headers.get("Retry-After", "")
            raise TransientError(
                f"the events webhook {url} answered {response.status_code}; expected 2xx. "
                "The event stays in the outbox and is sent again; check the receiver "
                f"(it must verify {SIGNATURE_HEADER} with the same [events] secret)",
                retry_after=float(retry_after) if retry_after.isdigit() else None,
            )

    def send(self, event: OutboxEvent) -> None:
        """POST ``event`` until a 2xx answers it, with backoff (``TransientError`` after
        the last try)."""
        t = self.target
        body = event_body(t.tenant, event)
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: signature(t.secret, body),
            EVENT_ID_HEADER: message_id(event),
            SUBJECT_HEADER: subject_of(t.prefix, t.tenant, event),
        }
        call_with_retry(lambda: self._post(body, headers), t.policy)

    def close(self) -> None:
        """Close the HTTP client."""
        self.client.close()


class WebhookTarget:
    """``[events] type = "webhook"``: POSTs to ``url`` signed with ``secret``."""

    kind = "webhook"

    def __init__(
        self,
        url: str,
        secret: str,
        tenant: str,
        *,
        prefix: str = "headwater",
        timeout: float = 10.0,
        policy: RetryPolicy = POLICY,
    ) -> None:
        self.url, self.secret, self.tenant, self.prefix = url, secret, tenant, prefix
        self.timeout, self.policy = timeout, policy

    def open(self) -> WebhookSession:
        """An HTTP client for one drain."""
        return WebhookSession(self)
