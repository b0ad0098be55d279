"""One fake Meilisearch index: documents, settings, documents fetch and search.

Behaviour and its sources:
- document ids only ``a-z A-Z 0-9 - _`` (``invalid_document_id``), a missing primary key
  is ``missing_document_id``; a POST replaces a document whole:
  https://www.meilisearch.com/docs/reference/api/documents#add-or-replace-documents
- ``_vectors.{embedder}`` must name a configured embedder and hold vectors of its
  ``dimensions`` (``invalid_vector_dimensions``, message as Meilisearch's hybrid tests
  show it); vectors are stored as float32 and fetched back, with ``retrieveVectors``, as
  ``{"embeddings": [[…]], "regenerate": false}``:
  https://www.meilisearch.com/docs/capabilities/hybrid_search/how_to/search_with_user_provided_embeddings
- documents fetch: ``filter`` (filterable attributes only, ``invalid_document_filter``),
  ``sort`` (sortable attributes only, ``invalid_document_sort``), ``fields``, ``limit``
  (default 20), ``offset``, ``total`` counts every match:
  https://www.meilisearch.com/docs/reference/api/documents/list-documents-with-post
- search: ``q`` over ``searchableAttributes`` with ``matchingStrategy`` ``last`` (a hit
  must hold the first query word; query words are dropped from the end), prefix matching
  on the last query word, placeholder search when ``q`` is empty; ``vector`` with
  ``hybrid.embedder`` ranks by ``(1 + cosine) / 2`` (the ``_rankingScore`` Meilisearch's
  own tests show); ``filter`` (``invalid_search_filter``), ``facets`` (filterable only,
  ``invalid_search_facets``; values sorted alpha, ``maxValuesPerFacet`` 100), results
  capped at ``pagination.maxTotalHits`` 1000:
  https://www.meilisearch.com/docs/reference/api/search
Error codes taken from Meilisearch's snapshots or error reference, except three the
sink never provokes, chosen by us and not confirmed: ``invalid_vectors`` (a document
names an embedder that is not configured), ``invalid_search_hybrid_query`` (``vector``
without ``hybrid``) and ``invalid_search_vector`` (``hybrid`` without ``vector``).
What it does not model: typo tolerance, proximity/attribute/exactness ranking rules
(keyword ties keep insertion order), Meilisearch's exact hybrid merge (a hybrid search
with 0 < semanticRatio < 1 ranks each document by the better of its two scores).
"""

from __future__ import annotations

import copy
import math
import re
import struct
from typing import Any

from fakes.meilisearch._filter import FilterError, compile_filter

_ID = re.compile(r"[A-Za-z0-9_-]{1,511}")
_WORD = re.compile(r"\w+")
DEFAULT_SETTINGS: dict[str, Any] = {
    "displayedAttributes": ["*"],
    "searchableAttributes": ["*"],
    "filterableAttributes": [],
    "sortableAttributes": [],
    "rankingRules": ["words", "typo", "proximity", "attribute", "sort", "exactness"],
    "stopWords": [],
    "synonyms": {},
    "distinctAttribute": None,
    "typoTolerance": {"enabled": True},
    "faceting": {"maxValuesPerFacet": 100, "sortFacetValuesBy": {"*": "alpha"}},
    "pagination": {"maxTotalHits": 1000},
    "embedders": {},
}


