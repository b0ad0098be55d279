"""The Meilisearch index: keyword, vector and hybrid search in a Meilisearch server.

Each chunk is one complete Meilisearch document (added with ``POST …/documents``,
add-or-replace; never the ``PUT`` that merges fields) carrying its text, title, locator,
``source``, the document's ACL as ``principals`` (and, filtered on, as opaque keys in
``acl``), the write token ``write`` and its vector under ``_vectors.default`` for a
``userProvided`` embedder. Every write waits on its task until it ``succeeded``.

Meilisearch has no multi-document transactions, so a per-document switch does the
work, as in the qdrant sink. A second index, ``{index}_revisions``, holds one record
per document: the highest revision claimed, the tombstone flag and ``live``, the token
of the one write searches may see. A replace checks the record (stale writes are
refused), claims the revision, adds the new chunks under a fresh token (new document
ids, so no live chunk is touched), switches ``live`` to that token (one document: the
atomic step), and only then deletes the document's chunks of other writes by filter.
Searches, counts and the inventory see only chunks of live writes, so a failure at any
step leaves exactly one complete revision visible; leftovers of a dead write are
deleted by the document's next write.
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
from headwater.sinks.meilisearch._client import MeiliApi, MeilisearchError
from headwater.sinks.meilisearch._options import (
    BINDING_ID,
    EMBEDDER,
    MeilisearchOptions,
    any_of,
    chunk_doc_id,
    equals,
    index_uid,
    quoted,
    record_id,
    token,
)
from headwater.sinks.meilisearch._search import search as search_chunks
from headwater.sinks.meilisearch._settings import chunk_settings, ensure_index, record_settings
from headwater.types import Access, EmbeddedChunk, IndexDocument, SearchHit

# 2: each chunk holds ``scope_key``, its document's scope tokens (folder-scoped search).
SCHEMA_VERSION = "2"
ADD_BATCH = 500  # chunks per add-documents task
PAGE = 100  # records per inventory page (Meilisearch's default maxValuesPerFacet)
FETCH_PAGE = 1000


class MeilisearchSink:
    """Keyword, vector and hybrid search in Meilisearch, with a revision record per document."""

    type_name: ClassVar[str] = "meilisearch"
    schema_version: ClassVar[str] = SCHEMA_VERSION
    capabilities: ClassVar[SinkCapabilities] = SinkCapabilities(vector=True, keyword=True)
    Options: ClassVar[type[MeilisearchOptions]] = MeilisearchOptions

    def __init__(self, options: MeilisearchOptions, context: SinkContext) -> None:
        self.options = options
        self.context = context
        self.index = index_uid(options, context.name, context.generation)
        self.records = f"{self.index}_revisions"
        key = options.api_key.get_secret_value() if options.api_key else None
        self._api = MeiliApi(options.url, key, options.timeout, options.task_timeout)
        self._closed = False
        try:
            ensure_index(self._api, self.index, chunk_settings(context.dimension))
            ensure_index(self._api, self.records, record_settings())
        except BaseException:
            self.close()
            raise

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
        self._api.delete_where(self.index, equals("document_id", document_id))
        return WriteOutcome.APPLIED

    def update_access(self, document_id: str, access: Access, revision: int) -> WriteOutcome:
        """Write the document's chunks again with the new ACL: the stored vectors and
        texts are copied as they are (complete documents, never a partial update), under
        a new write token switched in like a replace, so the change is atomic too."""
        record = self._record(document_id)
        if record is None:
            return WriteOutcome.ABSENT
        if _stale(record, revision):
            return WriteOutcome.STALE
        if record.get("deleted") or not record.get("live"):
            return WriteOutcome.ABSENT
        held = self._live_chunks(document_id, str(record["live"]), vectors=True)
        write = uuid.uuid4().hex
        principals = access.principals()
        docs = []
        for doc in held:
            embeddings = doc["_vectors"][EMBEDDER]
            vector = embeddings["embeddings"][0] if isinstance(embeddings, dict) else embeddings
            docs.append(
                {
                    **{k: v for k, v in doc.items() if k != "_vectors"},
                    "id": chunk_doc_id(str(doc["chunk_id"]), write),
                    "principals": principals,
                    "acl": [token("p", p) for p in principals],
                    "revision": revision,
                    "write": write,
                    "_vectors": {EMBEDDER: vector},
                }
            )
        self._swap(document_id, record, revision, docs, write)
        return WriteOutcome.APPLIED

    def forget_tombstones(self, document_ids: Sequence[str]) -> None:
        """Delete the tombstone records of these documents; live documents are untouched."""
        for start in range(0, len(document_ids), PAGE):
            page = list(document_ids[start : start + PAGE])
            found = self._api.fetch(
                self.records,
                filter=f"{any_of('document_id', page)} AND deleted = true",
                fields=["id"],
                limit=len(page),
            )
            ids = [str(r["id"]) for r in found["results"]]
            if ids:
                self._api.delete_ids(self.records, ids)

    def bound_manifest(self) -> str | None:
        found = self._api.document(self.records, BINDING_ID)
        return None if found is None else str(found["manifest_id"])

    def bind(self, manifest_id: str, *, empty: bool = False) -> None:
        """Bind the index to ``manifest_id`` (``empty``: every chunk and record deleted)."""
        if empty:
            self._api.write("DELETE", f"/indexes/{self.index}/documents")
            self._api.write("DELETE", f"/indexes/{self.records}/documents")
        self._api.add_documents(self.records, [{"id": BINDING_ID, "manifest_id": manifest_id}])

    # ---- reads --------------------------------------------------------------------

    def count(self, document_id: str) -> int:
        """The document's chunks of its live write (leftovers of a dead write never count)."""
        record = self._record(document_id)
        if record is None or record.get("deleted") or not record.get("live"):
            return 0
        found = self._api.fetch(
            self.index, filter=self._of_write(document_id, str(record["live"])), fields=["id"]
        )
        return int(found["total"])

    def revision(self, document_id: str) -> int | None:
        record = self._record(document_id)
        if record is None or record.get("deleted") or not record.get("live"):
            return None
        return int(record["live_revision"])

    def inventory(self) -> Iterator[InventoryRow]:
        """Live documents in document_id order (records sorted by the server, a page of
        100 at a time), each page's live chunks counted by one facet search over ``write``."""
        offset = 0
        last = ""  # offset pages can shift under concurrent writes: never repeat or go back
        while True:
            found = self._api.fetch(
                self.records,
                filter="deleted = false",
                sort=["document_id:asc"],
                fields=["document_id", "live", "live_revision"],
                limit=PAGE,
                offset=offset,
            )
            page = [r for r in found["results"] if r.get("live") and r["document_id"] > last]
            if page:
                last = str(page[-1]["document_id"])
            counts = self._count_writes([str(r["live"]) for r in page])
            for record in page:
                yield InventoryRow(
                    document_id=str(record["document_id"]),
                    revision=int(record["live_revision"]),
                    chunks=counts.get(str(record["live"]), 0),
                )
            offset += PAGE
            if len(found["results"]) < PAGE:
                return

    def search(self, request: SearchRequest) -> list[SearchHit]:
        return search_chunks(
            self._api, self.index, self.records, request, self.options.semantic_ratio
        )

    def chunk_texts(self, document_id: str) -> list[str]:
        record = self._record(document_id)
        if record is None or record.get("deleted") or not record.get("live"):
            return []
        held = self._live_chunks(document_id, str(record["live"]), vectors=False)
        return [str(doc["text"]) for doc in held]

    def drop(self) -> None:
        """Delete this generation's two indexes and close."""
        for uid in (self.index, self.records):
            try:
                self._api.write("DELETE", f"/indexes/{uid}")
            except MeilisearchError as exc:
                if exc.code != "index_not_found":
                    raise
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
        """Claim ``revision``, add ``docs`` under ``write``, switch ``live`` to it, then
        delete the document's chunks of every other write."""
        live, live_revision = None, None
        if record is not None and not record.get("deleted"):
            live, live_revision = record.get("live"), record.get("live_revision")
        self._put_record(
            document_id, revision, deleted=False, live=live, live_revision=live_revision
        )
        for start in range(0, len(docs), ADD_BATCH):
            self._api.add_documents(self.index, docs[start : start + ADD_BATCH])
        self._put_record(document_id, revision, deleted=False, live=write, live_revision=revision)
        others = f"{equals('document_id', document_id)} AND write != {quoted(write)}"
        self._api.delete_where(self.index, others)

    def _record(self, document_id: str) -> dict[str, Any] | None:
        return self._api.document(self.records, record_id(document_id))

    def _put_record(
        self,
        document_id: str,
        revision: int,
        *,
        deleted: bool,
        live: str | None,
        live_revision: int | None,
    ) -> None:
        """Write the document's record, complete: ``revision`` is the highest claimed,
        ``live`` the write searches see (None: none) and ``live_revision`` its revision."""
        record = {
            "id": record_id(document_id),
            "document_id": document_id,
            "revision": revision,
            "deleted": deleted,
            "live": live,
            "live_revision": live_revision,
            "changed_at": iso(utcnow()),
        }
        self._api.add_documents(self.records, [record])

    def _of_write(self, document_id: str, write: str) -> str:
        return f"{equals('document_id', document_id)} AND {equals('write', write)}"

    def _live_chunks(self, document_id: str, write: str, *, vectors: bool) -> list[dict[str, Any]]:
        """The chunks of the document's live write, in ordinal order."""
        held: list[dict[str, Any]] = []
        while True:
            found = self._api.fetch(
                self.index,
                filter=self._of_write(document_id, write),
                retrieveVectors=vectors,
                limit=FETCH_PAGE,
                offset=len(held),
            )
            held.extend(found["results"])
            if len(found["results"]) < FETCH_PAGE:
                return sorted(held, key=lambda doc: int(doc["ordinal"]))

    def _count_writes(self, writes: list[str]) -> dict[str, int]:
        """Chunks per write token, by one facet search (``facets: ["write"]``)."""
        if not writes:
            return {}
        found = self._api.search(
            self.index, {"filter": any_of("write", writes), "facets": ["write"], "limit": 0}
        )
        return {str(k): int(v) for k, v in found["facetDistribution"].get("write", {}).items()}

    def _chunk(
        self,
        document: IndexDocument,
        item: EmbeddedChunk,
        principals: list[str],
        revision: int,
        write: str,
    ) -> dict[str, Any]:
        if item.vector is None:
            raise FatalError(
                f"chunk {item.chunk.chunk_id} of document {document.document_id} has no vector; "
                "the meilisearch index stores user-provided vectors; embed chunks first"
            )
        if len(item.vector) != self.context.dimension:
            raise FatalError(
                f"chunk {item.chunk.chunk_id} has {len(item.vector)} dimensions; the "
                f"meilisearch index {self.index!r} holds {self.context.dimension}; use the "
                "same embedding model or rebuild the index"
            )
        return {
            "id": chunk_doc_id(item.chunk.chunk_id, write),
            "chunk_id": item.chunk.chunk_id,
            "document_id": document.document_id,
            "ordinal": item.chunk.ordinal,
            "text": item.chunk.text,
            "title": document.title,
            "locator": document.locator,
            "source": document.source,
            "source_key": token("s", document.source),
            "scope_key": [token("h", t) for t in scope_tokens(document.source, document.metadata)],
            "principals": principals,
            "acl": [token("p", p) for p in principals],
            "revision": revision,
            "write": write,
            "_vectors": {EMBEDDER: [float(v) for v in item.vector]},
        }


def _stale(record: dict[str, Any] | None, revision: int) -> bool:
    """Older than the highest revision held, or not newer than a tombstone (invariant 5)."""
    if record is None:
        return False
    held = int(record["revision"])
    return held > revision or (bool(record.get("deleted")) and held >= revision)
