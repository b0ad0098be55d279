"""The embedded index: vectors, keywords and ACLs in one SQLite file.

Every document call (replace, delete, update_access) is one ``BEGIN IMMEDIATE``
transaction that writes the chunk rows, FTS rows (which carry the ACL), vectors and the document's
revision/tombstone row together, so a document is always wholly at one revision or
absent (invariants 5–7), and a crash mid-write leaves the old version searchable.

A replace keeps the rowid of every chunk whose ``chunk_id`` survives (its vector is
updated in place), inserts the new chunks with ``executemany``, deletes only the chunks not
in the new set and rewrites the document's row of 1-bit codes (``_ann``). How searches
filter by ACL without starving, and when they are approximate, is explained in ``_search``.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

from headwater.clock import iso, utcnow
from headwater.errors import ConfigError, FatalError
from headwater.scopes import scope_tokens
from headwater.sinks.base import (
    InventoryRow,
    SearchRequest,
    SinkCapabilities,
    SinkContext,
    WriteOutcome,
)
from headwater.sinks.checks import check_unique_chunks
from headwater.sinks.sqlite._caches import SearchCaches
from headwater.sinks.sqlite._driver import Database, connect
from headwater.sinks.sqlite._keyword import keyword_search
from headwater.sinks.sqlite._options import SqliteOptions, generation_path
from headwater.sinks.sqlite._rows import plan_rows, write_rows
from headwater.sinks.sqlite._schema import (
    SCHEMA_VERSION,
    acl_text,
    ensure_schema,
    src_text,
)
from headwater.sinks.sqlite._search import vector_search
from headwater.types import Access, EmbeddedChunk, IndexDocument, SearchHit, SearchMode

INVENTORY_PAGE = 1000


def _consistent_count(chunks: int, vectors: int, codes: int) -> int:
    """``chunks`` when vectors and codes agree with it, else a count that differs from it."""
    if chunks == vectors == codes:
        return chunks
    low = min(vectors, codes)
    return low if low < chunks else max(vectors, codes)


class SqliteSink:
    """Vector (sqlite-vec) and keyword (FTS5) search in one embedded SQLite file."""

    type_name: ClassVar[str] = "sqlite"
    schema_version: ClassVar[str] = SCHEMA_VERSION
    capabilities: ClassVar[SinkCapabilities] = SinkCapabilities(vector=True, keyword=True)
    Options: ClassVar[type[SqliteOptions]] = SqliteOptions

    def __init__(self, options: SqliteOptions, context: SinkContext) -> None:
        self.options = options
        self.context = context
        self.path = generation_path(
            options.path or context.state_dir / f"index-{context.name}.db", context.generation
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db: Database = connect(self.path, options.driver)
        try:
            ensure_schema(self._db, context.dimension, str(self.path))
        except BaseException:
            self._db.close()
            raise
        self._caches = SearchCaches(options, context.dimension)

    @property
    def driver(self) -> str:
        """The SQLite binding in use (``apsw`` or ``pysqlite3``)."""
        return self._db.driver

    # ---- writes -------------------------------------------------------------------

    def replace(
        self, document: IndexDocument, chunks: Sequence[EmbeddedChunk], revision: int
    ) -> WriteOutcome:
        """Make the document's chunks exactly ``chunks`` at ``revision``, atomically."""
        blobs = [self._vector_blob(item, document.document_id) for item in chunks]
        check_unique_chunks(document.document_id, chunks)
        principals = document.access.principals()
        scopes = scope_tokens(document.source, document.metadata)
        acl, src = acl_text(principals), src_text(document.source, scopes)
        with self._db.transaction() as db:
            held = self._held(document.document_id)
            if held is not None and (held[0] > revision or (held[1] and held[0] >= revision)):
                return WriteOutcome.STALE
            old: dict[str, int] = dict(
                db.execute(
                    "SELECT chunk_id, id FROM chunks WHERE document_id = ?",
                    [document.document_id],
                )
            )
            self._drop_fts(document.document_id)
            wanted = {item.chunk.chunk_id for item in chunks}
            gone = [(rowid,) for chunk_id, rowid in old.items() if chunk_id not in wanted]
            db.executemany("DELETE FROM vectors WHERE id = ?", gone)
            db.executemany("DELETE FROM chunks WHERE id = ?", gone)
            plan = plan_rows(document, chunks, blobs, old, self._next_chunk_id(), acl, src)
            write_rows(db, plan)
            from headwater.sinks.sqlite._ann import write_codes

            dim = self.context.dimension
            write_codes(db, document.document_id, plan.ids, b"".join(blobs), dim)
            self._add_fts(document.document_id)
            self._add_chunk_count(len(chunks) - len(old))
            self._write_document(document.document_id, revision, False, document.source, principals)
        return WriteOutcome.APPLIED

    def delete(self, document_id: str, revision: int) -> WriteOutcome:
        """Remove every chunk of the document and remember ``revision`` as its tombstone."""
        with self._db.transaction() as db:
            held = self._held(document_id)
            if held is not None and held[0] > revision:
                return WriteOutcome.STALE
            rowids = db.execute("SELECT id FROM chunks WHERE document_id = ?", [document_id])
            self._drop_fts(document_id)
            db.executemany("DELETE FROM vectors WHERE id = ?", rowids)
            db.execute("DELETE FROM chunks WHERE document_id = ?", [document_id])
            db.execute("DELETE FROM ann_codes WHERE document_id = ?", [document_id])
            self._add_chunk_count(-len(rowids))
            self._write_document(document_id, revision, True, None, [])
        return WriteOutcome.APPLIED

    def update_access(self, document_id: str, access: Access, revision: int) -> WriteOutcome:
        """Rewrite the ACL of the document's chunks; vectors and text stay as they are.

        A document the index does not hold live has no chunks to re-permission: the call
        is STALE when a tombstone at this revision or newer exists, otherwise ABSENT.
        """
        principals = access.principals()
        with self._db.transaction() as db:
            held = self._held(document_id)
            if held is None:
                return WriteOutcome.ABSENT
            if held[0] > revision or (held[1] and held[0] >= revision):
                return WriteOutcome.STALE
            if held[1]:
                return WriteOutcome.ABSENT
            self._drop_fts(document_id)
            db.execute(
                "UPDATE chunks SET acl = ? WHERE document_id = ?",
                [acl_text(principals), document_id],
            )
            self._add_fts(document_id)
            self._write_document(document_id, revision, False, None, principals)
        return WriteOutcome.APPLIED

    def forget_tombstones(self, document_ids: Sequence[str]) -> None:
        """Drop the tombstone rows of these documents; live documents are untouched."""
        with self._db.transaction() as db:
            db.executemany(
                "DELETE FROM documents WHERE document_id = ? AND deleted = 1",
                [(d,) for d in document_ids],
            )

    def bound_manifest(self) -> str | None:
        """The id of the manifest this file is bound to, or None."""
        rows = self._db.execute("SELECT value FROM meta WHERE key = 'manifest_id'")
        return str(rows[0][0]) if rows else None

    def bind(self, manifest_id: str, *, empty: bool = False) -> None:
        """Bind the index to ``manifest_id`` (``empty``: everything it holds goes first)."""
        with self._db.transaction() as db:
            if empty:
                db.execute("INSERT INTO fts (fts) VALUES ('delete-all')")
                for table in ("vectors", "ann_codes", "chunks", "documents"):
                    db.execute(f"DELETE FROM {table}")
                db.execute("UPDATE meta SET value = '0' WHERE key = 'chunk_count'")
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('manifest_id', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [manifest_id],
            )
        if empty:
            self._code_cache = self._copies = None

    # ---- reads --------------------------------------------------------------------

    def count(self, document_id: str) -> int:
        """How many chunks of ``document_id`` the file holds."""
        rows = self._db.execute("SELECT count(*) FROM chunks WHERE document_id = ?", [document_id])
        return int(rows[0][0])

    def revision(self, document_id: str) -> int | None:
        """The document's live revision, or None when it is deleted or absent."""
        rows = self._db.execute(
            "SELECT revision FROM documents WHERE document_id = ? AND deleted = 0", [document_id]
        )
        return int(rows[0][0]) if rows else None

    def inventory(self) -> Iterator[InventoryRow]:
        """Live documents in document_id order, read a page at a time (bounded memory).

        ``chunks`` counts chunk rows only while every one has a vector and the document's
        code row lists exactly that many ids; otherwise it reports a count that differs
        from the chunk rows, so reconcile sees the drift and re-applies the document.
        """
        after = ""
        while True:
            page = self._db.execute(
                "SELECT d.document_id, d.revision, "
                "(SELECT count(*) FROM chunks c WHERE c.document_id = d.document_id), "
                "(SELECT count(*) FROM chunks c JOIN vectors v ON v.id = c.id "
                " WHERE c.document_id = d.document_id), "
                "(SELECT length(a.ids) / 8 FROM ann_codes a WHERE a.document_id = d.document_id) "
                "FROM documents d WHERE d.deleted = 0 AND d.document_id > ? "
                "ORDER BY d.document_id LIMIT ?",
                [after, INVENTORY_PAGE],
            )
            for document_id, revision, chunks, vectors, codes in page:
                yield InventoryRow(
                    document_id=document_id,
                    revision=int(revision),
                    chunks=_consistent_count(int(chunks), int(vectors), int(codes or 0)),
                )
            if len(page) < INVENTORY_PAGE:
                return
            after = page[-1][0]

    def search(self, request: SearchRequest) -> list[SearchHit]:
        """The visible hits of ``request`` by vector, keyword, or both fused."""
        if request.k <= 0:
            return []
        caches = self._caches
        if request.mode is SearchMode.KEYWORD or (
            request.vector is None and request.mode is not SearchMode.VECTOR
        ):
            counts, memory = caches.term_counts, caches.memory()
            return keyword_search(self._db, request, request.k, caches.shares, counts, memory)
        if request.vector is None:
            raise ConfigError("a vector search needs the query's vector; none was given")
        if request.mode is not SearchMode.VECTOR:
            raise ConfigError(
                f"a sink answers vector or keyword searches, not {request.mode.value!r}; "
                "hybrid search is fused by headwater.search.service.run_search"
            )
        return vector_search(
            self._db,
            request,
            self._query_blob(request.vector),
            caches.codes(),
            caches.shares,
            exact_below=self.options.exact_below,
            candidates=self.options.candidates,
            wide_from=self.options.wide_from,
            copies=caches.copies(),
            memory=caches.memory(),
        )

    def chunk_texts(self, document_id: str) -> list[str]:
        """The texts of the document's chunks, in order."""
        rows = self._db.execute(
            "SELECT text FROM chunks WHERE document_id = ? ORDER BY ordinal", [document_id]
        )
        return [str(r[0]) for r in rows]

    def drop(self) -> None:
        """Close and delete the generation's file (and its WAL and shared-memory files)."""
        self.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def close(self) -> None:
        """Close the database file."""
        self._db.close()

    # ---- helpers ------------------------------------------------------------------

    def _held(self, document_id: str) -> tuple[int, bool] | None:
        rows = self._db.execute(
            "SELECT revision, deleted FROM documents WHERE document_id = ?", [document_id]
        )
        return (int(rows[0][0]), bool(rows[0][1])) if rows else None

    def _next_chunk_id(self) -> int:
        rows = self._db.execute(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0), "
            "coalesce((SELECT max(id) FROM chunks), 0))"
        )
        return int(rows[0][0]) + 1

    def _drop_fts(self, document_id: str) -> None:
        """Remove the document's FTS rows, feeding FTS5 the values it indexed."""
        self._db.execute(
            "INSERT INTO fts (fts, rowid, text, title, acl, src) "
            "SELECT 'delete', id, text, title, acl, src FROM chunks WHERE document_id = ?",
            [document_id],
        )

    def _add_fts(self, document_id: str) -> None:
        self._db.execute(
            "INSERT INTO fts (rowid, text, title, acl, src) "
            "SELECT id, text, title, acl, src FROM chunks WHERE document_id = ?",
            [document_id],
        )

    def _add_chunk_count(self, delta: int) -> None:
        if delta:
            self._db.execute(
                "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'chunk_count'",
                [delta],
            )

    def _write_document(
        self,
        document_id: str,
        revision: int,
        deleted: bool,
        source: str | None,
        principals: Sequence[str],
    ) -> None:
        self._db.execute(
            "INSERT INTO documents "
            "(document_id, revision, deleted, source, principals, changed_at) "
            "VALUES (?, ?, ?, coalesce(?, ''), ?, ?) "
            "ON CONFLICT (document_id) DO UPDATE SET revision = excluded.revision, "
            "deleted = excluded.deleted, source = coalesce(?, documents.source), "
            "principals = excluded.principals, changed_at = excluded.changed_at",
            [
                document_id,
                revision,
                int(deleted),
                source,
                json.dumps(list(principals)),
                iso(utcnow()),
                source,
            ],
        )

    def _vector_blob(self, item: EmbeddedChunk, document_id: str) -> bytes:
        if item.vector is None:
            raise FatalError(
                f"chunk {item.chunk.chunk_id} of document {document_id} has no vector; "
                "the sqlite index needs one per chunk; embed chunks before writing them"
            )
        return self._blob(item.vector, f"chunk {item.chunk.chunk_id}")

    def _query_blob(self, vector: Sequence[float]) -> bytes:
        return self._blob(vector, "the query vector")

    def _blob(self, vector: Sequence[float], what: str) -> bytes:
        if len(vector) != self.context.dimension:
            raise FatalError(
                f"{what} has {len(vector)} dimensions; the sqlite index {self.path} holds "
                f"{self.context.dimension}; use the same embedding model or rebuild the index"
            )
        return array("f", vector).tobytes()
