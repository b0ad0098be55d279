"""The ``qdrant`` index: vector search in a Qdrant server, local folder or memory."""

from __future__ import annotations

from headwater.sinks.qdrant._options import QdrantOptions
from headwater.sinks.qdrant._sink import QdrantSink

__all__ = ["QdrantOptions", "QdrantSink"]
