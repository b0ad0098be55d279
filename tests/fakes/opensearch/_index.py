"""One fake OpenSearch index: its mapping, documents, refresh, search and aggregations.

- Near real time: ``GET _doc`` and ``_mget`` read the latest write, searches, counts and
  aggregations read the last refresh; the fake refreshes only when asked
  (``refresh=true|wait_for``, ``POST _refresh``), which is stricter than the 1 s default:
  https://opensearch.org/docs/latest/api-reference/document-apis/index-document/#url-parameters
- ``dynamic: strict`` refuses an unmapped field (``strict_dynamic_mapping_exception``);
  a ``knn_vector`` of another length is a ``mapper_parsing_exception``:
  https://opensearch.org/docs/latest/field-types/mappings/#dynamic-mapping-parameters and
  https://opensearch.org/docs/latest/field-types/supported-field-types/knn-vector/
- search: ``size`` (default 10), ``from``, ``sort`` (a ``text`` field cannot be sorted on),
  ``search_after``, ``_source`` filtering, ``from + size`` at most 10,000
  (``index.max_result_window``), ``terms`` aggregations on keyword fields:
  https://opensearch.org/docs/latest/api-reference/search/ and
  https://opensearch.org/docs/latest/search-plugins/searching-data/paginate/
"""

from __future__ import annotations

import copy
from typing import Any

from fakes.opensearch._query import Evaluator, QueryError

MAX_RESULT_WINDOW = 10_000


class FakeIndex:
    def __init__(self, name: str, body: dict[str, Any]) -> None:
        self.name = name
        self.settings = copy.deepcopy(body.get("settings", {}))
        self.mappings = copy.deepcopy(body.get("mappings", {}))
        self.docs: dict[str, dict[str, Any]] = {}
        self.visible: dict[str, dict[str, Any]] = {}  # as of the last refresh

    @property
    def properties(self) -> dict[str, Any]:
        return self.mappings.get("properties", {})  # type: ignore[no-any-return]

    def refresh(self) -> None:
        self.visible = copy.deepcopy(self.docs)

    def check(self, doc_id: str, source: dict[str, Any]) -> None:
        """Refuse a document the mapping refuses (``QueryError`` with the error type)."""
        for field, value in source.items():
            mapping = self.properties.get(field)
            if mapping is None:
                if self.mappings.get("dynamic") == "strict":
                    raise QueryError(
                        "strict_dynamic_mapping_exception",
                        f"mapping set to strict, dynamic introduction of [{field}] within "
                        "[_doc] is not allowed",
                    )
                continue
            vector = mapping.get("type") == "knn_vector" and value is not None
            if vector and len(value) != mapping["dimension"]:
                raise QueryError(
                    "mapper_parsing_exception",
                    f"failed to parse field [{field}] of type [knn_vector] in document "
                    f"with id '{doc_id}'. Vector dimension mismatch. Expected: "
                    f"{mapping['dimension']}, Given: {len(value)}",
                )

    def search(self, body: dict[str, Any]) -> dict[str, Any]:
        size, start = int(body.get("size", 10)), int(body.get("from", 0))
        if size + start > MAX_RESULT_WINDOW:
            raise QueryError(
                "illegal_argument_exception",
                f"Result window is too large, from + size must be less than or equal to: "
                f"[{MAX_RESULT_WINDOW}] but was [{size + start}].",
            )
        scores = Evaluator(self.properties, self.visible).run(body.get("query"))
        order = {doc_id: n for n, doc_id in enumerate(self.visible)}
        sort = [self._sort_key(rule) for rule in body.get("sort", [])]
        if sort:
            ids = sorted(scores, key=lambda i: order[i])
            for field, descending in reversed(sort):
                ids.sort(key=lambda i: self._sortable(i, field), reverse=descending)
        else:
            ids = sorted(scores, key=lambda i: (-scores[i], order[i]))
        after = body.get("search_after")
        if after is not None:
            ids = [i for i in ids if [self._sortable(i, f) for f, _ in sort] > list(after)]
        hits = []
        for doc_id in ids[start : start + size]:
            hit: dict[str, Any] = {
                "_index": self.name,
                "_id": doc_id,
                "_score": None if sort else scores[doc_id],
                "_source": self._source(self.visible[doc_id], body.get("_source", True)),
            }
            if sort:
                hit["sort"] = [self._sortable(doc_id, f) for f, _ in sort]
            hits.append(hit)
        answer: dict[str, Any] = {
            "took": 1,
            "timed_out": False,
            "hits": {"total": {"value": len(ids), "relation": "eq"}, "hits": hits},
        }
        if body.get("aggs"):
            answer["aggregations"] = self._aggregations(body["aggs"], ids)
        return answer

    def _sort_key(self, rule: Any) -> tuple[str, bool]:
        field, direction = (rule, "asc") if isinstance(rule, str) else next(iter(rule.items()))
        if isinstance(direction, dict):
            direction = direction.get("order", "asc")
        if self.properties.get(field, {}).get("type") == "text":
            raise QueryError(
                "illegal_argument_exception",
                f"Text fields are not optimised for operations that require per-document "
                f"field data like aggregations and sorting, so these operations are disabled "
                f"by default. Please use a keyword field instead. [{field}]",
            )
        return field, direction == "desc"

    def _sortable(self, doc_id: str, field: str) -> Any:
        value = self.visible[doc_id].get(field)
        return "" if value is None else value

    def _source(self, source: dict[str, Any], wanted: Any) -> dict[str, Any]:
        if wanted is True:
            return copy.deepcopy(source)
        if wanted is False:
            return {}
        fields = wanted if isinstance(wanted, list) else wanted.get("includes", [])
        return {k: copy.deepcopy(v) for k, v in source.items() if k in fields}

    def _aggregations(self, aggs: dict[str, Any], ids: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name, spec in aggs.items():
            terms = spec["terms"]
            field = terms["field"]
            if self.properties.get(field, {}).get("type") != "keyword":
                raise QueryError(
                    "illegal_argument_exception",
                    f"terms aggregation needs a keyword field [{field}]",
                )
            counts: dict[str, int] = {}
            for doc_id in ids:
                value = self.visible[doc_id].get(field)
                for item in value if isinstance(value, list) else [value]:
                    if item is not None:
                        counts[str(item)] = counts.get(str(item), 0) + 1
            ranked = sorted(counts, key=lambda k: (-counts[k], k))[: int(terms.get("size", 10))]
            found[name] = {"buckets": [{"key": k, "doc_count": counts[k]} for k in ranked]}
        return found
