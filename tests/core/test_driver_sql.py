"""Hot reads run as the driver's own SQL answer exactly what SQLAlchemy answers.

``manifest.driver_sql`` compiles a ``select`` once and runs it with the driver's
parameters and cursor, converting only what the dialect converts. Each statement is run
both ways on the same rows, on SQLite and PostgreSQL: the lookup with a timestamp column
(SQLite stores text, the row must come back as a ``datetime``), the live generation (a
literal ``state = 'live'`` the statement binds itself, timestamps, JSON text), the
caller's groups (``literal(None)`` among the columns, a join, an order) and the gate's
ACLs; and the search reads that now use it return what they returned before. ``read``
(one statement on the driver's connection, outside SQLAlchemy's ``Connection``) answers the
same, raises a driver error as SQLAlchemy raises it, and leaves nothing open behind it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import Select, bindparam, column, select, table
from sqlalchemy.exc import DBAPIError

from headwater.manifest import schema as t
from headwater.manifest.driver_sql import driver_statement
from headwater.manifest.groups import _direct, _parents
from headwater.manifest.lookups import _lookup, active_acls, bound_ids
from headwater.manifest.records import BatchCommit, DocumentWrite
from headwater.manifest.store import Manifest
from headwater.types import ListedGroup
from manifest_rows import document_write


def _write(n: int, state: str = "active", acl: tuple[str, ...] = ("public",)) -> DocumentWrite:
    return document_write(f"o{n}", n, state=state, acl=acl, metadata={})


def _both_ways(
    manifest: Manifest, key: str, query: Select[Any], values: dict[str, Any]
) -> list[tuple[Any, ...]]:
    statement = driver_statement(manifest.engine.dialect, ("test", key), lambda: query)
    assert statement.sql is not None  # run as driver SQL on both databases
    with manifest.engine.connect() as conn:
        raw = [tuple(row) for row in statement.rows(conn, values)]
        expected = [tuple(row) for row in conn.execute(query, values)]
    assert raw == expected
    assert [tuple(row) for row in statement.read(manifest.engine, values)] == expected
    return raw


def test_driver_statements_answer_what_sqlalchemy_answers(manifest_url: str) -> None:
    manifest = Manifest.open(manifest_url)
    try:
        manifest.ensure_source("s", "filesystem")
        writes = [_write(n, "deleted" if n % 3 == 0 else "active", (f"group:g{n % 4}",))
                  for n in range(12)]  # fmt: skip
        manifest.commit_batch("run", BatchCommit(writes=writes))
        dialect = manifest.engine.dialect.name
        ids = bound_ids([f"o{n}" for n in range(12)] + ["missing"], dialect)
        columns = ("object_id", "document_id", "updated_at", "state")
        rows = _both_ways(
            manifest, "lookup", _lookup(columns, dialect), {"source": "s", "ids": ids}
        )
        assert len(rows) == 12 and all(isinstance(row[2], datetime) for row in rows)
        doc_ids = bound_ids([f"doc{n}" for n in range(12)], dialect)
        rows = _both_ways(manifest, "acls", active_acls(dialect), {"ids": doc_ids})
        assert sorted(r[0] for r in rows) == sorted(f"doc{n}" for n in range(12) if n % 3)

        manifest.generations.ensure_live("main", "v1", {"dimension": 8})
        g = t.generations
        live = select(g).where(g.c.index_name == bindparam("name"), g.c.state == "live")
        (row,) = _both_ways(manifest, "live", live, {"name": "main"})
        assert isinstance(row[g.c.keys().index("created_at")], datetime)
        assert _both_ways(manifest, "live", live, {"name": "other"}) == []
        assert manifest.generations.live("main") == manifest.generations.all("main")[0]
        assert manifest.generations.live("other") is None

        manifest.ensure_source("dir", "filesystem")
        manifest.groups.replace(
            "dir",
            [
                ListedGroup("group:eng", ["ann@x.com"], display_name="Eng"),
                ListedGroup("group:all", [], mail="all@x.com", subgroups=["group:eng"]),
            ],
        )
        users = {"ids": bound_ids(["ann@x.com"], dialect)}
        assert _both_ways(manifest, "direct", _direct(dialect), users) == [
            ("group:eng", "dir", "Eng", None, None)
        ]
        parents = {"ids": bound_ids(["group:eng"], dialect)}
        assert _both_ways(manifest, "parents", _parents(dialect), parents) == [
            ("group:all", "dir", None, "all@x.com", "group:eng")
        ]
        assert [g.group for g in manifest.groups.groups_of("ann@x.com")] == [
            "group:eng",
            "group:all",
        ]
    finally:
        manifest.close()


def test_a_read_raises_as_sqlalchemy_and_leaves_no_transaction_open(manifest_url: str) -> None:
    manifest = Manifest.open(manifest_url)
    try:
        manifest.ensure_source("s", "filesystem")
        manifest.commit_batch("run", BatchCommit(writes=[_write(1)]))
        dialect = manifest.engine.dialect.name
        acls = driver_statement(
            manifest.engine.dialect, ("test", "acls"), lambda: active_acls(dialect)
        )
        ids = {"ids": bound_ids(["doc1"], dialect)}
        assert [r[0] for r in acls.read(manifest.engine, ids)] == ["doc1"]
        # Another connection alters the table the read touched: a read that left its
        # transaction open (PostgreSQL's lock on the table, SQLite's snapshot) blocks it.
        with manifest.engine.connect() as other:
            other = other.execution_options(isolation_level="AUTOCOMMIT")
            if dialect == "postgresql":
                other.exec_driver_sql("SET lock_timeout = '2s'")
            other.exec_driver_sql("ALTER TABLE documents ADD COLUMN probe INTEGER")
        probe = column("probe")
        missing = driver_statement(
            manifest.engine.dialect,
            ("test", "missing"),
            lambda: (
                select(probe).select_from(table("no_such_table")).where(probe == bindparam("x"))
            ),
        )
        with pytest.raises(DBAPIError):  # SQLAlchemy's wrapper, as ``rows`` raises it
            missing.read(manifest.engine, {"x": "doc1"})
        # the failed read's connection went back to the pool usable
        assert [r[0] for r in acls.read(manifest.engine, ids)] == ["doc1"]
    finally:
        manifest.close()
