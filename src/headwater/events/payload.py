"""One change event as it goes out: its subject, its de-duplication id and its JSON.

Subjects: ``<prefix>.<tenant>.<source>.document.<kind>`` for a document's change and
``<prefix>.<tenant>.index.<index>.applied`` for an index's confirmation. Names enter a
subject as one token each: a character NATS gives a meaning to (``.``, ``*``, ``>``,
white space) or any other outside ``[A-Za-z0-9_-]`` becomes ``_``; the payload keeps the
names as they are. The message id (JetStream's ``Nats-Msg-Id``) is
``<document_id>:<revision>:<kind>`` (``:<index>:<generation>`` added for ``applied``), so
an event sent twice is stored once.
"""

from __future__ import annotations

import json
import re
from datetime import UTC
from typing import Any

from headwater.manifest.outbox import APPLIED, OutboxEvent

UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def token(name: str) -> str:
    """``name`` as one subject token."""
    return UNSAFE.sub("_", name) or "_"


def subject_of(prefix: str, tenant: str, event: OutboxEvent) -> str:
    """The subject ``event`` is published on."""
    if event.kind == APPLIED:
        return f"{prefix}.{token(tenant)}.index.{token(event.index_name or '')}.applied"
    return f"{prefix}.{token(tenant)}.{token(event.source_id)}.document.{event.kind}"


def message_id(event: OutboxEvent) -> str:
    """The de-duplication id of ``event``: the same change always has the same id."""
    base = f"{event.document_id}:{event.revision}:{event.kind}"
    if event.kind == APPLIED:
        return f"{base}:{event.index_name}:{event.generation}"
    return base


def event_payload(tenant: str, event: OutboxEvent) -> dict[str, Any]:
    """The JSON object of ``event``: ``kind, tenant, source, object_id, document_id,
    revision, at``, plus ``access`` (``access_changed``) or ``index`` and ``generation``
    (``applied``)."""
    payload: dict[str, Any] = {
        "kind": event.kind,
        "tenant": tenant,
        "source": event.source_id,
        "object_id": event.object_id,
        "document_id": event.document_id,
        "revision": event.revision,
    }
    if event.acl is not None:
        payload["access"] = list(event.acl)
    if event.kind == APPLIED:
        payload["index"] = event.index_name
        payload["generation"] = event.generation
    at = event.at
    if at is not None and at.tzinfo is None:  # SQLite hands back naive UTC times
        at = at.replace(tzinfo=UTC)
    payload["at"] = None if at is None else at.isoformat().replace("+00:00", "Z")
    return payload


def event_body(tenant: str, event: OutboxEvent) -> bytes:
    """The bytes sent for ``event`` (compact JSON, keys in a fixed order)."""
    return json.dumps(event_payload(tenant, event), separators=(",", ":")).encode()
