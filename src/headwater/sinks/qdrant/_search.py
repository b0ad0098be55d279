"""Vector queries against the chunk collection: the payload filter and the live-write check.

A search asks Qdrant for the nearest points that pass a payload filter (the caller's
principals, and the sources and scope tokens asked for); Qdrant applies it inside the HNSW
search, so filtering never starves the top ``k``. A point counts only when its write is
its document's live one; the sink fetches more until ``k`` are live or none are left.
"""

from __future__ import annotations

from collections.abc import Sequence

from qdrant_client import models as qm

from headwater.errors import ConfigError
from headwater.sinks.base import SearchRequest
from headwater.types import SearchMode


def vector_query(request: SearchRequest) -> tuple[list[float], qm.Filter] | None:
    """The query vector and payload filter of ``request``, or None when nothing can match
    it; keyword mode and a missing vector are refused."""
    if request.mode is SearchMode.KEYWORD:
        raise ConfigError(
            "the qdrant index has no keyword search; use mode `vector` or `hybrid`, "
            "or search an index of type `sqlite`"
        )
    if request.vector is None:
        raise ConfigError("a qdrant search needs the query's vector; none was given")
    if request.k <= 0 or not request.principals:
        return None
    if (request.sources is not None and not request.sources) or (
        request.scopes is not None and not request.scopes
    ):
        return None
    must: list[qm.Condition] = [
        qm.FieldCondition(key="principals", match=qm.MatchAny(any=list(request.principals)))
    ]
    if request.sources is not None:
        must.append(qm.FieldCondition(key="source", match=qm.MatchAny(any=list(request.sources))))
    if request.scopes is not None:
        must.append(qm.FieldCondition(key="scopes", match=qm.MatchAny(any=list(request.scopes))))
    return list(request.vector), qm.Filter(must=must)


def live_points(points: Sequence[qm.ScoredPoint], live: dict[str, object]) -> list[qm.ScoredPoint]:
    """The points whose write is their document's live one (``live``: document_id -> token)."""
    return [
        p
        for p in points
        if (p.payload or {}).get("write") is not None
        and live.get(str((p.payload or {})["document_id"])) == (p.payload or {})["write"]
    ]
