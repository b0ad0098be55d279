"""Pooled PostgreSQL connections, one transaction per call, and a generation's tables.

SQLAlchemy's ``QueuePool`` (with ``pool_pre_ping``) hands out psycopg 3 connections;
``transaction`` runs one call's statements in one transaction and maps failures to
Headwater's error groups: an unreachable server or a dropped connection is transient,
a refused login a credential error. ``ensure_tables`` creates the extension (when
allowed), the schema, the four tables and their indexes under an advisory lock, so
workers opening the same index at once do not race.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from headwater.errors import ConfigError, CredentialError, FatalError, TransientError
from headwater.sinks.pgvector._counts import ensure_counts
from headwater.sinks.pgvector._options import PgvectorOptions, Tables

# 2: chunks carry ``scopes text[]``, their document's scope tokens (folder-scoped search);
# a table of schema 1 gets the column (empty) when it is opened.
SCHEMA_VERSION = "2"
_SEARCH_PATH = (
    "SELECT set_config('search_path', current_setting('search_path') || ', ' || "
    "coalesce((SELECT quote_ident(n.nspname) FROM pg_extension e "
    "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'), 'public'), "
    "false)"
)


def open_engine(options: PgvectorOptions) -> Engine:
    """A pooled engine; each new connection can see the ``vector`` type and operators."""
    engine = create_engine(
        options.engine_url(),
        pool_size=options.pool_size,
        max_overflow=options.pool_size,
        pool_pre_ping=True,
        # No server-side prepared statements: after a few runs PostgreSQL would switch
        # them to a generic plan, blind to the LIMIT, the ACL array and the vector, and
        # stop choosing between the HNSW walk and the exact GIN plan per query.
        connect_args={
            "connect_timeout": 10,
            "application_name": "headwater-pgvector",
            "prepare_threshold": None,
        },
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cur:
            cur.execute(_SEARCH_PATH)
        dbapi_connection.commit()

    return engine


@contextmanager
def transaction(engine: Engine, where: str) -> Iterator[psycopg.Cursor[Any]]:
    """One transaction on a pooled connection: committed on success, rolled back on error."""
    with guard(where):
        raw = engine.raw_connection()
    try:
        conn: psycopg.Connection[Any] = raw.driver_connection  # type: ignore[assignment]
        with guard(where):
            with conn.cursor() as cur:
                yield cur
            conn.commit()
    except BaseException:
        if conn.broken or conn.closed:
            raw.invalidate()  # the pool opens a fresh connection instead
        else:
            try:
                conn.rollback()
            except psycopg.Error:
                raw.invalidate()
        raise
    finally:
        raw.close()


@contextmanager
def guard(where: str) -> Iterator[None]:
    """Map psycopg failures: refused login -> CredentialError, connection -> Transient."""
    try:
        yield
    except DBAPIError as exc:
        if isinstance(exc.orig, psycopg.Error):
            raise _mapped(exc.orig, where) from exc
        raise
    except psycopg.Error as exc:
        raise _mapped(exc, where) from exc


_LOGIN_REFUSED = (
    "authentication failed",
    "no pg_hba.conf entry",
    "password authentication",
    'role "',  # role "x" does not exist
)


def _mapped(exc: psycopg.Error, where: str) -> Exception:
    state = exc.sqlstate or ""
    text = str(exc).strip()
    # a failed connect carries no SQLSTATE (libpq reports it as text)
    if state.startswith("28") or (not state and any(hint in text for hint in _LOGIN_REFUSED)):
        return CredentialError(
            f"PostgreSQL at {where} refused the login ({text}); check the user and password "
            "in the index's `url` (or PGPASSWORD)"
        )
    if state == "3D000" or (not state and "database" in text and "does not exist" in text):
        return ConfigError(
            f"PostgreSQL at {where}: {text}; create the database or fix the index's `url`"
        )
    if isinstance(exc, psycopg.OperationalError) or state.startswith(("08", "57P", "53")):
        return TransientError(f"PostgreSQL at {where} is unavailable ({text}); retry later")
    if state == "40001" or state == "40P01":  # serialization failure, deadlock
        return TransientError(f"PostgreSQL at {where}: {text}; retry")
    return FatalError(f"PostgreSQL at {where} failed: {text}")


def vector_literal(values: Any) -> str:
    """A vector in pgvector's text form, ``[0.1,0.2,…]``."""
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def ensure_tables(
    cur: psycopg.Cursor[Any], tables: Tables, options: PgvectorOptions, dimension: int, where: str
) -> str:
    """Create what is missing (same names: kept as they are); returns pgvector's version."""
    cur.execute("SELECT pg_advisory_xact_lock(hashtextextended('headwater-pgvector-ddl', 0))")
    version = _ensure_extension(cur, where)
    if _version(version) < (0, 5):
        raise ConfigError(
            f"PostgreSQL at {where} has pgvector {version}; HNSW indexes need 0.5.0 or newer "
            "(0.8.0 for iterative scans); run `ALTER EXTENSION vector UPDATE` after upgrading"
        )
    cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(tables.schema)))
    held = _held_dimension(cur, tables)
    if held is not None and held != dimension:
        raise ConfigError(
            f"the pgvector table {tables.schema}.{tables.chunks} at {where} holds "
            f"{held}-dimensional vectors; the embedder makes {dimension}; rebuild it with "
            "`headwater rebuild` or set another `table_prefix`"
        )
    statements = _table_statements(tables, options, dimension)
    if held is None:
        # Keep each vector in its row (MAIN: out of line only if the row would not fit a
        # page), not in the TOAST table, so the exact path reads one page per chunk.
        statements.append(
            sql.SQL("ALTER TABLE {} ALTER COLUMN embedding SET STORAGE MAIN").format(
                sql.Identifier(tables.schema, tables.chunks)
            )
        )
    for statement in [*statements, *_index_statements(tables, options, dimension)]:
        cur.execute(statement)
    ensure_counts(cur, tables)
    return version


