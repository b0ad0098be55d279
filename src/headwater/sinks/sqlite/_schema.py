"""The sqlite index's tables, created once per file and checked on every open.

- ``documents``: one row per document ever seen, live or tombstoned, with the highest
  revision applied; it is what refuses stale writes.
- ``chunks``: a chunk's identity and what a search hit shows; ``id`` is the rowid shared
  with ``vec`` (sqlite-vec) and ``fts`` (FTS5 over ``chunks`` as external content; its
  rows are removed with FTS5's ``'delete'`` command fed the chunk's stored values).
- The ACL lives in ``fts`` too: column ``acl`` holds one opaque token per principal and
  ``src`` one token for the source, so "visible to these principals in these sources"
  is an FTS5 posting-list intersection, usable by keyword and vector search alike.
  Their bm25 weight is 0, so they never change a keyword score.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from headwater.errors import ConfigError
from headwater.sinks.sqlite._driver import Database

SCHEMA_VERSION = "1"


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
        "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5("
        "text, title, acl, src, content='chunks', content_rowid='id', "
        "tokenize='unicode61 remove_diacritics 2')",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS vec USING vec0("
        f"embedding float[{dimension}] distance_metric=cosine)",
        "CREATE VIRTUAL TABLE IF NOT EXISTS fts_terms USING fts5vocab(fts, 'row')",
    ]


def ensure_schema(db: Database, dimension: int, where: str) -> None:
    """Create the tables, or check that an existing file fits this schema and dimension."""
    if dimension <= 0:
        raise ConfigError(f"vector dimension was {dimension}; expected a positive integer")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    with db.transaction():
        for statement in _ddl(dimension):
            db.execute(statement)
        found: dict[str, str] = dict(db.execute("SELECT key, value FROM meta"))
        if not found:
            db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [
                    ("schema_version", SCHEMA_VERSION),
                    ("dimension", str(dimension)),
                    ("chunk_count", "0"),
                ],
            )
            db.execute("INSERT INTO fts (fts, rank) VALUES ('rank', 'bm25(1.0, 1.0, 0.0, 0.0)')")
            return
    if found.get("schema_version") != SCHEMA_VERSION:
        raise ConfigError(
            f"the sqlite index {where} has schema version {found.get('schema_version')!r}; "
            f"expected {SCHEMA_VERSION!r}; rebuild it with `headwater rebuild`"
        )
    if found.get("dimension") != str(dimension):
        raise ConfigError(
            f"the sqlite index {where} holds {found.get('dimension')}-dimensional vectors; "
            f"the embedder makes {dimension}; rebuild it with `headwater rebuild` "
            "or point the index at a new `path`"
        )


def _token(kind: str, value: str) -> str:
    """An opaque single FTS5 token (letters and digits only) standing for ``value``."""
    return kind + hashlib.sha256(value.encode("utf-8")).hexdigest()[:24]


def principal_token(principal: str) -> str:
    return _token("p", principal)


def source_token(source: str) -> str:
    return _token("s", source)


def acl_text(principals: Sequence[str]) -> str:
    """The ``acl`` column of a chunk: one token per principal; empty means nobody."""
    return " ".join(principal_token(p) for p in principals)
