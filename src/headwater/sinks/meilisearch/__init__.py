"""The ``meilisearch`` index: keyword, vector and hybrid search in a Meilisearch server."""

from __future__ import annotations

from headwater.sinks.meilisearch._client import MeilisearchError, MeilisearchTaskFailed
from headwater.sinks.meilisearch._options import MeilisearchOptions
from headwater.sinks.meilisearch._sink import MeilisearchSink

__all__ = ["MeilisearchError", "MeilisearchOptions", "MeilisearchSink", "MeilisearchTaskFailed"]