def _table_statements(
    tables: Tables, options: PgvectorOptions, dimension: int
) -> list[sql.Composed]:
    """CREATE TABLE IF NOT EXISTS for the meta, documents and chunks tables."""
    chunks = sql.Identifier(tables.schema, tables.chunks)
    documents = sql.Identifier(tables.schema, tables.documents)
    meta = sql.Identifier(tables.schema, tables.meta)
    config = sql.Literal(options.text_search_config)
    return [
        sql.SQL("CREATE TABLE IF NOT EXISTS {} (key text PRIMARY KEY, value text NOT NULL)").format(
            meta
        ),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} ("
            ' document_id text COLLATE "C" PRIMARY KEY,'
            " revision bigint NOT NULL,"
            " deleted boolean NOT NULL,"
            " source text,"
            " principals text[] NOT NULL DEFAULT '{{}}',"
            " changed_at timestamptz NOT NULL DEFAULT now())"
        ).format(documents),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} ("
            " chunk_id text PRIMARY KEY,"
            ' document_id text COLLATE "C" NOT NULL,'
            " ordinal integer NOT NULL,"
            " revision bigint NOT NULL,"
            " source text NOT NULL,"
            " title text NOT NULL,"
            " locator text NOT NULL,"
            " text text NOT NULL,"
            " principals text[] NOT NULL,"
            " scopes text[] NOT NULL DEFAULT '{{}}',"
            " embedding vector({}) NOT NULL,"
            " tsv tsvector GENERATED ALWAYS AS ("
            "  setweight(to_tsvector({}::regconfig, text), 'A') ||"
            "  setweight(to_tsvector({}::regconfig, title), 'B')) STORED)"
        ).format(chunks, sql.Literal(dimension), config, config),
    ]


def _index_statements(
    tables: Tables, options: PgvectorOptions, dimension: int
) -> list[sql.Composed]:
    """The chunks table's indexes (and its schema-1 upgrade), and the meta rows."""
    chunks = sql.Identifier(tables.schema, tables.chunks)
    meta = sql.Identifier(tables.schema, tables.meta)
    return [
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (document_id, ordinal)").format(
            sql.Identifier(tables.index("document")), chunks
        ),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (principals)").format(
            sql.Identifier(tables.index("acl")), chunks
        ),
        sql.SQL(
            "ALTER TABLE {} ADD COLUMN IF NOT EXISTS scopes text[] NOT NULL DEFAULT '{{}}'"
        ).format(chunks),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (scopes)").format(
            sql.Identifier(tables.index("scopes")), chunks
        ),
        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin (tsv)").format(
            sql.Identifier(tables.index("tsv")), chunks
        ),
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = {}, ef_construction = {})"
        ).format(
            sql.Identifier(tables.index("embedding_hnsw")),
            chunks,
            sql.Literal(options.m),
            sql.Literal(options.ef_construction),
        ),
        sql.SQL(
            "INSERT INTO {} (key, value) VALUES ('schema_version', {}), ('dimension', {}) "
            "ON CONFLICT (key) DO NOTHING"
        ).format(meta, sql.Literal(SCHEMA_VERSION), sql.Literal(str(dimension))),
    ]


def _ensure_extension(cur: psycopg.Cursor[Any], where: str) -> str:
    cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    row = cur.fetchone()
    if row is not None:
        return str(row[0])
    cur.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")
    available = cur.fetchone()
    if available is None or not available[0]:
        raise ConfigError(
            f"PostgreSQL at {where} has no pgvector extension installed; install it on the "
            "server (e.g. the `postgresql-NN-pgvector` package) and run `CREATE EXTENSION vector`"
        )
    try:
        cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.errors.InsufficientPrivilege as exc:
        raise ConfigError(
            f"PostgreSQL at {where}: this user may not create the pgvector extension ({exc}); "
            "have an administrator run `CREATE EXTENSION vector` in this database"
        ) from exc
    cur.execute(_SEARCH_PATH)
    cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    row = cur.fetchone()
    return str(row[0]) if row else "0"


def _held_dimension(cur: psycopg.Cursor[Any], tables: Tables) -> int | None:
    """The dimension of an existing chunks table's ``embedding`` column (None: no table)."""
    cur.execute(
        "SELECT a.atttypmod FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s AND a.attname = 'embedding'",
        [tables.schema, tables.chunks],
    )
    row = cur.fetchone()
    return None if row is None else int(row[0])


def _version(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:2] if p.isdigit())


def supports_iterative_scan(version: str) -> bool:
    """pgvector 0.8.0 added ``hnsw.iterative_scan``."""
    return _version(version) >= (0, 8)
