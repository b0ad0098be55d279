"""What is indexed for a document whose content is unavailable: its metadata as text.

A file too large to read, password-protected, failing to parse, or whose text cannot be
chunked is still findable by its name: its text is what is known without its content
(title, path, media type, size, modified time and why the content is unavailable) and
its metadata says ``content = "unavailable"`` and ``content_reason``. The sync gates
write it as a metadata-only manifest row (``sync.unavailable``); the indexer indexes it
in place of a document whose chunking failed (``indexer.prepare``). Pure: no I/O.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from headwater.types import MetadataValue

UNAVAILABLE = "unavailable"
"""The value of a metadata-only document's ``content`` metadata key."""


@dataclass(frozen=True)
class Unavailable:
    """The text, title and metadata of a metadata-only document."""

    text: str
    title: str
    metadata: dict[str, MetadataValue]


def unavailable(
    path: str,
    *,
    title: str | None,
    media_type: str | None,
    reason: str,
    metadata: Mapping[str, MetadataValue],
    size: int | None = None,
    modified: str | None = None,
) -> Unavailable:
    """The metadata-only document of the object at ``path`` (its id when it has no path),
    whose content is unavailable for ``reason`` (``"<error class>: <message>"``)."""
    name = PurePosixPath(path.rstrip("/")).name or path
    title = title or name
    media = media_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
    known: dict[str, MetadataValue] = {
        **metadata,
        "content": UNAVAILABLE,
        "content_reason": reason,
        "media_type": media,
    }
    if size is not None:
        known["size"] = str(size)
    if modified:
        known["modified"] = modified
    lines = [
        title,
        f"Path: {path}",
        f"Media type: {media}",
        *([f"Size: {known['size']} bytes"] if "size" in known else []),
        *([f"Modified: {known['modified']}"] if "modified" in known else []),
        f"Content unavailable ({reason})",
    ]
    return Unavailable("\n\n".join(lines), title, known)
