"""The ``meilisearch`` index's options, and how its names, ids and filters are spelled.

Meilisearch accepts only ``a-z A-Z 0-9 - _`` in index uids and document ids
(https://www.meilisearch.com/docs/learn/getting_started/primary_key#formatting-the-document-id),
so a chunk's document id is the hex uuid5 of its ``chunk_id`` and write token, and a
record's id is the ``document_id`` itself when it is already spelled that way. ACL
principals and sources are filtered as opaque hex keys (``token``).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable

from pydantic import Field, SecretStr, field_validator

from headwater.sinks.base import SinkOptions

_ID = re.compile(r"[A-Za-z0-9_-]{1,400}")
_CHUNK_NAMESPACE = uuid.UUID("3c9e1f0a-5b7d-4e2a-8c61-9f0d2b4a7e15")
BINDING_ID = "headwater-binding"
EMBEDDER = "default"


class MeilisearchOptions(SinkOptions):
    """Options of the ``meilisearch`` index."""

    url: str = Field(
        default="http://localhost:7700", description="The Meilisearch server (its default port)."
    )
    api_key: SecretStr | None = Field(
        default=None, description='The API key, sent as a Bearer token; e.g. "${MEILI_KEY}".'
    )
    index: str | None = Field(
        default=None, description="The index uid; default `headwater_{name}`."
    )
    timeout: float = Field(default=30.0, gt=0, description="Seconds per HTTP request.")
    task_timeout: float = Field(
        default=300.0, gt=0, description="Seconds to wait for one task to finish."
    )
    semantic_ratio: float = Field(
        default=0.5, ge=0.0, le=1.0, description="`hybrid.semanticRatio` of a hybrid search."
    )

    @field_validator("index")
    @classmethod
    def _index_uid(cls, value: str | None) -> str | None:
        if value is not None and not _ID.fullmatch(value):
            raise ValueError(
                f"index was {value!r}; a Meilisearch index uid holds only a-z A-Z 0-9 - _"
            )
        return value


def index_uid(options: MeilisearchOptions, name: str, generation: int) -> str:
    """The chunk index of this generation: ``{index}`` for 1, ``{index}__g{N}`` after."""
    base = options.index or f"headwater_{name}"
    if not _ID.fullmatch(base):
        base = "headwater_" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return base if generation == 1 else f"{base}__g{generation}"


def record_id(document_id: str) -> str:
    """The id of a document's record in the revisions index."""
    if _ID.fullmatch(document_id) and document_id != BINDING_ID:
        return document_id
    return "x" + hashlib.sha256(document_id.encode()).hexdigest()


def token(kind: str, value: str) -> str:
    """An opaque filter key for ``value`` (``kind`` + 32 hex digits of its sha256).

    Meilisearch compares filter strings after normalizing them (lowercase, Unicode
    compatibility decomposition), so ``group:Admins`` would match ``group:admins``; the
    ACL and source are filtered through these keys, which normalization leaves alone."""
    return kind + hashlib.sha256(value.encode()).hexdigest()[:32]


def chunk_doc_id(chunk_id: str, write: str) -> str:
    """The id of one chunk written by one write (a new write never overwrites a live one)."""
    return uuid.uuid5(_CHUNK_NAMESPACE, f"{chunk_id}:{write}").hex


def quoted(value: str) -> str:
    """``value`` as a double-quoted filter string, its quotes and backslashes escaped
    (https://www.meilisearch.com/docs/learn/filtering_and_sorting/filter_expression_reference)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def any_of(attribute: str, values: Iterable[str]) -> str:
    """``attribute IN [v1, v2, …]``."""
    return f"{attribute} IN [{', '.join(quoted(v) for v in values)}]"


def equals(attribute: str, value: str) -> str:
    return f"{attribute} = {quoted(value)}"
