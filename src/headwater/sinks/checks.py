"""Checks every sink makes on what the core hands it, in one place."""

from __future__ import annotations

from collections.abc import Sequence

from headwater.errors import ItemError
from headwater.types import EmbeddedChunk


def check_unique_chunks(document_id: str, chunks: Sequence[EmbeddedChunk]) -> None:
    """A document's chunk ids must be distinct; a repeat means a broken chunker."""
    seen: set[str] = set()
    for item in chunks:
        if item.chunk.chunk_id in seen:
            raise ItemError(
                "duplicate_chunk",
                f"chunk {item.chunk.chunk_id} appears twice in document {document_id}; "
                "chunk ids must be unique per document (check the chunker)",
            )
        seen.add(item.chunk.chunk_id)
