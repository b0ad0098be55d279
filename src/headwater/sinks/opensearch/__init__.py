"""The ``opensearch`` index: BM25 keyword search and filtered k-NN in an OpenSearch cluster."""

from __future__ import annotations

from headwater.sinks.opensearch._client import OpensearchBulkError, OpensearchError
from headwater.sinks.opensearch._options import OpensearchOptions
from headwater.sinks.opensearch._sink import OpensearchSink

__all__ = ["OpensearchBulkError", "OpensearchError", "OpensearchOptions", "OpensearchSink"]
