"""The ``qdrant`` index: vector search in a Qdrant server, local folder or memory."""

from __future__ import annotations

from headwater.sinks.qdrant._sink import QdrantOptions, QdrantSink

__all__ = ["QdrantOptions", "QdrantSink"]
