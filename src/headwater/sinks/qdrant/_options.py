"""The ``qdrant`` index's options, and how documents and chunks map to points and back.

Point ids are UUIDs: a document's record is keyed by the first 128 bits of its
document_id (so scrolling the records, ordered by point id, lists documents in
document_id order), a chunk's point by uuid5 of its ``chunk_id`` and write token. Here
too: the payloads of both kinds of point, the filters on them, and a hit from a point.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, model_validator
from qdrant_client import models as qm

from headwater.clock import iso, utcnow
from headwater.errors import FatalError
from headwater.scopes import scope_tokens
from headwater.sinks.base import SinkOptions
from headwater.types import EmbeddedChunk, IndexDocument, SearchHit

_REVISION_NAMESPACE = uuid.UUID("6f1c2a52-3b0e-4a8e-9d47-0c5b9f1e7a10")
_POINT_NAMESPACE = uuid.UUID("0b6e3f6c-7a43-4f0c-8f3e-5d2a9c1b4e77")
BINDING_ID = "00000000-0000-0000-0000-00000000b1d0"
_HEX64 = re.compile("[0-9a-f]{64}")


class QdrantOptions(SinkOptions):
    """Options of the ``qdrant`` index; set at most one of ``url``, ``path``, ``location``."""

    url: str | None = Field(
        default=None, description="A Qdrant server, e.g. http://localhost:6333."
    )
    path: Path | None = Field(
        default=None, description="A local-mode folder; default `{state_dir}/qdrant-{name}`."
    )
    location: str | None = Field(default=None, description='`":memory:"` for a throwaway index.')
    collection: str | None = Field(default=None, description="Default `headwater_{name}`.")
    api_key: SecretStr | None = Field(default=None, description="The server's API key.")
    timeout: float = Field(default=30.0, gt=0, description="Seconds per server request.")

    @model_validator(mode="after")
    def _one_place(self) -> QdrantOptions:
        given = [k for k in ("url", "path", "location") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(
                f"{' and '.join(given)} were all set; expected at most one of url, path, location"
            )
        if self.location is not None and self.location != ":memory:":
            raise ValueError(
                f"location was {self.location!r}; expected ':memory:' (use `url` for a server)"
            )
        return self


def revision_point_id(document_id: str) -> str:
    """The record's point id: the document_id's first 128 bits, so that scrolling the
    records (ordered by point id) lists documents in document_id order."""
    if _HEX64.fullmatch(document_id):
        return str(uuid.UUID(document_id[:32]))
    return str(uuid.uuid5(_REVISION_NAMESPACE, document_id))


def point_id(chunk_id: str, write: str) -> str:
    """The Qdrant point id of ``chunk_id`` in the write ``write``."""
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{chunk_id}:{write}"))


def facet_value(document_id: str) -> str:
    """How local mode's facet reports a value: a string that parses as a UUID as its
    canonical form (a server reports it as stored)."""
    try:
        return str(uuid.UUID(document_id))
    except ValueError:
        return document_id


def of_document(document_id: str) -> qm.FieldCondition:
    """A filter condition: points of ``document_id``."""
    return qm.FieldCondition(key="document_id", match=qm.MatchValue(value=document_id))


def of_write(write: str) -> qm.FieldCondition:
    """A filter condition: points of the write ``write``."""
    return qm.FieldCondition(key="write", match=qm.MatchValue(value=write))


def record_point(
    document_id: str,
    revision: int,
    deleted: bool,
    source: str | None,
    principals: Sequence[str],
    live: str | None,
    live_revision: int | None,
) -> qm.PointStruct:
    """The payload-only point of a document's record in the revisions collection."""
    payload: dict[str, Any] = {
        "document_id": document_id,
        "revision": revision,
        "deleted": deleted,
        "source": source,
        "principals": list(principals),
        "live": live,
        "live_revision": live_revision,
        "changed_at": iso(utcnow()),
    }
    return qm.PointStruct(id=revision_point_id(document_id), vector={}, payload=payload)


def chunk_point(
    document: IndexDocument,
    item: EmbeddedChunk,
    principals: list[str],
    revision: int,
    write: str,
    dimension: int,
    collection: str,
) -> qm.PointStruct:
    """The point of one embedded chunk in the write ``write``; FatalError without a vector
    of the collection's ``dimension``."""
    if item.vector is None:
        raise FatalError(
            f"chunk {item.chunk.chunk_id} of document {document.document_id} has no vector; "
            "the qdrant index stores vectors only; embed chunks before writing them"
        )
    if len(item.vector) != dimension:
        raise FatalError(
            f"chunk {item.chunk.chunk_id} has {len(item.vector)} dimensions; the qdrant "
            f"collection {collection!r} holds {dimension}; use the same "
            "embedding model or rebuild the index"
        )
    payload = {
        "document_id": document.document_id,
        "ordinal": item.chunk.ordinal,
        "text": item.chunk.text,
        "title": document.title,
        "locator": document.locator,
        "source": document.source,
        "principals": principals,
        "scopes": scope_tokens(document.source, document.metadata),
        "revision": revision,
        "chunk_id": item.chunk.chunk_id,
        "write": write,
    }
    return qm.PointStruct(
        id=point_id(item.chunk.chunk_id, write), vector=list(item.vector), payload=payload
    )


def hit_of(point: qm.ScoredPoint) -> SearchHit:
    """The search hit a chunk's scored point stands for."""
    payload = point.payload or {}
    return SearchHit(
        chunk_id=str(payload["chunk_id"]),
        document_id=str(payload["document_id"]),
        ordinal=int(payload["ordinal"]),
        score=float(point.score),
        text=str(payload["text"]),
        title=str(payload["title"]),
        locator=str(payload["locator"]),
        source=str(payload["source"]),
    )
