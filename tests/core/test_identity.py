"""Invariant 1: identities are derived from stable source ids only."""

from __future__ import annotations

import hashlib
import uuid

from headwater.identity import chunk_id, document_id


def test_document_id_is_sha256_of_tenant_type_source_object() -> None:
    expected = hashlib.sha256(b"acme:filesystem:docs:guides/a.md").hexdigest()
    assert document_id("acme", "filesystem", "docs", "guides/a.md") == expected


def test_document_id_differs_per_tenant_source_and_object() -> None:
    base = document_id("acme", "filesystem", "docs", "a.md")
    assert base != document_id("other", "filesystem", "docs", "a.md")
    assert base != document_id("acme", "s3", "docs", "a.md")
    assert base != document_id("acme", "filesystem", "wiki", "a.md")
    assert base != document_id("acme", "filesystem", "docs", "b.md")


def test_chunk_id_is_a_uuid_of_the_first_16_digest_bytes() -> None:
    doc = document_id("acme", "filesystem", "docs", "a.md")
    digest = hashlib.sha256(f"{doc}:pv1:3".encode()).digest()
    assert chunk_id(doc, "pv1", 3) == str(uuid.UUID(bytes=digest[:16]))
    assert chunk_id(doc, "pv1", 3) != chunk_id(doc, "pv2", 3)
    uuid.UUID(chunk_id(doc, "pv1", 0))
