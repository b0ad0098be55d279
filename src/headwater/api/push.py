"""Push ingestion: documents PUT through the API, committed exactly like a sync batch.

Each request becomes ``SourceDocument`` / ``Deleted`` items whose ``sequence`` is the
caller's per-object ``version``; a ``BatchBuilder`` applies the same version gates the
sync runner uses and ``Manifest.commit_batch`` writes them in one transaction (so a 2xx
is durable). On top of the gates: a replay of the version the manifest holds is a no-op
(``unchanged``), an older one is ``stale`` (409 with the current version), and a delete
writes a tombstone whose version blocks any older upsert that arrives late.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from headwater.api.hygiene import CleanModel
from headwater.api.service import Service
from headwater.errors import ConfigError, NotFoundError
from headwater.manifest.records import ACTIVE, RunCounts
from headwater.sync.gates import BatchBuilder, Outcome
from headwater.types import Access, Deleted, MetadataValue, SourceDocument

MAX_BATCH = 500


class AccessBody(CleanModel):
    users: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    public: bool = False

    def to_access(self) -> Access:
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
    op: Literal["upsert", "delete"] = "upsert"
    object_id: str = Field(min_length=1, max_length=2000)


class BatchRequest(CleanModel):
    operations: list[BatchOperation] = Field(min_length=1, max_length=MAX_BATCH)


class PushConflict(Exception):
    """An operation refused for its version (HTTP 409)."""

    def __init__(self, message: str, current: int | None) -> None:
        super().__init__(message)
        self.current = current


@dataclass
class Op:
    op: str
    object_id: str
    version: int
    doc: SourceDocument | None = None


def push_section_check(service: Service, source_id: str) -> None:
    try:
        section = service.ws.source_section(source_id)
    except ConfigError as exc:
        raise NotFoundError(str(exc)) from exc
    if section.type != "push":
        raise PushConflict(
            f"source {source_id!r} has type {section.type!r}; only `push` sources accept "
            'documents through the API. Add a [[source]] with type = "push".',
            None,
        )


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


def upsert_op(source_id: str, object_id: str, body: PushDocument) -> Op:
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
    return Op("upsert", object_id, body.version, doc)


def delete_op(object_id: str, version: int) -> Op:
    _check_id(object_id)
    return Op("delete", object_id, version)


def _parts(ops: Sequence[Op]) -> list[list[Op]]:
    """Split so no object appears twice in one part (each part sees the one before)."""
    parts: list[list[Op]] = [[]]
    ids: set[str] = set()
    for op in ops:
        if op.object_id in ids:
            parts.append([])
            ids = set()
        parts[-1].append(op)
        ids.add(op.object_id)
    return [p for p in parts if p]


def apply_ops(service: Service, source_id: str, ops: Sequence[Op]) -> list[dict[str, Any]]:
    """Apply and commit ``ops`` in order; one result per op (``status`` says what happened)."""
    push_section_check(service, source_id)
    ws = service.ws
    section = ws.source_section(source_id)
    identity = ws.source_identity(section)
    ws.manifest.ensure_source(source_id, section.type)
    results: list[dict[str, Any]] = []
    with service.push_lock:
        for part in _parts(ops):
            results.extend(_apply_part(service, identity, part))
    if any(r["status"] in ("new", "changed", "deleted") for r in results):
        service.drain_soon()
    return results


def _apply_part(service: Service, identity: Any, part: list[Op]) -> list[dict[str, Any]]:
    manifest = service.ws.manifest
    existing = manifest.documents_by_object_ids(identity.source_id, [o.object_id for o in part])
    deleted = [r.document_id for r in existing.values() if r.state != ACTIVE]
    tombs = manifest.tombstone_sequences(deleted) if deleted else {}
    dead = manifest.failures.dead_source_versions([identity.document_id(o.object_id) for o in part])
    run_id = str(uuid.uuid4())
    builder = BatchBuilder(
        source=identity,
        run_id=run_id,
        existing=existing,
        tombstone_sequences=tombs,
        dead_versions=dead,
        content_store=service.ws.content_store,
        fetch=None,
        counts=RunCounts(),
    )
    results = []
    for op in part:
        record = existing.get(op.object_id)
        result: dict[str, Any] = {
            "object_id": op.object_id,
            "document_id": identity.document_id(op.object_id),
            "version": op.version,
        }
        active = record is not None and record.state == ACTIVE
        if record is None:
            current = None
        elif active:
            current = record.sequence
        else:
            current = tombs.get(record.document_id)
        if current is not None and op.version < current:
            result.update(status="stale", current_version=current)
        elif op.doc is not None and active and op.version == current:
            result["status"] = "unchanged"  # a replay of what the manifest holds
        elif op.doc is not None:
            if not active and current is not None and op.version == current:
                result.update(status="stale", current_version=current)  # deleted at it
            else:
                failures_before = len(builder.commit.failures)
                outcome = builder.add_document(op.doc)
                result["status"] = outcome.value
                if outcome == Outcome.FAILED:
                    result["error"] = _failure_message(builder, failures_before, op)
        elif record is not None and not active and (current is None or op.version > current):
            # Deleted already, at an older version: the tombstone moves up to this one, so
            # an upsert between the two versions arriving late is refused too.
            builder.tombstone(record, "deleted_in_source", op.version)
            result["status"] = "deleted"
        elif not active:
            result["status"] = "unchanged"  # never held, or deleted at this version already
        else:
            outcome = builder.add_deleted(Deleted(object_id=op.object_id, sequence=op.version))
            result["status"] = outcome.value
        if op.doc is None and result["status"] in ("deleted", "unchanged"):
            _resolve_dead(builder, dead, result["document_id"], op.version)
        results.append(result)
    if not builder.commit.is_empty():
        manifest.commit_batch(run_id, builder.commit)
    return results


def _resolve_dead(
    builder: BatchBuilder, dead: dict[str, tuple[str | None, str]], document_id: str, version: int
) -> None:
    """A delete at ``version`` settles the dead letter of a version at or below it: the
    object is gone, and nothing else (no listing, no redrive) would ever resolve it."""
    failed_at = (dead.get(document_id) or (None, ""))[0]
    if failed_at is not None and failed_at.isdigit() and int(failed_at) <= version:
        builder.commit.resolved.append(document_id)


def _failure_message(builder: BatchBuilder, before: int, op: Op) -> str:
    """Why ``op`` failed: its own new failure record, or the dead letter of its version."""
    if len(builder.commit.failures) > before:
        return builder.commit.failures[-1].message
    return dead_letter_message(op.version)


def dead_letter_message(version: int) -> str:
    return (
        f"version {version} of this document failed before and is in the dead-letter "
        "queue, so it is not read again; push a higher version, or drop the entry "
        "(GET /v1/dlq, then DELETE /v1/dlq/{id}) and push this one again"
    )


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
    if result["status"] == "failed":
        error = result["error"]
        if error != dead_letter_message(result["version"]):  # a new failure record
            error += "; fix the content and push it again (a failure record was written)"
        raise ConfigError(f"{what} could not be read: {error}.")
    return result
