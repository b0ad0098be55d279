"""The ``qdrant`` index's options, and how documents and chunks map to point ids and filters.

Point ids are UUIDs: a document's record is keyed by the first 128 bits of its
document_id (so scrolling the records, ordered by point id, lists documents in
document_id order), a chunk's point by uuid5 of its ``chunk_id`` and write token.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from pydantic import Field, SecretStr, model_validator
from qdrant_client import models as qm

from headwater.sinks.base import SinkOptions

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
