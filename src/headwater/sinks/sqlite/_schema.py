"""The sqlite index's tables, created once per file and checked on every open.

- ``documents``: one row per document ever seen, live or tombstoned, with the highest
  revision applied; it is what refuses stale writes. Indexed by ``source`` too: a
  search asks whether the file holds any source it did not name (created on the first
  open of an older file).
- ``chunks``: a chunk's identity and what a search hit shows; ``id`` is the rowid shared
  with ``vectors`` (float32 blobs, scored with sqlite-vec's ``vec_distance_cosine``) and
  ``fts`` (FTS5 over ``chunks`` as external content; its rows are removed with FTS5's
  ``'delete'`` command fed the chunk's stored values).
- ``ann_codes``: one row per document with its chunks' ids and 1-bit codes, the
  approximate-search prefilter (``_ann``), stamped with the ``ann_version`` it was written at.
- The ACL lives in ``fts`` too: column ``acl`` holds one opaque token per principal and
  ``src`` one token for the source followed by one per scope token of the document
  (``headwater.scopes``: its source's root and every folder on its path), so "visible
  to these principals in these sources, under this folder" is an FTS5 posting-list
  intersection, usable by keyword and vector search alike.
  Their bm25 weight is 0, so they never change a keyword score.

Two versions: ``SCHEMA_VERSION`` is what the rows *mean* (part of the index version, so a
change re-embeds into a new generation); ``FILE_VERSION`` is how they are laid out. File
version 1 kept vectors in a sqlite-vec ``vec0`` table, whose KNN reads every vector and
whose point lookups cost ~1 ms each; a version-1 file is migrated in place on open
(``_migrate``), without re-embedding.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from headwater.errors import ConfigError
from headwater.retry import retry_while_sqlite_busy
from headwater.sinks.sqlite._driver import Database
from headwater.sinks.sqlite._migrate import FILE_VERSION, MIGRATABLE, migrate, new_epoch

# 2: ``src`` also holds the document's scope tokens (folder-scoped search).
SCHEMA_VERSION = "2"
PAGE_SIZE = 8192


def _ddl(dimension: int) -> list[str]:
    return [
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE IF NOT EXISTS documents (
            document_id TEXT PRIMARY KEY,
            revision INTEGER NOT NULL,
            deleted INTEGER NOT NULL DEFAULT 0,
            source TEXT NOT NULL DEFAULT '',
            principals TEXT NOT NULL DEFAULT '[]',
            changed_at TEXT NOT NULL
        ) WITHOUT ROWID""",
        """CREATE TABLE IF NOT EXISTS chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk_id TEXT NOT NULL UNIQUE,
            document_id TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            source TEXT NOT NULL,
            title TEXT NOT NULL,
            locator TEXT NOT NULL,
            text TEXT NOT NULL,
            acl TEXT NOT NULL,
            src TEXT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS chunks_document ON chunks (document_id)",
        # which sources the index holds, for a search to leave out a filter passing all
        "CREATE INDEX IF NOT EXISTS documents_source ON documents (source)",
        "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5("
        "text, title, acl, src, content='chunks', content_rowid='id', "
        "tokenize='unicode61 remove_diacritics 2')",
        "CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)",
        """CREATE TABLE IF NOT EXISTS ann_codes (
            document_id TEXT PRIMARY KEY,
            version INTEGER NOT NULL,
            ids BLOB NOT NULL,
            bits BLOB NOT NULL
        ) WITHOUT ROWID""",
        "CREATE INDEX IF NOT EXISTS ann_codes_version ON ann_codes (version)",
        "CREATE VIRTUAL TABLE IF NOT EXISTS fts_terms USING fts5vocab(fts, 'row')",
    ]


def ensure_schema(db: Database, dimension: int, where: str) -> None:
    """Create the tables, or check that an existing file fits this schema and dimension.

    A file of an older layout (``FILE_VERSION``) is migrated in the same transaction.
    """
    if dimension <= 0:
        raise ConfigError(f"vector dimension was {dimension}; expected a positive integer")
    # 8 KiB pages hold five 384-dimension vectors (94% full) where 4 KiB pages hold two
    # (75%); SQLite applies it only to a file that has no tables yet.
    db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    retry_while_sqlite_busy(lambda: db.execute("PRAGMA journal_mode = WAL"))
    db.execute("PRAGMA synchronous = NORMAL")
    with db.transaction():
        for statement in _ddl(dimension):
            db.execute(statement)
        found: dict[str, str] = dict(db.execute("SELECT key, value FROM meta"))
        if not found:
            db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [
                    ("schema_version", FILE_VERSION),
                    ("dimension", str(dimension)),
                    ("chunk_count", "0"),
                    ("ann_version", "0"),
                    ("ann_epoch", new_epoch()),
                ],
            )
            db.execute("INSERT INTO fts (fts, rank) VALUES ('rank', 'bm25(1.0, 1.0, 0.0, 0.0)')")
            return
        if found.get("schema_version") not in (*MIGRATABLE, FILE_VERSION):
            raise ConfigError(
                f"the sqlite index {where} has schema version "
                f"{found.get('schema_version')!r}; expected {FILE_VERSION!r} (or one of "
                f"{', '.join(map(repr, MIGRATABLE))}, migrated on open); "
                "rebuild it with `headwater rebuild`"
            )
        if found.get("dimension") != str(dimension):
            raise ConfigError(
                f"the sqlite index {where} holds {found.get('dimension')}-dimensional vectors; "
                f"the embedder makes {dimension}; rebuild it with `headwater rebuild` "
                "or point the index at a new `path`"
            )
        if found.get("schema_version") != FILE_VERSION:
            migrate(db, found["schema_version"], dimension, where)


def _token(kind: str, value: str) -> str:
    """An opaque single FTS5 token (letters and digits only) standing for ``value``."""
    return kind + hashlib.sha256(value.encode("utf-8")).hexdigest()[:24]


def principal_token(principal: str) -> str:
    """The FTS5 token standing for ``principal``."""
    return _token("p", principal)


def source_token(source: str) -> str:
    """The FTS5 token standing for ``source``."""
    return _token("s", source)


def scope_token(key: str) -> str:
    """The FTS5 token standing for the scope token ``key`` (``source:folder/path``)."""
    return _token("h", key)


def src_text(source: str, scopes: Sequence[str]) -> str:
    """The ``src`` column of a chunk: the source's token, then one per scope token."""
    return " ".join([source_token(source), *(scope_token(k) for k in scopes)])


def acl_text(principals: Sequence[str]) -> str:
    """The ``acl`` column of a chunk: one token per principal; empty means nobody."""
    return " ".join(principal_token(p) for p in principals)
