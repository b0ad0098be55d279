"""Push ingestion over HTTP: request bodies become ``PushOp`` for ``Workspace.push``.

The rules (version gates, replays, stale versions, tombstones, the conditional commit
that keeps them across ``serve`` workers) live in the sync core, ``headwater.sync.push``;
this module only reads the request (text or base64 content, access, metadata) and maps
each result to its answer (a stale single operation is 409, an unreadable one 400).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from headwater.api.hygiene import CleanModel
from headwater.api.service import Service
from headwater.errors import ConfigError, PushConflict
from headwater.sync.push import PushOp, dead_letter_message
from headwater.types import Access, MetadataValue, SourceDocument

__all__ = ["PushConflict", "PushOp", "apply_ops", "delete_op", "single", "upsert_op"]

MAX_BATCH = 500


class AccessBody(CleanModel):
    """A pushed document's access: users, groups, public."""

    users: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    public: bool = False

    def to_access(self) -> Access:
        """The access as the core takes it."""
        return Access(
            users=tuple(sorted(self.users)),  # normalized (and refused) by the gate
            groups=tuple(sorted(self.groups)),
            public=self.public,
        )


class PushDocument(CleanModel):
    """One pushed document: ``text``, or ``content_base64`` plus ``media_type``."""

    version: int = Field(ge=0, le=2**62)
    title: str = ""
    text: str | None = None
    content_base64: str | None = None
    media_type: str | None = None
    access: AccessBody | None = None
    metadata: dict[str, str | list[str]] = Field(default_factory=dict)


class BatchOperation(PushDocument):
    """One operation of a batch: an upsert (a document) or a delete."""

    op: Literal["upsert", "delete"] = "upsert"
    object_id: str = Field(min_length=1, max_length=2000)


class BatchRequest(CleanModel):
    """The body of ``POST /v1/sources/{id}/documents:batch``."""

    operations: list[BatchOperation] = Field(min_length=1, max_length=MAX_BATCH)


def _content(body: PushDocument, object_id: str) -> tuple[bytes, str]:
    if (body.text is None) == (body.content_base64 is None):
        raise ConfigError(
            f"document {object_id!r}: give exactly one of `text` or `content_base64` "
            "(with `media_type`)."
        )
    if body.text is not None:
        return body.text.encode("utf-8"), body.media_type or "text/plain"
    if not body.media_type:
        raise ConfigError(
            f"document {object_id!r}: `content_base64` needs a `media_type` (e.g. application/pdf)."
        )
    try:
        raw = base64.b64decode(body.content_base64 or "", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(
            f"document {object_id!r}: `content_base64` is not valid base64 ({exc}); "
            "encode the bytes with standard base64."
        ) from exc
    return raw, body.media_type


def _check_id(object_id: str) -> None:
    if not object_id or len(object_id) > 2000:
        raise ConfigError(
            f"object id {object_id[:80]!r} must have 1 to 2000 characters; name the document."
        )


def upsert_op(source_id: str, object_id: str, body: PushDocument) -> PushOp:
    """The push operation that writes ``body`` as ``object_id``."""
    _check_id(object_id)
    raw, media_type = _content(body, object_id)
    metadata: dict[str, MetadataValue] = dict(body.metadata)
    doc = SourceDocument(
        object_id=object_id,
        locator=f"push://{source_id}/{object_id}",
        title=body.title,
        version=str(body.version),
        content=raw,
        media_type=media_type,
        sequence=body.version,
        metadata=metadata,
        access=body.access.to_access() if body.access is not None else None,
    )
    return PushOp("upsert", object_id, body.version, doc)


def delete_op(object_id: str, version: int) -> PushOp:
    """The push operation that deletes ``object_id`` at ``version``."""
    _check_id(object_id)
    return PushOp("delete", object_id, version)


def apply_ops(service: Service, source_id: str, ops: Sequence[PushOp]) -> list[dict[str, Any]]:
    """Commit ``ops`` in order through ``Workspace.push``; one result dict per op."""
    results = [r.as_dict() for r in service.ws.push(source_id, ops)]
    if any(r["status"] in ("new", "changed", "deleted") for r in results):
        service.drain_soon()
    return results


def single(results: list[dict[str, Any]], what: str) -> dict[str, Any]:
    """The one result of a single-document request; 409 / 422 raised for refusals."""
    result = results[0]
    if result["status"] == "stale":
        current = result.get("current_version")
        relation = "is not newer than" if result["version"] == current else "is older than"
        raise PushConflict(
            f"{what} version {result['version']} {relation} the current version "
            f"{current}; send a version above it.",
            current,
        )
    if result["status"] == "conflict":
        raise PushConflict(f"{what}: {result['error']}.", None)
    if result["status"] == "failed":
        error = result["error"]
        if error != dead_letter_message(result["version"]):  # a new failure record
            error += "; fix the content and push it again (a failure record was written)"
        raise ConfigError(f"{what} could not be read: {error}.")
    return result
