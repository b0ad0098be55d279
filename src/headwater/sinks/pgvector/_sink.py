"""The pgvector index: chunks, vectors, keywords and ACLs in PostgreSQL tables.

PostgreSQL gives what the other engines have to build: every document call (replace,
delete, update_access) is one transaction, serialized per document by an advisory lock,
that checks the document's row in ``…_documents`` (revision and tombstone, invariant 5),
deletes the document's chunk rows, inserts the new ones and writes the revision row.
A failure anywhere rolls all of it back, and MVCC shows searches the old rows until the
commit: a document is always wholly at one revision or absent (invariants 6 and 7).
How searches filter by ACL without starving is explained in ``_search``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import psycopg
from psycopg import sql

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
from headwater.sinks.pgvector import _counts as counts
from headwater.sinks.pgvector._db import (
    SCHEMA_VERSION,
    ensure_tables,
    open_engine,
    supports_iterative_scan,
    transaction,
    vector_literal,
)
from headwater.sinks.pgvector._options import PgvectorOptions, tables_for
from headwater.sinks.pgvector._search import keyword_search, vector_search
from headwater.types import Access, EmbeddedChunk, IndexDocument, SearchHit, SearchMode

INVENTORY_PAGE = 1000


class PgvectorSink:
    """Vector (HNSW) and keyword (tsvector) search in PostgreSQL with pgvector."""

    type_name: ClassVar[str] = "pgvector"
    schema_version: ClassVar[str] = SCHEMA_VERSION
    capabilities: ClassVar[SinkCapabilities] = SinkCapabilities(vector=True, keyword=True)
    Options: ClassVar[type[PgvectorOptions]] = PgvectorOptions

    def __init__(self, options: PgvectorOptions, context: SinkContext) -> None:
        self.options = options
        self.context = context
        if options.dimension is not None and options.dimension != context.dimension:
            raise ConfigError(
                f"the pgvector index {context.name!r} sets dimension = {options.dimension}; "
                f"the embedder makes {context.dimension}-dimensional vectors; remove "
                "`dimension` or set it to the embedder's"
            )
        if context.dimension > 2000:
            raise ConfigError(
                f"pgvector's HNSW index holds at most 2000 dimensions; the embedder makes "
                f"{context.dimension}; use a smaller embedding model or another index type"
            )
        self.tables = tables_for(options, context)
        self.where = options.where()
        self._engine = open_engine(options)
        self._closed = False
        try:
            with self._tx() as cur:
                version = ensure_tables(cur, self.tables, options, context.dimension, self.where)
        except BaseException:
            self.close()
            raise
        self.extension_version = version
        self.iterative_scan = supports_iterative_scan(version)
        self._chunks = sql.Identifier(self.tables.schema, self.tables.chunks)
        self._documents = sql.Identifier(self.tables.schema, self.tables.documents)
        self._meta = sql.Identifier(self.tables.schema, self.tables.meta)
        self._principals = sql.Identifier(self.tables.schema, self.tables.principals)

    def _tx(self) -> Any:
        return transaction(self._engine, self.where)

    # ---- writes -------------------------------------------------------------------

    def replace(
        self, document: IndexDocument, chunks: Sequence[EmbeddedChunk], revision: int
    ) -> WriteOutcome:
        check_unique_chunks(document.document_id, chunks)
        doc_id = document.document_id
        principals = document.access.principals()
        scopes = scope_tokens(document.source, document.metadata)
        rows = [
            (
                item.chunk.chunk_id,
                doc_id,
                item.chunk.ordinal,
                revision,
                document.source,
                document.title,
                document.locator,
                item.chunk.text,
                principals,
                scopes,
                self._vector(item, doc_id),
            )
            for item in chunks
        ]
        with self._tx() as cur:
            held = self._lock_and_read(cur, doc_id)
            if held is not None and (held[0] > revision or (held[1] and held[0] >= revision)):
                return WriteOutcome.STALE
            old = counts.held(cur, self.tables, doc_id)
            cur.execute(
                sql.SQL("DELETE FROM {} WHERE document_id = %s").format(self._chunks), [doc_id]
            )
            self._insert_chunks(cur, rows)
            self._write_document(cur, doc_id, revision, False, document.source, principals)
            counts.apply(cur, self.tables, old, [(principals, len(rows))])
        return WriteOutcome.APPLIED

    def _insert_chunks(self, cur: psycopg.Cursor[Any], rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert chunk rows (pipelined ``executemany``), inside the caller's transaction."""
        cur.executemany(
            sql.SQL(
                "INSERT INTO {} (chunk_id, document_id, ordinal, revision, source, title, "
                "locator, text, principals, scopes, embedding) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::text[], %s::text[], %s::vector)"
            ).format(self._chunks),
            rows,
        )

    def delete(self, document_id: str, revision: int) -> WriteOutcome:
        with self._tx() as cur:
            held = self._lock_and_read(cur, document_id)
            if held is not None and held[0] > revision:
                return WriteOutcome.STALE
            old = counts.held(cur, self.tables, document_id)
            cur.execute(
                sql.SQL("DELETE FROM {} WHERE document_id = %s").format(self._chunks),
                [document_id],
            )
            self._write_document(cur, document_id, revision, True, None, [])
            counts.apply(cur, self.tables, old, [])
        return WriteOutcome.APPLIED

    def update_access(self, document_id: str, access: Access, revision: int) -> WriteOutcome:
        """Rewrite the document's ``principals``; vectors and text stay as they are.

        STALE against a newer revision or a tombstone at this revision or newer; ABSENT
        when the index holds no live chunks of the document (the core then replaces it).
        """
        principals = access.principals()
        with self._tx() as cur:
            held = self._lock_and_read(cur, document_id)
            if held is None:
                return WriteOutcome.ABSENT
            if held[0] > revision or (held[1] and held[0] >= revision):
                return WriteOutcome.STALE
            if held[1]:
                return WriteOutcome.ABSENT
            old = counts.held(cur, self.tables, document_id)
            cur.execute(
                sql.SQL(
                    "UPDATE {} SET principals = %s::text[], revision = %s WHERE document_id = %s"
                ).format(self._chunks),
                [principals, revision, document_id],
            )
            self._write_document(cur, document_id, revision, False, None, principals)
            counts.apply(cur, self.tables, old, [(principals, sum(n for _, n in old))])
        return WriteOutcome.APPLIED

    def forget_tombstones(self, document_ids: Sequence[str]) -> None:
        """Drop the tombstone rows of these documents; live documents are untouched."""
        with self._tx() as cur:
            cur.execute(
                sql.SQL("DELETE FROM {} WHERE document_id = ANY(%s::text[]) AND deleted").format(
                    self._documents
                ),
                [list(document_ids)],
            )

    def bound_manifest(self) -> str | None:
        with self._tx() as cur:
            row = cur.execute(
                sql.SQL("SELECT value FROM {} WHERE key = 'manifest_id'").format(self._meta)
            ).fetchone()
        return None if row is None else str(row[0])

    def bind(self, manifest_id: str, *, empty: bool = False) -> None:
        """Bind the index to ``manifest_id`` (``empty``: chunks and revisions go first)."""
        with self._tx() as cur:
            if empty:
                cur.execute(
                    sql.SQL("TRUNCATE {}, {}, {}").format(
                        self._chunks, self._documents, self._principals
                    )
                )
            cur.execute(
                sql.SQL(
                    "INSERT INTO {} (key, value) VALUES ('manifest_id', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                ).format(self._meta),
                [manifest_id],
            )

    # ---- reads --------------------------------------------------------------------

    def count(self, document_id: str) -> int:
        with self._tx() as cur:
            row = cur.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE document_id = %s").format(self._chunks),
                [document_id],
            ).fetchone()
        return 0 if row is None else int(row[0])

    def revision(self, document_id: str) -> int | None:
        with self._tx() as cur:
            row = cur.execute(
                sql.SQL("SELECT revision FROM {} WHERE document_id = %s AND NOT deleted").format(
                    self._documents
                ),
                [document_id],
            ).fetchone()
        return None if row is None else int(row[0])

    def inventory(self) -> Iterator[InventoryRow]:
        """Live documents in document_id order (``COLLATE "C"``: code point order, as
        Python sorts), a page at a time (bounded memory)."""
        after = ""
        while True:
            with self._tx() as cur:
                page = cur.execute(
                    sql.SQL(
                        "SELECT d.document_id, d.revision, "
                        "(SELECT count(*) FROM {} c WHERE c.document_id = d.document_id) "
                        "FROM {} d WHERE NOT d.deleted AND d.document_id > %s "
                        "ORDER BY d.document_id LIMIT %s"
                    ).format(self._chunks, self._documents),
                    [after, INVENTORY_PAGE],
                ).fetchall()
            for document_id, revision, chunks in page:
                yield InventoryRow(
                    document_id=str(document_id), revision=int(revision), chunks=int(chunks)
                )
            if len(page) < INVENTORY_PAGE:
                return
            after = str(page[-1][0])

    def search(self, request: SearchRequest) -> list[SearchHit]:
        if request.k <= 0 or not request.principals:
            return []
        if (request.sources is not None and not request.sources) or (
            request.scopes is not None and not request.scopes
        ):
            return []
        if request.mode is SearchMode.KEYWORD or (
            request.vector is None and request.mode is not SearchMode.VECTOR
        ):
            with self._tx() as cur:
                return keyword_search(cur, self.tables, request, self.options.text_search_config)
        if request.vector is None:
            raise ConfigError("a vector search needs the query's vector; none was given")
        if request.mode is not SearchMode.VECTOR:
            raise ConfigError(
                f"a sink answers vector or keyword searches, not {request.mode.value!r}; "
                "hybrid search is fused by headwater.search.service.run_search"
            )
        self._check_dimension(len(request.vector), "the query vector")
        with self._tx() as cur:
            return vector_search(
                cur,
                self.tables,
                request,
                request.vector,
                ef_search=self.options.ef_search,
                iterative=self.iterative_scan,
                max_scan_tuples=self.options.max_scan_tuples,
                exact_below=self.options.exact_below,
            )

    def chunk_texts(self, document_id: str) -> list[str]:
        with self._tx() as cur:
            rows = cur.execute(
                sql.SQL("SELECT text FROM {} WHERE document_id = %s ORDER BY ordinal").format(
                    self._chunks
                ),
                [document_id],
            ).fetchall()
        return [str(r[0]) for r in rows]

    def drop(self) -> None:
        """Drop this generation's four tables (their indexes go with them) and close."""
        with self._tx() as cur:
            cur.execute(
                sql.SQL("DROP TABLE IF EXISTS {}, {}, {}, {}").format(
                    self._chunks, self._documents, self._meta, self._principals
                )
            )
        self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._engine.dispose()

    # ---- helpers ------------------------------------------------------------------

    def _lock_and_read(self, cur: psycopg.Cursor[Any], document_id: str) -> tuple[int, bool] | None:
        """Serialize writers of this document (until commit); its revision and tombstone."""
        cur.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            [f"{self.tables.schema}.{self.tables.chunks}:{document_id}"],
        )
        row = cur.execute(
            sql.SQL("SELECT revision, deleted FROM {} WHERE document_id = %s").format(
                self._documents
            ),
            [document_id],
        ).fetchone()
        return None if row is None else (int(row[0]), bool(row[1]))

    def _write_document(
        self,
        cur: psycopg.Cursor[Any],
        document_id: str,
        revision: int,
        deleted: bool,
        source: str | None,
        principals: Sequence[str],
    ) -> None:
        cur.execute(
            sql.SQL(
                "INSERT INTO {} AS d (document_id, revision, deleted, source, principals, "
                "changed_at) VALUES (%s, %s, %s, %s, %s::text[], now()) "
                "ON CONFLICT (document_id) DO UPDATE SET revision = excluded.revision, "
                "deleted = excluded.deleted, source = coalesce(excluded.source, d.source), "
                "principals = excluded.principals, changed_at = excluded.changed_at"
            ).format(self._documents),
            [document_id, revision, deleted, source, list(principals)],
        )

    def _vector(self, item: EmbeddedChunk, document_id: str) -> str:
        if item.vector is None:
            raise FatalError(
                f"chunk {item.chunk.chunk_id} of document {document_id} has no vector; "
                "the pgvector index needs one per chunk; embed chunks before writing them"
            )
        self._check_dimension(len(item.vector), f"chunk {item.chunk.chunk_id}")
        return vector_literal(item.vector)

    def _check_dimension(self, size: int, what: str) -> None:
        if size != self.context.dimension:
            raise FatalError(
                f"{what} has {size} dimensions; the pgvector table "
                f"{self.tables.schema}.{self.tables.chunks} holds {self.context.dimension}; "
                "use the same embedding model or rebuild the index"
            )
