"""The ``opensearch`` index's options, its index names and its mappings.

Generation N lives in the index ``{index}__gN`` (chunks) beside ``{index}__gN_revisions``
(one record per document); the read alias ``{index}`` names the live generation's chunk
index for readers outside Headwater, moved by one ``_aliases`` call
(https://opensearch.org/docs/latest/im-plugin/index-alias/).
"""

from __future__ import annotations

import re
import uuid
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from headwater.sinks.base import SinkOptions

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,200}")
_CHUNK_NAMESPACE = uuid.UUID("5d7c2b91-0e34-4f6a-9b18-7a2e4c9d0f63")
BINDING_ID = "headwater-binding"


class OpensearchOptions(SinkOptions):
    """Options of the ``opensearch`` index."""

    url: str = Field(default="http://localhost:9200", description="The cluster (its default port).")
    username: str | None = Field(default=None, description="HTTP basic auth user.")
    password: SecretStr | None = Field(default=None, description='e.g. "${OPENSEARCH_PASSWORD}".')
    index: str | None = Field(
        default=None, description="The read alias and index prefix; default `headwater_{name}`."
    )
    engine: Literal["lucene", "faiss"] = Field(
        default="lucene", description="The k-NN engine (both filter inside the search)."
    )
    space_type: Literal["cosinesimil", "innerproduct", "l2"] = Field(
        default="cosinesimil", description="The k-NN distance."
    )
    m: int = Field(default=16, ge=2, le=100, description="HNSW links per node.")
    ef_construction: int = Field(default=128, ge=2, description="HNSW build-time breadth.")
    shards: int = Field(default=1, ge=1, description="Primary shards per index.")
    replicas: int = Field(default=1, ge=0, description="Replicas per shard.")
    timeout: float = Field(default=30.0, gt=0, description="Seconds per HTTP request.")
    verify_tls: bool = Field(default=True, description="Verify the cluster's TLS certificate.")

    @field_validator("index")
    @classmethod
    def _index_name(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.fullmatch(value):
            raise ValueError(
                f"index was {value!r}; an OpenSearch index name is lowercase a-z 0-9 _ - "
                "and does not start with _ or -"
            )
        return value

    @model_validator(mode="after")
    def _password_with_user(self) -> OpensearchOptions:
        if (self.username is None) != (self.password is None):
            raise ValueError("set both username and password, or neither")
        return self


def base_name(options: OpensearchOptions, name: str) -> str:
    """The read alias (and the prefix of every index of this Headwater index)."""
    if options.index is not None:
        return options.index
    cleaned = re.sub(r"[^a-z0-9_-]", "_", name.lower())
    return f"headwater_{cleaned}"


def chunk_doc_id(chunk_id: str, write: str) -> str:
    """The ``_id`` of one chunk written by one write (never overwrites a live chunk)."""
    return uuid.uuid5(_CHUNK_NAMESPACE, f"{chunk_id}:{write}").hex


def chunk_index_body(options: OpensearchOptions, dimension: int) -> dict[str, Any]:
    """Settings and mappings of a chunk index: BM25 text, keyword ACL, an HNSW vector
    (https://opensearch.org/docs/latest/field-types/supported-field-types/knn-vector/)."""
    keyword = {"type": "keyword"}
    return {
        "settings": {
            "index": {
                "knn": True,
                "number_of_shards": options.shards,
                "number_of_replicas": options.replicas,
            }
        },
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "chunk_id": keyword,
                "document_id": keyword,
                "ordinal": {"type": "integer"},
                "text": {"type": "text"},
                "title": {"type": "text"},
                "locator": {"type": "keyword", "index": False},
                "source": keyword,
                "principals": keyword,
                "scopes": keyword,
                "revision": {"type": "long"},
                "write": keyword,
                "vector": {
                    "type": "knn_vector",
                    "dimension": dimension,
                    "method": {
                        "name": "hnsw",
                        "engine": options.engine,
                        "space_type": options.space_type,
                        "parameters": {"m": options.m, "ef_construction": options.ef_construction},
                    },
                },
            },
        },
    }


def record_index_body(options: OpensearchOptions) -> dict[str, Any]:
    keyword = {"type": "keyword"}
    return {
        "settings": {"index": {"number_of_shards": 1, "number_of_replicas": options.replicas}},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "document_id": keyword,
                "revision": {"type": "long"},
                "deleted": {"type": "boolean"},
                "live": keyword,
                "live_revision": {"type": "long"},
                "changed_at": keyword,
                "manifest_id": keyword,
            },
        },
    }
