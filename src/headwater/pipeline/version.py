"""The two pipeline versions: what decides a source re-read, and what decides a re-index.

``content_version`` covers only the parsers (bytes to normalized text). It is stored per
document, enters both sync gates' skip rule and ``known_version``: when it changes, every
source object is read and parsed again.

``index_version`` (one per index) covers what turns stored normalized text into that
index's entries: the content version, the chunker and its settings, the embedder (type,
model, dimension, token limit) and the sink (type, schema version). It is recorded per
document and index when the index confirmed a write; a document whose recorded index
version differs is pending again, and is re-chunked and re-embedded from the content
store. An index version change never causes a source read. ``chunking_version`` is the
part every index shares (no sink); it enters chunk ids.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence


def _short_hash(payload: object) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def content_version(
    parser_versions: Mapping[str, str], parse_settings: Mapping[str, object] | None = None
) -> str:
    """The version that decides whether a source object must be re-read and re-parsed.

    ``parse_settings`` are a source's ``ParseOptions.describe()``: what it says about its
    files (extensions read as text, media types by extension). Empty settings give the
    workspace's version, so a source without any keeps its documents' version.
    """
    payload: dict[str, object] = {"parsers": dict(parser_versions)}
    if parse_settings:
        payload["parse"] = dict(parse_settings)
    return _short_hash(payload)


def hooked_version(content: str, hooks: Sequence[object] | Mapping[str, object]) -> str:
    """The content version with the ingestion hooks (``HookSet.describe()``) that run on
    stored content before chunking: it enters ``chunking_version`` in its place, so a
    changed hook re-chunks from the content store and never re-reads a source. Without
    hooks it is ``content`` itself (no version changes for a workspace without any)."""
    return _short_hash([content, hooks]) if hooks else content


def chunking_version(
    content: str,
    chunker_version: str,
    chunker_settings: Mapping[str, object],
    embedder: Mapping[str, object],
) -> str:
    """Content version plus chunker and embedder: shared by every index; in chunk ids."""
    return _short_hash(
        {
            "content": content,
            "chunker": [chunker_version, dict(chunker_settings)],
            "embedder": dict(embedder),
        }
    )


def index_version(chunking: str, sink_type: str, schema_version: str) -> str:
    """One index's version: re-chunk and re-embed stored content when it changes."""
    return _short_hash([chunking, sink_type, schema_version])
