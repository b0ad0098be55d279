"""The query DSL subset the sink uses, evaluated the way OpenSearch documents it.

- ``match_all``, ``term``/``terms`` (exact match on keyword and boolean fields; an array
  field matches when one element does; a field mapped ``index: false`` cannot be
  searched): https://opensearch.org/docs/latest/query-dsl/term/term/
- ``bool`` with ``must`` (scored), ``filter`` (not scored), ``must_not``, ``should``:
  https://opensearch.org/docs/latest/query-dsl/compound/bool/
- ``multi_match`` / ``match``: the text analyzed by the standard analyzer (lowercase
  word tokens), OR of the terms, BM25 (k1 1.2, b 0.75) per field, ``best_fields`` takes
  the best field: https://opensearch.org/docs/latest/query-dsl/full-text/multi-match/
- ``knn`` with ``filter``: the ``k`` nearest among the documents the filter keeps
  (efficient filtering), scored by the space type (cosinesimil ``(1 + cos) / 2``, l2
  ``1 / (1 + d²)``, innerproduct ``ip + 1`` or ``1 / (1 - ip)``):
  https://opensearch.org/docs/latest/search-plugins/knn/filter-search-knn/ and
  https://opensearch.org/docs/latest/search-plugins/knn/approximate-knn/#spaces
"""

from __future__ import annotations

import math
import re
from typing import Any

Doc = dict[str, Any]
_WORD = re.compile(r"\w+")


class QueryError(Exception):
    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def analyze(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _values(held: Any) -> list[Any]:
    return held if isinstance(held, list) else [held]


def _same(held: Any, wanted: Any) -> bool:
    if isinstance(held, bool) or isinstance(wanted, bool):
        return str(held).lower() == str(wanted).lower()
    return held is not None and str(held) == str(wanted)


class Evaluator:
    """Scores documents (id -> source) for one query against one index's mapping."""

    def __init__(self, properties: dict[str, Any], docs: dict[str, Doc]) -> None:
        self.properties = properties
        self.docs = docs

    def run(self, query: dict[str, Any] | None) -> dict[str, float]:
        """Matching ids with their scores."""
        return self._eval(query or {"match_all": {}})

    def _field(self, name: str, query: str) -> dict[str, Any]:
        mapping = self.properties.get(name)
        if mapping is not None and mapping.get("index") is False:
            raise QueryError(
                "query_shard_exception",
                f"failed to create query: Cannot search on field [{name}] since it is not indexed.",
            )
        return mapping or {}

    def _eval(self, query: dict[str, Any]) -> dict[str, float]:
        if len(query) != 1:
            raise QueryError("parsing_exception", f"one query type per object, got {list(query)}")
        kind, spec = next(iter(query.items()))
        if kind == "match_all":
            return {i: 1.0 for i in self.docs}
        if kind in ("term", "terms"):
            field, wanted = next(iter(spec.items()))
            self._field(field, kind)
            wanted = wanted.get("value") if isinstance(wanted, dict) else wanted
            options = wanted if kind == "terms" else [wanted]
            return {
                i: 1.0
                for i, d in self.docs.items()
                if any(_same(h, w) for h in _values(d.get(field)) for w in options)
            }
        if kind == "bool":
            return self._bool(spec)
        if kind == "multi_match":
            return self._bm25(spec["query"], spec.get("fields", []))
        if kind == "match":
            field, wanted = next(iter(spec.items()))
            text = wanted.get("query") if isinstance(wanted, dict) else wanted
            return self._bm25(str(text), [field])
        if kind == "knn":
            return self._knn(spec)
        raise QueryError("parsing_exception", f"unknown query [{kind}]")

    def _bool(self, spec: dict[str, Any]) -> dict[str, float]:
        def clauses(name: str) -> list[dict[str, Any]]:
            value = spec.get(name, [])
            return value if isinstance(value, list) else [value]

        found = {i: 0.0 for i in self.docs}
        for clause in clauses("must"):
            scores = self._eval(clause)
            found = {i: s + scores[i] for i, s in found.items() if i in scores}
        for clause in clauses("filter"):
            kept = self._eval(clause)
            found = {i: s for i, s in found.items() if i in kept}
        for clause in clauses("must_not"):
            dropped = self._eval(clause)
            found = {i: s for i, s in found.items() if i not in dropped}
        should = clauses("should")
        if should:
            matched: dict[str, float] = {}
            for clause in should:
                for i, s in self._eval(clause).items():
                    matched[i] = matched.get(i, 0.0) + s
            if not clauses("must") and not clauses("filter"):
                found = {i: s for i, s in found.items() if i in matched}
            found = {i: s + matched.get(i, 0.0) for i, s in found.items()}
        if not clauses("must") and not should:
            found = {i: 0.0 for i in found}  # filter context only: constant score 0
        return found

    def _bm25(self, text: str, fields: list[str]) -> dict[str, float]:
        terms = analyze(text)
        best: dict[str, float] = {}
        for field in fields:
            name = field.split("^")[0]
            self._field(name, "match")
            tokens = {i: analyze(str(d[name])) for i, d in self.docs.items() if name in d}
            if not tokens:
                continue
            average = sum(len(t) for t in tokens.values()) / len(tokens)
            for term in set(terms):
                having = [i for i, t in tokens.items() if term in t]
                if not having:
                    continue
                idf = math.log(1 + (len(tokens) - len(having) + 0.5) / (len(having) + 0.5))
                for i in having:
                    tf = tokens[i].count(term)
                    norm = tf + 1.2 * (1 - 0.75 + 0.75 * len(tokens[i]) / average)
                    score = idf * tf * 2.2 / norm
                    best[f"{field}\x00{i}"] = best.get(f"{field}\x00{i}", 0.0) + score
        found: dict[str, float] = {}
        for key, score in best.items():
            doc_id = key.split("\x00", 1)[1]
            found[doc_id] = max(found.get(doc_id, 0.0), score)
        return found

    def _knn(self, spec: dict[str, Any]) -> dict[str, float]:
        field, params = next(iter(spec.items()))
        mapping = self.properties.get(field, {})
        if mapping.get("type") != "knn_vector":
            raise QueryError("query_shard_exception", f"Field '{field}' is not knn_vector type.")
        vector = params["vector"]
        if len(vector) != mapping["dimension"]:
            raise QueryError(
                "illegal_argument_exception",
                f"Query vector has invalid dimension: {len(vector)}. "
                f"Dimension should be: {mapping['dimension']}",
            )
        kept = self._eval(params["filter"]) if params.get("filter") else self.docs
        space = mapping.get("method", {}).get("space_type", "l2")
        scores = {
            i: _score(space, vector, self.docs[i][field])
            for i in kept
            if self.docs[i].get(field) is not None
        }
        nearest = sorted(scores, key=lambda i: -scores[i])[: int(params["k"])]
        return {i: scores[i] for i in nearest}


def _score(space: str, query: list[float], held: list[float]) -> float:
    dot = sum(a * b for a, b in zip(query, held, strict=True))
    if space == "cosinesimil":
        norm = math.sqrt(sum(a * a for a in query)) * math.sqrt(sum(b * b for b in held))
        return (1.0 + (dot / norm if norm else 0.0)) / 2.0
    if space == "innerproduct":
        return dot + 1.0 if dot >= 0 else 1.0 / (1.0 - dot)
    squared = sum((a - b) ** 2 for a, b in zip(query, held, strict=True))
    return 1.0 / (1.0 + squared)
