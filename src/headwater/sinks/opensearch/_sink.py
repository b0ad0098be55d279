"""The OpenSearch index: BM25 keyword search and filtered k-NN in an OpenSearch cluster.

Each chunk is one document, written whole by ``_bulk`` (``refresh=wait_for``, so it is
searchable when the call returns), with BM25 ``text`` and ``title``, the document's ACL
as the keyword field ``principals``, ``source``, the write token ``write`` and an HNSW
``knn_vector``. Generation N lives in the index ``{index}__gN``; the alias ``{index}``
names the live one for readers outside Headwater and ``publish()`` moves it in one
``_aliases`` call.

OpenSearch has no multi-document transactions, so a per-document switch does the work,
as in the qdrant and meilisearch sinks: ``{index}__gN_revisions`` holds one record per
document (highest revision claimed, tombstone flag, ``live`` write token). A replace
claims the revision, writes the new chunks under a fresh token, switches ``live`` (one
document, the atomic step), then deletes the document's chunks of other writes by query;
searches, counts and the inventory see only live writes, so a failure at any step leaves
exactly one complete revision visible.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from headwater.clock import iso, utcnow
from headwater.errors import FatalError
from headwater.scopes import scope_tokens
from headwater.sinks.base import (
    InventoryRow,
    SearchRequest,
    SinkCapabilities,
    SinkContext,
    WriteOutcome,
)
from headwater.sinks.checks import check_unique_chunks
from headwater.sinks.opensearch._client import OsApi
from headwater.sinks.opensearch._mapping import ensure_index
from headwater.sinks.opensearch._options import (
    BINDING_ID,
    OpensearchOptions,
    base_name,
    chunk_doc_id,
    chunk_index_body,
    record_index_body,
)
from headwater.sinks.opensearch._search import doc_path, record_id, records_of
from headwater.sinks.opensearch._search import search as search_chunks
from headwater.types import Access, EmbeddedChunk, IndexDocument, SearchHit

# 2: chunks hold ``scopes``, their document's scope tokens (folder-scoped search).
SCHEMA_VERSION = "2"
BULK_BATCH = 500
PAGE = 500
CHUNK_PAGE = 1000  # a document's chunks read per search


def _term(field: str, value: str) -> dict[str, Any]:
    return {"term": {field: value}}


class OpensearchSink:
    """BM25 and filtered k-NN in OpenSearch, with a revision record per document."""

    type_name: ClassVar[str] = "opensearch"
    schema_version: ClassVar[str] = SCHEMA_VERSION
    capabilities: ClassVar[SinkCapabilities] = SinkCapabilities(vector=True, keyword=True)
    Options: ClassVar[type[OpensearchOptions]] = OpensearchOptions

    def __init__(self, options: OpensearchOptions, context: SinkContext) -> None:
        self.options = options
        self.context = context
        self.alias = base_name(options, context.name)
        self.index = f"{self.alias}__g{context.generation}"
        self.records = f"{self.index}_revisions"
        auth = None
        if options.username is not None and options.password is not None:
            auth = (options.username, options.password.get_secret_value())
        self._api = OsApi(options.url, auth, options.timeout, options.verify_tls)
        self._closed = False
        try:
            ensure_index(
                self._api, options.url, self.index, chunk_index_body(options, context.dimension)
            )
            ensure_index(self._api, options.url, self.records, record_index_body(options))
            if self._api.call("GET", f"/_alias/{self.alias}", missing_ok=True) is None:
                self.publish()  # the first generation opened names the alias
        except BaseException:
            self.close()
            raise

    def publish(self) -> None:
        """Point the read alias at this generation's index, in one ``_aliases`` call
        (removed from every other index in the same atomic request)."""
        held = self._api.call("GET", f"/_alias/{self.alias}", missing_ok=True) or {}
        actions: list[dict[str, Any]] = [
            {"remove": {"index": name, "alias": self.alias}} for name in held if name != self.index
        ]
        actions.append({"add": {"index": self.index, "alias": self.alias}})
        self._api.call("POST", "/_aliases", {"actions": actions})

    # ---- writes -------------------------------------------------------------------

    def replace(
        self, document: IndexDocument, chunks: Sequence[EmbeddedChunk], revision: int
    ) -> WriteOutcome:
        check_unique_chunks(document.document_id, chunks)
        write = uuid.uuid4().hex
        principals = document.access.principals()
        docs = [self._chunk(document, item, principals, revision, write) for item in chunks]
        record = self._record(document.document_id)
        if _stale(record, revision):
            return WriteOutcome.STALE
        self._swap(document.document_id, record, revision, docs, write)
        return WriteOutcome.APPLIED

    def delete(self, document_id: str, revision: int) -> WriteOutcome:
        record = self._record(document_id)
        if record is not None and int(record["revision"]) > revision:
            return WriteOutcome.STALE
        self._put_record(document_id, revision, deleted=True, live=None, live_revision=None)
        self._delete_by_query({"bool": {"filter": [_term("document_id", document_id)]}})
        return WriteOutcome.APPLIED

    def update_access(self, document_id: str, access: Access, revision: int) -> WriteOutcome:
        """Write the document's chunks again, whole, with the new ACL: the stored vectors
        and texts are copied as they are, under a new write switched in like a replace."""
        record = self._record(document_id)
        if record is None:
            return WriteOutcome.ABSENT
        if _stale(record, revision):
            return WriteOutcome.STALE
        if record.get("deleted") or not record.get("live"):
            return WriteOutcome.ABSENT
        write = uuid.uuid4().hex
        docs = [
            {
                **doc,
                "_id": chunk_doc_id(str(doc["chunk_id"]), write),
                "principals": access.principals(),
                "revision": revision,
                "write": write,
            }
            for doc in self._live_chunks(document_id, str(record["live"]), None)
        ]
        self._swap(document_id, record, revision, docs, write)
        return WriteOutcome.APPLIED

    def forget_tombstones(self, document_ids: Sequence[str]) -> None:
        """Delete the tombstone records of these documents; live documents are untouched."""
        held = records_of(self._api, self.records, list(document_ids))
        gone = [record_id(d) for d, r in held.items() if r.get("deleted")]
        self._api.bulk([({"delete": {"_index": self.records, "_id": i}}, None) for i in gone])

    def bound_manifest(self) -> str | None:
        found = self._api.call("GET", doc_path(self.records, BINDING_ID), missing_ok=True)
        return None if found is None else str(found["_source"]["manifest_id"])

    def bind(self, manifest_id: str, *, empty: bool = False) -> None:
        """Bind the index to ``manifest_id`` (``empty``: every chunk and record deleted)."""
        if empty:
            for index in (self.index, self.records):
                self._delete_by_query({"match_all": {}}, index)
        action = {"index": {"_index": self.records, "_id": BINDING_ID}}
        self._api.bulk([(action, {"manifest_id": manifest_id})])

    # ---- reads --------------------------------------------------------------------

    def count(self, document_id: str) -> int:
        record = self._record(document_id)
        if record is None or record.get("deleted") or not record.get("live"):
            return 0
        query = self._of_write(document_id, str(record["live"]))
        return int(self._api.call("POST", f"/{self.index}/_count", {"query": query})["count"])

    def revision(self, document_id: str) -> int | None:
        record = self._record(document_id)
        if record is None or record.get("deleted") or not record.get("live"):
            return None
        return int(record["live_revision"])

    def inventory(self) -> Iterator[InventoryRow]:
        """Live documents in document_id order (``search_after`` pages of records), each
        page's live chunks counted by one ``terms`` aggregation over ``write``."""
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "size": PAGE,
                "query": {"bool": {"filter": [_term("deleted", "false")]}},
                "sort": [{"document_id": "asc"}],
                "_source": ["document_id", "live", "live_revision"],
            }
            if after is not None:
                body["search_after"] = after
            hits = self._api.call("POST", f"/{self.records}/_search", body)["hits"]["hits"]
            page = [h["_source"] for h in hits if h["_source"].get("live")]
            counts = self._count_writes([str(r["live"]) for r in page])
            for record in page:
                yield InventoryRow(
                    document_id=str(record["document_id"]),
                    revision=int(record["live_revision"]),
                    chunks=counts.get(str(record["live"]), 0),
                )
            if len(hits) < PAGE:
                return
            after = hits[-1]["sort"]

    def search(self, request: SearchRequest) -> list[SearchHit]:
        """``hybrid`` is answered with the vector half (Headwater fuses in ``search/``)."""
        cosine = self.options.space_type == "cosinesimil"
        return search_chunks(self._api, self.index, self.records, request, cosine)

    def chunk_texts(self, document_id: str) -> list[str]:
        record = self._record(document_id)
        if record is None or record.get("deleted") or not record.get("live"):
            return []
        held = self._live_chunks(document_id, str(record["live"]), ["ordinal", "text"])
        return [str(doc["text"]) for doc in held]

    def drop(self) -> None:
        """Delete this generation's two indexes (the alias goes with its index) and close."""
        for index in (self.index, self.records):
            self._api.call("DELETE", f"/{index}", missing_ok=True)
        self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._api.close()

    # ---- helpers ------------------------------------------------------------------

    def _swap(
        self,
        document_id: str,
        record: dict[str, Any] | None,
        revision: int,
        docs: list[dict[str, Any]],
        write: str,
    ) -> None:
        """Claim ``revision``, write ``docs`` under ``write``, switch ``live`` to it, then
        delete the document's chunks of every other write."""
        live, live_revision = None, None
        if record is not None and not record.get("deleted"):
            live, live_revision = record.get("live"), record.get("live_revision")
        self._put_record(
            document_id, revision, deleted=False, live=live, live_revision=live_revision
        )
        actions = [
            (
                {"index": {"_index": self.index, "_id": doc["_id"]}},
                {k: v for k, v in doc.items() if k != "_id"},
            )
            for doc in docs
        ]
        for start in range(0, len(actions), BULK_BATCH):
            self._api.bulk(actions[start : start + BULK_BATCH])
        self._put_record(document_id, revision, deleted=False, live=write, live_revision=revision)
        others = {
            "bool": {
                "filter": [_term("document_id", document_id)],
                "must_not": [_term("write", write)],
            }
        }
        self._delete_by_query(others)

    def _delete_by_query(self, query: dict[str, Any], index: str | None = None) -> None:
        target = index or self.index
        answer = self._api.call(
            "POST", f"/{target}/_delete_by_query", {"query": query}, params={"refresh": "true"}
        )
        if answer.get("failures"):
            raise FatalError(
                f"opensearch at {self.options.url}: a delete by query on {target!r} failed: "
                f"{answer['failures'][:3]}"
            )

    def _record(self, document_id: str) -> dict[str, Any] | None:
        found = self._api.call(
            "GET", doc_path(self.records, record_id(document_id)), missing_ok=True
        )
        return None if found is None or not found.get("found") else dict(found["_source"])

    def _put_record(
        self,
        document_id: str,
        revision: int,
        *,
        deleted: bool,
        live: str | None,
        live_revision: int | None,
    ) -> None:
        """Write the document's record, complete (``live``: the write searches see)."""
        source = {
            "document_id": document_id,
            "revision": revision,
            "deleted": deleted,
            "live": live,
            "live_revision": live_revision,
            "changed_at": iso(utcnow()),
        }
        action = {"index": {"_index": self.records, "_id": record_id(document_id)}}
        self._api.bulk([(action, source)])

    def _of_write(self, document_id: str, write: str) -> dict[str, Any]:
        return {"bool": {"filter": [_term("document_id", document_id), _term("write", write)]}}

    def _live_chunks(
        self, document_id: str, write: str, fields: list[str] | None
    ) -> list[dict[str, Any]]:
        """The chunks of the document's live write, in ordinal order (whole, or ``fields``),
        paged with ``search_after`` on the ordinal (unique within a write)."""
        held: list[dict[str, Any]] = []
        body: dict[str, Any] = {
            "size": CHUNK_PAGE,
            "query": self._of_write(document_id, write),
            "sort": [{"ordinal": "asc"}],
        }
        if fields is not None:
            body["_source"] = fields
        while True:
            hits = self._api.call("POST", f"/{self.index}/_search", body)["hits"]["hits"]
            held.extend(dict(h["_source"]) for h in hits)
            if len(hits) < CHUNK_PAGE:
                return held
            body["search_after"] = hits[-1]["sort"]

    def _count_writes(self, writes: list[str]) -> dict[str, int]:
        if not writes:
            return {}
        body = {
            "size": 0,
            "query": {"terms": {"write": writes}},
            "aggs": {"writes": {"terms": {"field": "write", "size": len(writes)}}},
        }
        found = self._api.call("POST", f"/{self.index}/_search", body)
        buckets = found["aggregations"]["writes"]["buckets"]
        return {str(b["key"]): int(b["doc_count"]) for b in buckets}

    def _chunk(
        self,
        document: IndexDocument,
        item: EmbeddedChunk,
        principals: list[str],
        revision: int,
        write: str,
    ) -> dict[str, Any]:
        if item.vector is None or len(item.vector) != self.context.dimension:
            size = "no vector" if item.vector is None else f"{len(item.vector)} dimensions"
            raise FatalError(
                f"chunk {item.chunk.chunk_id} of document {document.document_id} has {size}; "
                f"the opensearch index {self.index!r} holds {self.context.dimension}-dimensional "
                "vectors; use the same embedding model or rebuild the index"
            )
        return {
            "_id": chunk_doc_id(item.chunk.chunk_id, write),
            "chunk_id": item.chunk.chunk_id,
            "document_id": document.document_id,
            "ordinal": item.chunk.ordinal,
            "text": item.chunk.text,
            "title": document.title,
            "locator": document.locator,
            "source": document.source,
            "principals": principals,
            "scopes": scope_tokens(document.source, document.metadata),
            "revision": revision,
            "write": write,
            "vector": [float(v) for v in item.vector],
        }


def _stale(record: dict[str, Any] | None, revision: int) -> bool:
    """Older than the highest revision held, or not newer than a tombstone (invariant 5)."""
    if record is None:
        return False
    held = int(record["revision"])
    return held > revision or (bool(record.get("deleted")) and held >= revision)