class MeiliError(Exception):
    """An error answer: ``code`` as documented, ``status`` for synchronous answers."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status

    def body(self) -> dict[str, str]:
        kind = "auth" if self.status in (401, 403) else "invalid_request"
        return {
            "message": self.message,
            "code": self.code,
            "type": "internal" if self.status >= 500 else kind,
            "link": f"https://docs.meilisearch.com/errors#{self.code}",
        }


def _f32(values: list[Any]) -> list[float]:
    return [struct.unpack("f", struct.pack("f", float(v)))[0] for v in values]


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class FakeIndex:
    def __init__(self, uid: str, primary_key: str | None) -> None:
        self.uid = uid
        self.primary_key = primary_key
        self.settings: dict[str, Any] = copy.deepcopy(DEFAULT_SETTINGS)
        self.docs: dict[str, dict[str, Any]] = {}  # insertion order is the internal id order

    # ---- writes (run by the task queue) -----------------------------------------------

    def add(self, documents: list[dict[str, Any]]) -> None:
        """All or nothing: one bad document fails the whole task, as Meilisearch does."""
        key = self.primary_key or "id"
        checked: list[tuple[str, dict[str, Any]]] = []
        for doc in documents:
            if key not in doc:
                raise MeiliError(
                    "missing_document_id", f"Document doesn't have a `{key}` attribute: `{doc}`."
                )
            doc_id = str(doc[key])
            if not _ID.fullmatch(doc_id):
                raise MeiliError(
                    "invalid_document_id", f'Document identifier `"{doc_id}"` is invalid.'
                )
            stored = {k: v for k, v in doc.items() if k != "_vectors"}
            vectors = doc.get("_vectors") or {}
            stored_vectors: dict[str, list[float]] = {}
            for name, value in vectors.items():
                embedder = self.settings["embedders"].get(name)
                if embedder is None:
                    raise MeiliError("invalid_vectors", f"Embedder `{name}` is not configured.")
                embeddings = value["embeddings"] if isinstance(value, dict) else value
                if embeddings and isinstance(embeddings[0], list):
                    embeddings = embeddings[0]
                if len(embeddings) != embedder["dimensions"]:
                    raise MeiliError(
                        "invalid_vector_dimensions",
                        f"Invalid vector dimensions: expected: `{embedder['dimensions']}`, "
                        f"found: `{len(embeddings)}`.",
                    )
                stored_vectors[name] = _f32(embeddings)
            stored["_vectors"] = stored_vectors
            checked.append((doc_id, stored))
        self.primary_key = key
        for doc_id, stored in checked:
            self.docs.pop(doc_id, None)  # a replaced document gets a new internal id
            self.docs[doc_id] = stored

    def delete_where(self, filter_: str) -> None:
        try:
            keep = compile_filter(filter_, self.settings["filterableAttributes"])
        except FilterError as exc:
            raise MeiliError("invalid_document_filter", str(exc)) from exc
        for doc_id in [i for i, d in self.docs.items() if keep(d)]:
            del self.docs[doc_id]

    def update_settings(self, patch: dict[str, Any]) -> None:
        for name, value in patch.items():
            if name not in DEFAULT_SETTINGS:
                raise MeiliError("bad_request", f"Unknown field `{name}` in settings.")
            if name == "embedders":
                for embedder, config in (value or {}).items():
                    if config is None:
                        self.settings["embedders"].pop(embedder, None)
                        continue
                    if config.get("source") == "userProvided" and not config.get("dimensions"):
                        raise MeiliError(
                            "invalid_settings_embedders",
                            f"`.embedders.{embedder}`: Missing field `dimensions` "
                            "(`userProvided` embedders need it).",
                        )
                    self.settings["embedders"][embedder] = dict(config)
            elif value is None:
                self.settings[name] = copy.deepcopy(DEFAULT_SETTINGS[name])
            else:
                self.settings[name] = copy.deepcopy(value)

    # ---- reads ---------------------------------------------------------------------

    def shown(self, doc: dict[str, Any], fields: list[str] | None, vectors: bool) -> dict[str, Any]:
        shown = {k: v for k, v in doc.items() if k != "_vectors"}
        if vectors:
            shown["_vectors"] = {
                name: {"embeddings": [list(v)], "regenerate": False}
                for name, v in doc["_vectors"].items()
            }
        if fields is not None and fields != ["*"]:
            shown = {k: v for k, v in shown.items() if k in fields}
        return shown

    def fetch(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            keep = compile_filter(body.get("filter"), self.settings["filterableAttributes"])
        except FilterError as exc:
            raise MeiliError("invalid_document_filter", str(exc)) from exc
        found = [d for d in self.docs.values() if keep(d)]
        for rule in reversed(body.get("sort") or []):
            attribute, _, direction = rule.partition(":")
            if attribute not in self.settings["sortableAttributes"]:
                raise MeiliError(
                    "invalid_document_sort", f"Attribute `{attribute}` is not sortable."
                )
            found.sort(key=lambda d: str(d.get(attribute, "")), reverse=direction == "desc")
        offset, limit = int(body.get("offset", 0)), int(body.get("limit", 20))
        page = found[offset : offset + limit]
        vectors = bool(body.get("retrieveVectors"))
        return {
            "results": [self.shown(d, body.get("fields"), vectors) for d in page],
            "offset": offset,
            "limit": limit,
            "total": len(found),
        }

    def search(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            keep = compile_filter(body.get("filter"), self.settings["filterableAttributes"])
        except FilterError as exc:
            raise MeiliError("invalid_search_filter", str(exc)) from exc
        candidates = [d for d in self.docs.values() if keep(d)]
        hybrid = body.get("hybrid")
        ratio = 0.0
        vector = body.get("vector")
        if vector is not None and hybrid is None:
            raise MeiliError(
                "invalid_search_hybrid_query", "`vector` needs `hybrid.embedder` to be set."
            )
        if hybrid is not None:
            name = hybrid.get("embedder")
            embedder = self.settings["embedders"].get(name)
            if embedder is None:
                raise MeiliError(
                    "invalid_search_embedder", f"Cannot find embedder with name `{name}`."
                )
            ratio = float(hybrid.get("semanticRatio", 0.5))
            if vector is None:
                raise MeiliError("invalid_search_vector", "A userProvided embedder needs `vector`.")
            if len(vector) != embedder["dimensions"]:
                raise MeiliError(
                    "invalid_vector_dimensions",
                    f"Invalid vector dimensions: expected: `{embedder['dimensions']}`, "
                    f"found: `{len(vector)}`.",
                )
        scored = self._rank(candidates, body.get("q"), vector, hybrid, ratio)
        facets = self._facets(body.get("facets"), [d for d, _ in scored])
        cap = int(self.settings["pagination"]["maxTotalHits"])
        offset, limit = int(body.get("offset", 0)), int(body.get("limit", 20))
        scored = scored[:cap]
        hits = []
        for doc, score in scored[offset : offset + limit]:
            hit = self.shown(doc, body.get("attributesToRetrieve"), False)
            if body.get("showRankingScore"):
                hit["_rankingScore"] = score
            hits.append(hit)
        answer: dict[str, Any] = {
            "hits": hits,
            "query": body.get("q") or "",
            "processingTimeMs": 0,
            "limit": limit,
            "offset": offset,
            "estimatedTotalHits": len(scored),
        }
        if facets is not None:
            answer["facetDistribution"] = facets
        return answer

    def _rank(
        self,
        docs: list[dict[str, Any]],
        q: str | None,
        vector: list[float] | None,
        hybrid: dict[str, Any] | None,
        ratio: float,
    ) -> list[tuple[dict[str, Any], float]]:
        keyword = {} if ratio >= 1.0 else self._keyword(docs, q or "")
        semantic: dict[int, float] = {}
        if hybrid is not None and vector is not None and ratio > 0.0:
            query = _f32(vector)
            for doc in docs:
                held = doc["_vectors"].get(hybrid["embedder"])
                if held is not None:
                    semantic[id(doc)] = (1.0 + _cosine(query, held)) / 2.0
        scores: dict[int, float] = {}
        for key in set(keyword) | set(semantic):
            scores[key] = max(keyword.get(key, 0.0), semantic.get(key, 0.0))
        order = {id(d): i for i, d in enumerate(docs)}
        ranked = sorted(
            (d for d in docs if id(d) in scores), key=lambda d: (-scores[id(d)], order[id(d)])
        )
        return [(d, scores[id(d)]) for d in ranked]

    def _keyword(self, docs: list[dict[str, Any]], q: str) -> dict[int, float]:
        query = _words(q)
        if not query:  # placeholder search: every candidate, score 1
            return {id(d): 1.0 for d in docs}
        searchable = self.settings["searchableAttributes"]
        found: dict[int, float] = {}
        for doc in docs:
            fields = [
                k for k in doc if k != "_vectors" and (searchable == ["*"] or k in searchable)
            ]
            words = set()
            for field in fields:
                value = doc[field]
                if isinstance(value, str):
                    words.update(_words(value))
            level = 0
            for i, word in enumerate(query):
                last = i == len(query) - 1
                if word in words or (last and any(w.startswith(word) for w in words)):
                    level = i + 1
                else:
                    break
            if level:
                found[id(doc)] = level / len(query)
        return found

    def _facets(self, names: list[str] | None, docs: list[dict[str, Any]]) -> dict[str, Any] | None:
        if names is None:
            return None
        limit = int(self.settings["faceting"]["maxValuesPerFacet"])
        distribution: dict[str, Any] = {}
        for name in names:
            if name not in self.settings["filterableAttributes"]:
                raise MeiliError("invalid_search_facets", f"Attribute `{name}` is not filterable.")
            counts: dict[str, int] = {}
            for doc in docs:
                value = doc.get(name)
                for item in value if isinstance(value, list) else [value]:
                    if item is not None:
                        counts[str(item)] = counts.get(str(item), 0) + 1
            distribution[name] = {k: counts[k] for k in sorted(counts)[:limit]}
        return distribution


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
