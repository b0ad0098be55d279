"""The ``pgvector`` index: vector (HNSW) and keyword search in PostgreSQL with pgvector."""

from __future__ import annotations

from headwater.sinks.pgvector._options import PgvectorOptions
from headwater.sinks.pgvector._sink import PgvectorSink

__all__ = ["PgvectorOptions", "PgvectorSink"]
