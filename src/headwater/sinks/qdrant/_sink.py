"""The Qdrant index: vectors in a Qdrant server, local folder or memory.

Each chunk is a point whose id is its ``chunk_id`` and whose payload carries the
document's ACL (``principals``), ``source`` and scope tokens (``scopes``, the folders
it lies under); searches pass them as a payload filter,
which Qdrant applies inside the HNSW search, so filtering never starves the top ``k``.

Qdrant has no multi-point transactions, so a per-document switch does the work. A second
collection holds one payload-only point per document: the highest revision claimed, the
tombstone flag, the ACL, and ``live``, the token of the one write searches may see. A
replace checks it (stale writes are refused), claims the revision (a later, older write
is refused even if this one dies midway), upserts the new points under a fresh write
token (new point ids, so no live point is touched), switches ``live`` to that token in
one point upsert, and only then deletes the document's points of other writes. Searches,
counts and the inventory see only points whose token is live, so a failure at any step
leaves exactly one complete revision visible (invariants 6 and 7); leftovers of a dead
write are deleted by the next write of the document.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from qdrant_client import QdrantClient
from qdrant_client import models as qm

from headwater.errors import ConfigError
from headwater.sinks.base import (
    InventoryRow,
    SearchRequest,
    SinkCapabilities,
    SinkContext,
    WriteOutcome,
)
from headwater.sinks.checks import check_unique_chunks
from headwater.sinks.qdrant._client import guard, open_client
from headwater.sinks.qdrant._options import (
    BINDING_ID,
    QdrantOptions,
    chunk_point,
    facet_value,
    hit_of,
    of_document,
    of_write,
    record_point,
    revision_point_id,
)
from headwater.sinks.qdrant._search import live_points, vector_query
from headwater.types import Access, EmbeddedChunk, IndexDocument, SearchHit

# 3: each point's payload holds ``scopes``, the document's scope tokens (--under).
SCHEMA_VERSION = "3"
UPSERT_BATCH = 256
INVENTORY_PAGE = 1024  # records per inventory page; one facet counts their points
OVERFETCH = 4


class QdrantSink:
    """Vector search in Qdrant with a per-document revision and tombstone record."""

    type_name: ClassVar[str] = "qdrant"
    schema_version: ClassVar[str] = SCHEMA_VERSION
    capabilities: ClassVar[SinkCapabilities] = SinkCapabilities(vector=True, keyword=False)
    Options: ClassVar[type[QdrantOptions]] = QdrantOptions

    def __init__(self, options: QdrantOptions, context: SinkContext) -> None:
        self.options = options
        self.context = context
        base = options.collection or f"headwater_{context.name}"
        gen = context.generation
        self.collection = base if gen == 1 else f"{base}__g{gen}"
        self.revisions = f"{self.collection}_revisions"
        path = None
        if options.url is None and options.location is None:
            # Local mode locks its folder per client: each generation gets a folder of its own.
            path = options.path or context.state_dir / f"qdrant-{context.name}"
            if gen != 1:
                path = path.with_name(f"{path.name}@{gen}")
        self._path = path
        self._indexed = options.url is not None  # a server: payload indexes, filters are cheap
        self.where = options.url or options.location or str(path)
        self._client: QdrantClient = open_client(options, path, self.where)
        self._closed = False
        try:
            self._ensure_collections()
        except BaseException:
            self.close()
            raise

    def _ensure_collections(self) -> None:
        with guard(self.where):
            if self._client.collection_exists(self.collection):
                self._check_dimension()
            else:
                self._client.create_collection(
                    self.collection,
                    vectors_config=qm.VectorParams(
                        size=self.context.dimension, distance=qm.Distance.COSINE
                    ),
                )
                if self._indexed:  # payload indexes only matter on a server
                    for key in ("document_id", "principals", "source", "scopes", "write"):
                        self._client.create_payload_index(
                            self.collection, key, qm.PayloadSchemaType.KEYWORD
                        )
            if not self._client.collection_exists(self.revisions):
                self._client.create_collection(self.revisions, vectors_config={})

    def _check_dimension(self) -> None:
        vectors = self._client.get_collection(self.collection).config.params.vectors
        size = vectors.size if isinstance(vectors, qm.VectorParams) else None
        if size != self.context.dimension:
            raise ConfigError(
                f"the qdrant collection {self.collection!r} at {self.where} holds "
                f"{size}-dimensional vectors; the embedder makes {self.context.dimension}; "
                "rebuild it with `headwater rebuild` or set another `collection`"
            )

    # ---- writes -------------------------------------------------------------------

    def replace(
        self, document: IndexDocument, chunks: Sequence[EmbeddedChunk], revision: int
    ) -> WriteOutcome:
        """Make the document's chunks exactly ``chunks`` at ``revision``, atomically."""
        check_unique_chunks(document.document_id, chunks)
        principals = document.access.principals()
        write = uuid.uuid4().hex
        points = [
            chunk_point(
                document, item, principals, revision, write, self.context.dimension, self.collection
            )
            for item in chunks
        ]
        doc_id = document.document_id
        with guard(self.where):
            payload = self._held_payload(doc_id)
            if payload is not None:
                held, deleted = int(payload["revision"]), bool(payload["deleted"])
                if held > revision or (deleted and held >= revision):
                    return WriteOutcome.STALE
            live, live_revision = None, None
            if payload is not None and not payload["deleted"]:
                live, live_revision = payload.get("live"), payload.get("live_revision")
            self._record(doc_id, revision, False, document.source, principals, live, live_revision)
            for start in range(0, len(points), UPSERT_BATCH):
                batch = points[start : start + UPSERT_BATCH]
                self._client.upsert(self.collection, points=batch, wait=True)
            self._record(doc_id, revision, False, document.source, principals, write, revision)
            others = qm.Filter(must=[of_document(doc_id)], must_not=[of_write(write)])
            self._client.delete(
                self.collection, points_selector=qm.FilterSelector(filter=others), wait=True
            )
        return WriteOutcome.APPLIED

    def delete(self, document_id: str, revision: int) -> WriteOutcome:
        """Remove every chunk of the document and remember ``revision`` as its tombstone."""
        with guard(self.where):
            held = self._held(document_id)
            if held is not None and held[0] > revision:
                return WriteOutcome.STALE
            self._record(document_id, revision, True, None, [], None, None)
            everything = qm.Filter(must=[of_document(document_id)])
            self._client.delete(
                self.collection, points_selector=qm.FilterSelector(filter=everything), wait=True
            )
        return WriteOutcome.APPLIED

    def update_access(self, document_id: str, access: Access, revision: int) -> WriteOutcome:
        """Set ``principals`` on the document's points; vectors are not touched.

        STALE against a newer revision or a tombstone at this revision or newer; ABSENT
        when the index holds no live chunks of the document (the core then replaces it).
        """
        principals = access.principals()
        with guard(self.where):
            payload = self._held_payload(document_id)
            if payload is None:
                return WriteOutcome.ABSENT
            held, deleted = int(payload["revision"]), bool(payload["deleted"])
            if held > revision or (deleted and held >= revision):
                return WriteOutcome.STALE
            live = payload.get("live")
            if deleted or live is None:
                return WriteOutcome.ABSENT
            source = payload.get("source")
            self._record(document_id, revision, False, source, principals, live, revision)
            self._client.set_payload(
                self.collection,
                payload={"principals": principals, "revision": revision},
                points=qm.FilterSelector(filter=qm.Filter(must=[of_document(document_id)])),
                wait=True,
            )
        return WriteOutcome.APPLIED

    def forget_tombstones(self, document_ids: Sequence[str]) -> None:
        """Drop the tombstone records of these documents; live documents are untouched."""
        with guard(self.where):
            for document_id in document_ids:
                held = self._held(document_id)
                if held is not None and held[1]:
                    self._client.delete(
                        self.revisions,
                        points_selector=qm.PointIdsList(points=[revision_point_id(document_id)]),
                        wait=True,
                    )

    def bound_manifest(self) -> str | None:
        """The id of the manifest this collection is bound to, or None."""
        with guard(self.where):
            found = self._client.retrieve(self.revisions, ids=[BINDING_ID], with_payload=True)
        bound = found[0].payload.get("manifest_id") if found and found[0].payload else None
        return None if bound is None else str(bound)

    def bind(self, manifest_id: str, *, empty: bool = False) -> None:
        """Bind the index to ``manifest_id`` (``empty``: both collections are recreated)."""
        with guard(self.where):
            if empty:
                self._client.delete_collection(self.collection)
                self._client.delete_collection(self.revisions)
                self._ensure_collections()
            point = qm.PointStruct(id=BINDING_ID, vector={}, payload={"manifest_id": manifest_id})
            self._client.upsert(self.revisions, points=[point], wait=True)

    # ---- reads --------------------------------------------------------------------

    def count(self, document_id: str) -> int:
        """The document's chunks of its live write (leftovers of a dead write never count)."""
        with guard(self.where):
            payload = self._held_payload(document_id)
            live = None if payload is None else payload.get("live")
            return 0 if live is None else self._count_live(document_id, str(live))

    def revision(self, document_id: str) -> int | None:
        """The document's live revision, or None when it is deleted or absent."""
        with guard(self.where):
            payload = self._held_payload(document_id)
        if payload is None or payload["deleted"] or payload.get("live") is None:
            return None
        return int(payload["live_revision"])

    def inventory(self) -> Iterator[InventoryRow]:
        """Live documents in document_id order, with their live chunks: a page of records
        and one facet count of their live points per page, so the calls grow with the
        pages, not the documents (a count per document is a full scan in local mode)."""
        live = qm.Filter(must=[qm.FieldCondition(key="deleted", match=qm.MatchValue(value=False))])
        offset: qm.ExtendedPointId | None = None
        while True:
            with guard(self.where):
                records, offset = self._client.scroll(
                    self.revisions, scroll_filter=live, limit=INVENTORY_PAGE, offset=offset
                )
                # a first write that never completed has no live token: nothing is visible
                page = [r.payload for r in records if r.payload and r.payload.get("live")]
                chunks = self._live_chunks({str(p["document_id"]): str(p["live"]) for p in page})
            for payload in page:
                document_id = str(payload["document_id"])
                yield InventoryRow(
                    document_id=document_id,
                    revision=int(payload["live_revision"]),
                    chunks=chunks.get(document_id, 0),
                )
            if offset is None:
                return

    def search(self, request: SearchRequest) -> list[SearchHit]:
        """The visible hits of ``request`` by vector (keyword mode is refused)."""
        query = vector_query(request)
        if query is None:
            return []
        vector, query_filter = query
        limit = request.k * OVERFETCH
        while True:
            with guard(self.where):
                found = self._client.query_points(
                    self.collection,
                    query=vector,
                    query_filter=query_filter,
                    limit=limit,
                    with_payload=True,
                )
                visible = self._live_only(found.points)
            if len(visible) >= request.k or len(found.points) < limit:
                return [hit_of(point) for point in visible[: request.k]]
            limit *= OVERFETCH

    def chunk_texts(self, document_id: str) -> list[str]:
        """The texts of the document's live chunks, in order."""
        with guard(self.where):
            payload = self._held_payload(document_id)
            live = None if payload is None else payload.get("live")
            if live is None:
                return []
            points, _ = self._client.scroll(
                self.collection,
                scroll_filter=qm.Filter(must=[of_document(document_id), of_write(str(live))]),
                limit=100_000,
                with_payload=True,
            )
        ordered = sorted(points, key=lambda p: int((p.payload or {})["ordinal"]))
        return [str((p.payload or {})["text"]) for p in ordered]

    def drop(self) -> None:
        """Delete this generation's collections (and, in local mode, its folder)."""
        with guard(self.where):
            for name in (self.collection, self.revisions):
                if self._client.collection_exists(name):
                    self._client.delete_collection(name)
        self.close()
        if self._path is not None and self.context.generation != 1:
            shutil.rmtree(self._path, ignore_errors=True)

    def close(self) -> None:
        """Close the Qdrant client (once)."""
        if not self._closed:
            self._closed = True
            self._client.close()

    # ---- helpers ------------------------------------------------------------------

    def _count_live(self, document_id: str, live: str) -> int:
        found = self._client.count(
            self.collection,
            count_filter=qm.Filter(must=[of_document(document_id), of_write(live)]),
            exact=True,
        )
        return found.count

    def _live_chunks(self, live: dict[str, str]) -> dict[str, int]:
        """The live points of these documents (document_id -> its live write token),
        counted by one exact facet over ``write``. A server filters on the tokens through
        its payload index. Local mode has no index and tests a list filter against every
        point (points x tokens), so there the facet counts every write in one pass."""
        if not live:
            return {}
        if not self._indexed:
            every = self._client.count(self.collection, exact=True).count
            found = self._client.facet(
                self.collection, key="write", limit=max(1, every), exact=True
            )
        else:
            tokens = qm.MatchAny(any=list(live.values()))
            found = self._client.facet(
                self.collection,
                key="write",
                facet_filter=qm.Filter(must=[qm.FieldCondition(key="write", match=tokens)]),
                limit=len(live),
                exact=True,
            )
        # local mode reports a UUID-like value (a write token is one) in canonical form
        by_write = {facet_value(str(hit.value)): hit.count for hit in found.hits}
        return {doc: by_write.get(facet_value(token), 0) for doc, token in live.items()}

    def _live_only(self, points: Sequence[qm.ScoredPoint]) -> list[qm.ScoredPoint]:
        """The points of each document's live write; leftovers of other writes are hidden."""
        doc_ids = list({str((p.payload or {})["document_id"]) for p in points})
        records = self._client.retrieve(
            self.revisions, ids=[revision_point_id(d) for d in doc_ids], with_payload=True
        )
        live = {str(r.payload["document_id"]): r.payload.get("live") for r in records if r.payload}
        return live_points(points, live)

    def _held_payload(self, document_id: str) -> dict[str, Any] | None:
        found = self._client.retrieve(
            self.revisions, ids=[revision_point_id(document_id)], with_payload=True
        )
        return dict(found[0].payload) if found and found[0].payload else None

    def _held(self, document_id: str) -> tuple[int, bool] | None:
        payload = self._held_payload(document_id)
        if payload is None:
            return None
        return int(payload["revision"]), bool(payload["deleted"])

    def _record(
        self,
        document_id: str,
        revision: int,
        deleted: bool,
        source: str | None,
        principals: Sequence[str],
        live: str | None,
        live_revision: int | None,
    ) -> None:
        """Write the document's record: ``revision`` is the highest claimed, ``live`` the
        write searches see (None: none) and ``live_revision`` that write's revision."""
        point = record_point(
            document_id, revision, deleted, source, principals, live, live_revision
        )
        self._client.upsert(self.revisions, points=[point], wait=True)
