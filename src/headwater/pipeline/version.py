"""The pipeline version: a short stable hash of everything that shapes indexed content.

``content_pipeline_version`` covers the parsers, the chunker and its settings and the
embedding model; it is stored per document and enters every chunk id. An index's own
version adds that sink's schema version, so adding or upgrading one sink reprocesses
only that sink.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping


def _short_hash(payload: object) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def content_pipeline_version(
    parser_versions: Mapping[str, str],
    chunker_version: str,
    chunker_settings: Mapping[str, object],
    model_id: str,
    dimension: int,
) -> str:
    return _short_hash(
        {
            "parsers": dict(parser_versions),
            "chunker": [chunker_version, dict(chunker_settings)],
            "model": [model_id, dimension],
        }
    )


def index_pipeline_version(content_version: str, sink_type: str, schema_version: str) -> str:
    return _short_hash([content_version, sink_type, schema_version])
