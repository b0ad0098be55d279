"""Metadata-only documents: a file that cannot be read is still findable by its name.

A file too large to read, password-protected or failing to parse is indexed as a
document whose text is what is known without its content (title, path, media type,
size, modified time and why the content is unavailable) and whose metadata says
``content = "unavailable"`` and ``content_reason``. It keeps its source's ACL like any
document, so permissions still apply, and its failure record stays open: a later read
that parses replaces it. Only a file without readable content in the manifest becomes
one: a file read before that now fails keeps its last readable version (as always).
``unavailable_document`` is pure (the text is ``pipeline.unavailable``'s): the gate
decides when, and writes what it returns.
"""

from __future__ import annotations

from headwater.clock import iso
from headwater.manifest.records import ACTIVE, DocumentFields
from headwater.pipeline.unavailable import UNAVAILABLE, Unavailable, unavailable
from headwater.types import SourceDocument

__all__ = ["UNAVAILABLE", "UNAVAILABLE_CLASSES", "Unavailable", "stands_in", "unavailable_document"]

UNAVAILABLE_CLASSES = frozenset({"too_large", "encrypted", "parse_error"})
"""The failures that leave a metadata-only document (not ``unsupported_type``: a file of
a format Headwater does not read is a choice to exclude, and not ``empty_document``)."""


def stands_in(record: DocumentFields | None) -> bool:
    """Whether a failed read may write a metadata-only row over ``record``: there is no
    row, or no active one, or the row is itself metadata-only."""
    return record is None or record.state != ACTIVE or record.metadata.get("content") == UNAVAILABLE


def unavailable_document(
    doc: SourceDocument, error_class: str, message: str, size: int | None
) -> Unavailable:
    """What is indexed for ``doc`` when its content could not be read (``error_class``,
    ``message``); ``size`` is its byte count when the bytes were fetched."""
    return unavailable(
        str(doc.metadata.get("path") or doc.object_id),
        title=doc.title,
        media_type=doc.media_type,
        reason=f"{error_class}: {message}",
        metadata=doc.metadata,
        size=size,
        modified=iso(doc.updated_at) if doc.updated_at is not None else None,
    )
