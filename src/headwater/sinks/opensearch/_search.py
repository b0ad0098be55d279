"""Searching the chunk index: BM25 keyword queries, filtered k-NN, the live-write check.

Keyword search is a ``multi_match`` over ``text`` and ``title`` (BM25; a match query
analyzes the text, so nothing in it is syntax). Vector search is a ``knn`` query whose
``filter`` holds the ACL and source conditions: OpenSearch applies it during the k-NN
search (efficient filtering, lucene and faiss engines), so a caller who sees few chunks
still gets ``k`` (https://opensearch.org/docs/latest/search-plugins/knn/filter-search-knn/).
With ``cosinesimil`` a hit's ``_score`` is ``(1 + cosine) / 2``
(https://opensearch.org/docs/latest/search-plugins/knn/approximate-knn/#spaces), turned
back into cosine. Hits whose write is not their document's live one are dropped,
fetching more until ``k`` are live or the index has no more.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from headwater.errors import ConfigError
from headwater.sinks.base import SearchRequest
from headwater.sinks.opensearch._client import OsApi
from headwater.types import SearchHit, SearchMode

OVERFETCH = 4
MAX_WINDOW = 10_000  # index.max_result_window's default
FIELDS = ["chunk_id", "document_id", "ordinal", "text", "title", "locator", "source", "write"]


def record_id(document_id: str) -> str:
    """A record's ``_id``: the document_id (ids are at most 512 bytes)."""
    if len(document_id.encode()) <= 512 and document_id != "headwater-binding":
        return document_id
    return "x" + hashlib.sha256(document_id.encode()).hexdigest()


def doc_path(index: str, doc_id: str) -> str:
    return f"/{index}/_doc/{quote(doc_id, safe='')}"


def search(
    api: OsApi, index: str, records: str, request: SearchRequest, cosine: bool
) -> list[SearchHit]:
    """The top ``k`` live, visible chunks for ``request``."""
    if request.k <= 0 or not request.principals:
        return []
    if (request.sources is not None and not request.sources) or (
        request.scopes is not None and not request.scopes
    ):
        return []
    filters: list[dict[str, Any]] = [{"terms": {"principals": list(request.principals)}}]
    if request.sources is not None:
        filters.append({"terms": {"source": list(request.sources)}})
    if request.scopes is not None:
        filters.append({"terms": {"scopes": list(request.scopes)}})
    if request.mode is SearchMode.KEYWORD:
        if not re.search(r"\w", request.text):
            return []
        match = {"multi_match": {"query": request.text, "fields": ["text", "title"]}}
        query: dict[str, Any] = {"bool": {"must": [match], "filter": filters}}
    elif request.vector is None:
        raise ConfigError(
            f"an opensearch {request.mode} search needs the query's vector; none was given"
        )
    else:
        query = {}  # the knn query is built per limit below
    limit = min(request.k * OVERFETCH, MAX_WINDOW)
    while True:
        if request.mode is not SearchMode.KEYWORD:
            vector = [float(v) for v in request.vector or []]
            knn = {"vector": vector, "k": limit, "filter": {"bool": {"filter": filters}}}
            query = {"knn": {"vector": knn}}
        body = {"size": limit, "_source": FIELDS, "query": query}
        found = api.call("POST", f"/{index}/_search", body)["hits"]["hits"]
        visible = _live_only(api, records, found)
        if len(visible) >= request.k or len(found) < limit or limit >= MAX_WINDOW:
            convert = cosine and request.mode is not SearchMode.KEYWORD
            return [_hit(hit, convert) for hit in visible[: request.k]]
        limit = min(limit * OVERFETCH, MAX_WINDOW)


def records_of(api: OsApi, records: str, document_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The records of these documents that exist, by document_id (realtime ``_mget``)."""
    if not document_ids:
        return {}
    found = api.call("POST", f"/{records}/_mget", {"ids": [record_id(d) for d in document_ids]})
    return {
        str(doc["_source"]["document_id"]): doc["_source"]
        for doc in found["docs"]
        if doc.get("found")
    }


def _live_only(api: OsApi, records: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    held = records_of(api, records, sorted({str(h["_source"]["document_id"]) for h in hits}))
    live = {d: r.get("live") for d, r in held.items() if not r.get("deleted")}
    return [h for h in hits if live.get(str(h["_source"]["document_id"])) == h["_source"]["write"]]


def _hit(hit: dict[str, Any], cosine: bool) -> SearchHit:
    source = hit["_source"]
    score = float(hit["_score"])
    return SearchHit(
        chunk_id=str(source["chunk_id"]),
        document_id=str(source["document_id"]),
        ordinal=int(source["ordinal"]),
        score=2.0 * score - 1.0 if cosine else score,
        text=str(source["text"]),
        title=str(source["title"]),
        locator=str(source["locator"]),
        source=str(source["source"]),
    )
