"""The one place document and chunk identities are made (DESIGN invariant 1).

A document's identity is its tenant, source type, source id and the source's own stable
object id; nothing that changes with content (title, time, checksum) enters it.
"""

from __future__ import annotations

import hashlib
import uuid


def document_id(tenant: str, source_type: str, source_id: str, object_id: str) -> str:
    """``sha256("{tenant}:{source_type}:{source_id}:{object_id}")`` as hex."""
    key = f"{tenant}:{source_type}:{source_id}:{object_id}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def chunk_id(document_id: str, pipeline_version: str, ordinal: int) -> str:
    """``uuid(sha256("{document_id}:{pipeline_version}:{ordinal}")[:16])``."""
    digest = hashlib.sha256(f"{document_id}:{pipeline_version}:{ordinal}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16]))


def content_checksum(text: str) -> str:
    """Checksum of normalized text; the content store's key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
