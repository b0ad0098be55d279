"""Searching the chunk index: the request body per mode, and the live-write check.

Keyword search sends ``q`` alone and lets Meilisearch rank (its ranking rules,
``matchingStrategy`` ``last``). Vector search sends the query ``vector`` with
``hybrid: {embedder: "default", semanticRatio: 1.0}``: a purely semantic search over
the user-provided embeddings. Hybrid sends both with the configured ``semanticRatio``
(https://www.meilisearch.com/docs/reference/api/search#hybrid-search). The ACL,
source and scope conditions go into ``filter``, which Meilisearch applies before ranking, so
filtering never starves the top ``k``.

A semantic hit's ``_rankingScore`` is ``(1 + cosine) / 2`` (Meilisearch's own hybrid
tests show it: vector [1, 1] against [2, 3] scores 0.990290…), so vector scores are
turned back into cosine like the other sinks'. Hits whose write is not their document's
live one (a replace under way, or leftovers of one that died) are dropped, fetching more
until ``k`` are live or the index has no more.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from headwater.errors import ConfigError
from headwater.sinks.base import SearchRequest
from headwater.sinks.meilisearch._client import MeiliApi
from headwater.sinks.meilisearch._options import EMBEDDER, any_of, token
from headwater.types import SearchHit, SearchMode

OVERFETCH = 4
MAX_TOTAL_HITS = 1000  # Meilisearch's default pagination.maxTotalHits
FIELDS = ["chunk_id", "document_id", "ordinal", "text", "title", "locator", "source", "write"]
_NEGATION = re.compile(r"(^|\s)-+")


def plain_query(text: str) -> str | None:
    """``text`` with Meilisearch's query syntax (``"phrase"``, ``-word``) made plain;
    None when no word is left (an empty ``q`` would match every document)."""
    plain = _NEGATION.sub(r"\1", text.replace('"', " ")).strip()
    return plain if re.search(r"\w", plain) else None


def search(
    api: MeiliApi, index: str, records: str, request: SearchRequest, semantic_ratio: float
) -> list[SearchHit]:
    """The top ``k`` live, visible chunks for ``request``."""
    if request.k <= 0 or not request.principals:
        return []
    if (request.sources is not None and not request.sources) or (
        request.scopes is not None and not request.scopes
    ):
        return []
    body = _body(request, semantic_ratio)
    if body is None:
        return []
    conditions = [any_of("acl", [token("p", p) for p in request.principals])]
    if request.sources is not None:
        conditions.append(any_of("source_key", [token("s", s) for s in request.sources]))
    if request.scopes is not None:
        conditions.append(any_of("scope_key", [token("h", s) for s in request.scopes]))
    body["filter"] = " AND ".join(conditions)
    limit = min(request.k * OVERFETCH, MAX_TOTAL_HITS)
    while True:
        found = api.search(index, {**body, "limit": limit})["hits"]
        visible = _live_only(api, records, found)
        if len(visible) >= request.k or len(found) < limit or limit >= MAX_TOTAL_HITS:
            cosine = request.mode is SearchMode.VECTOR
            return [_hit(hit, cosine) for hit in visible[: request.k]]
        limit = min(limit * OVERFETCH, MAX_TOTAL_HITS)


def _body(request: SearchRequest, semantic_ratio: float) -> dict[str, Any] | None:
    body: dict[str, Any] = {"showRankingScore": True, "attributesToRetrieve": FIELDS}
    if request.mode is SearchMode.KEYWORD:
        query = plain_query(request.text)
        if query is None:
            return None
        return {**body, "q": query}
    if request.vector is None:
        raise ConfigError(
            f"a meilisearch {request.mode} search needs the query's vector; none was given"
        )
    body["vector"] = [float(v) for v in request.vector]
    if request.mode is SearchMode.VECTOR:
        return {**body, "hybrid": {"embedder": EMBEDDER, "semanticRatio": 1.0}}
    query = plain_query(request.text)
    if query is None:  # nothing to match by keyword: the semantic half alone
        return {**body, "hybrid": {"embedder": EMBEDDER, "semanticRatio": 1.0}}
    return {**body, "q": query, "hybrid": {"embedder": EMBEDDER, "semanticRatio": semantic_ratio}}


def live_writes(api: MeiliApi, records: str, document_ids: Sequence[str]) -> dict[str, str]:
    """document_id -> its live write token, for those of ``document_ids`` that have one."""
    if not document_ids:
        return {}
    found = api.fetch(
        records,
        filter=any_of("document_id", document_ids),
        fields=["document_id", "live", "deleted"],
        limit=len(document_ids),
    )
    return {
        str(r["document_id"]): str(r["live"])
        for r in found["results"]
        if r.get("live") and not r.get("deleted")
    }


def _live_only(api: MeiliApi, records: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    live = live_writes(api, records, sorted({str(h["document_id"]) for h in hits}))
    return [h for h in hits if live.get(str(h["document_id"])) == h.get("write")]


def _hit(hit: dict[str, Any], cosine: bool) -> SearchHit:
    score = float(hit.get("_rankingScore", 0.0))
    return SearchHit(
        chunk_id=str(hit["chunk_id"]),
        document_id=str(hit["document_id"]),
        ordinal=int(hit["ordinal"]),
        score=2.0 * score - 1.0 if cosine else score,
        text=str(hit["text"]),
        title=str(hit["title"]),
        locator=str(hit["locator"]),
        source=str(hit["source"]),
    )
