"""Permission-aware search over one configured index.

The caller's principals are their email, their groups and PUBLIC (invariant 12); the
sink filters by them inside the search, never after the top-k. Hybrid mode fuses vector
and keyword results by reciprocal rank; on a sink without keyword search it is vector.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from headwater.errors import ConfigError
from headwater.sinks.base import SearchRequest
from headwater.types import SearchHit, SearchMode, caller_principals

if TYPE_CHECKING:
    from headwater.workspace import Workspace

SNIPPET_CHARS = 240
OVERFETCH = 4  # chunks asked of the sink per document result wanted


def snippet(text: str, query: str, width: int = SNIPPET_CHARS) -> str:
    """A window of ``text`` around the first query term found, on word boundaries."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    terms = [t for t in re.findall(r"\w+", query.lower()) if len(t) > 2]
    lower = flat.lower()
    hit = min((lower.find(t) for t in terms if t in lower), default=0)
    start = max(0, hit - width // 3)
    if start:
        start = flat.find(" ", start) + 1 or start
    piece = flat[start : start + width]
    if start + width < len(flat):
        piece = piece.rsplit(" ", 1)[0] + " …"
    return ("… " if start else "") + piece


def hit_dict(hit: SearchHit, query: str) -> dict[str, Any]:
    return {
        "document_id": hit.document_id,
        "title": hit.title,
        "locator": hit.locator,
        "source": hit.source,
        "score": round(float(hit.score), 6),
        "snippet": snippet(hit.text, query),
        "chunk": hit.text,
        "chunk_id": hit.chunk_id,
        "ordinal": hit.ordinal,
    }


def run_search(
    ws: Workspace,
    query: str,
    *,
    user: str | None,
    groups: Sequence[str],
    k: int,
    mode: str,
    sources: Sequence[str] | None,
    index: str | None,
    per_document: bool = True,
) -> list[dict[str, Any]]:
    try:
        search_mode = SearchMode(mode)
    except ValueError as exc:
        raise ConfigError(
            f"--mode {mode!r} is not a search mode; expected hybrid, vector or keyword"
        ) from exc
    if k < 1:
        raise ConfigError(f"--k {k} must be at least 1")
    name = index or ws.index_sections[0].name
    sink = ws.sink(name)
    caps = sink.capabilities
    if search_mode is SearchMode.KEYWORD and not caps.keyword:
        raise ConfigError(
            f"index {name!r} has no keyword search; use --mode vector or another index"
        )
    if search_mode is SearchMode.HYBRID and not caps.keyword:
        search_mode = SearchMode.VECTOR
    if search_mode is SearchMode.VECTOR and not caps.vector:
        raise ConfigError(f"index {name!r} has no vector search; use --mode keyword")
    vector = None
    if search_mode is not SearchMode.KEYWORD:
        vector = ws.query_embedder(name).embed([query])[0]
    request = SearchRequest(
        text=query,
        vector=vector,
        principals=caller_principals(user, groups),
        k=max(k * OVERFETCH, 20) if per_document else k,
        mode=search_mode,
        sources=list(sources) if sources else None,
    )
    hits = sink.search(request)
    if per_document:
        hits = best_chunk_per_document(hits)
    return [hit_dict(h, query) for h in hits[:k]]


def best_chunk_per_document(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Keep each document's best-ranked chunk, in rank order."""
    seen: set[str] = set()
    best = []
    for hit in hits:
        if hit.document_id not in seen:
            seen.add(hit.document_id)
            best.append(hit)
    return best
