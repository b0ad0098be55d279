"""Reading rows by a list of ids, a bounded part at a time, the list bound as one value.

The sync gates decide a batch of items from the rows of their object ids: one query per
part of ``CHUNK`` ids (an index lookup each on ``(source_id, object_id)``), each part
fetched at once. A no-op re-sync of a million objects is two thousand such queries, not a
million. The part is bound as *one* parameter (``in_ids``): a JSON array that SQLite's
``json_each`` reads, an array that PostgreSQL's ``= ANY`` reads. An expanding ``IN``
would render one placeholder per id on every execution, a few microseconds per id in
Python, as much as SQLite's own lookup of the row. The sync gates' statement is compiled
once per driver and run as driver SQL, its rows fetched as the driver's tuples
(``driver_sql``): SQLAlchemy's cache key of the ``select``, computed on every execution,
cost another microsecond per row, and its ``Row`` objects 0.6 µs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import Connection, Dialect, Engine, Select, Text, any_, bindparam, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.elements import ColumnElement

from headwater.manifest import schema as t
from headwater.manifest.driver_sql import driver_rows, driver_statement
from headwater.manifest.prunes import CHUNK
from headwater.manifest.records import ACTIVE


def chunked(items: Sequence[str], size: int = CHUNK) -> Iterator[Sequence[str]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def in_ids(column: ColumnElement[Any], dialect: str, name: str = "ids") -> ColumnElement[bool]:
    """``column IN (ids)`` with the ids bound as the one parameter ``name``
    (``bound_ids`` gives its value): ``json_each`` on SQLite, ``= ANY`` on PostgreSQL."""
    if dialect == "sqlite":
        values = func.json_each(bindparam(name, type_=Text)).table_valued("value")
        return column.in_(select(values.c.value))
    if dialect == "postgresql":
        return column == any_(bindparam(name, type_=ARRAY(Text)))
    return column.in_(bindparam(name, expanding=True))


def bound_ids(ids: Sequence[str], dialect: str) -> str | list[str]:
    """The value of ``in_ids``'s parameter for ``ids``."""
    if dialect == "sqlite":
        return json.dumps(list(ids), ensure_ascii=False)
    return list(ids)


def rows_by_object_ids(
    engine: Engine,
    source_id: str,
    object_ids: Sequence[str],
    columns: Sequence[str],
    *,
    listed: bool = False,
) -> Iterator[Sequence[Any]]:
    """The ``columns`` of the rows of these object ids in ``source_id``, in parts;
    ``listed``: the ids come about in the index's order (a walk, a bucket listing), so a
    part is first read as one range of the index (``_rows_in_range``)."""
    dialect = engine.dialect
    lookup = driver_statement(
        dialect, ("lookup", tuple(columns)), lambda: _lookup(columns, dialect.name)
    )
    ranged = _range_sql(dialect, tuple(columns)) if listed else None
    with engine.connect() as conn:
        for part in chunked(list(object_ids)):
            if ranged is not None:
                found = _rows_in_range(conn, ranged, source_id, part, columns.index("object_id"))
                if found is not None:
                    yield from found
                    continue
                ranged = None  # the ids lie far apart in the index: each looked up from now
            yield from lookup.rows(
                conn, {"source": source_id, "ids": bound_ids(part, dialect.name)}
            )


def active_acls(dialect: str) -> Select[Any]:
    """``SELECT document_id, acl FROM documents WHERE document_id IN :ids`` and active:
    the search gate's read (``Manifest.visible_to``)."""
    docs = t.documents.c
    return select(docs.document_id, docs.acl).where(
        in_ids(docs.document_id, dialect), docs.state == ACTIVE
    )


def _rows_in_range(
    conn: Connection, statement: str, source_id: str, part: Sequence[str], key: int
) -> list[Sequence[Any]] | None:
    """The rows of ``part`` read as one range of the index, from its least id to its
    greatest; None when that range holds more than twice as many rows (ids far apart)."""
    limit = 2 * len(part) + 64
    rows = driver_rows(conn, statement, (source_id, min(part), max(part), limit))
    if len(rows) >= limit:
        return None
    asked = set(part)
    return [row for row in rows if row[key] in asked]


def _lookup(columns: Sequence[str], dialect: str) -> Select[Any]:
    """``SELECT columns FROM documents WHERE source_id = :source AND object_id IN :ids``."""
    docs = t.documents.c
    return select(*(docs[name] for name in columns)).where(
        docs.source_id == bindparam("source"), in_ids(docs.object_id, dialect)
    )


def _range_sql(dialect: Dialect, columns: tuple[str, ...]) -> str | None:
    """SQLite's statement of the rows whose object id lies between two ids, at most a
    given number (parameters: source, first, last, limit); None elsewhere, when the
    object id is not among ``columns``, or when a column needs converting. SQLite orders
    text by its bytes, as Python orders ``str`` by code points (the same order for
    UTF-8): a part listed in about that order (a walk, a bucket listing) is one short
    scan of the ``(source_id, object_id)`` index rather than a descent per id, 30 % less
    time a row of a no-op's lookup."""
    key = (dialect.name, dialect.driver, dialect.paramstyle, columns)
    if key not in _RANGES:
        _RANGES[key] = _compiled_range(dialect, columns)
    return _RANGES[key]


def _compiled_range(dialect: Dialect, columns: tuple[str, ...]) -> str | None:
    """``_range_sql``'s statement, compiled once per driver and columns."""
    if dialect.name != "sqlite" or "object_id" not in columns or dialect.paramstyle != "qmark":
        return None
    docs = t.documents.c
    query = (
        select(*(docs[name] for name in columns))
        .where(docs.source_id == bindparam("source"))
        .where(docs.object_id >= bindparam("first"), docs.object_id <= bindparam("last"))
    )
    if any(
        c.type.dialect_impl(dialect).result_processor(dialect, None) for c in query.selected_columns
    ):
        return None
    compiled = query.compile(dialect=dialect)
    assert compiled.positiontup == ["source", "first", "last"]
    return f"{compiled} LIMIT ?"


# (dialect, driver, paramstyle, columns) -> the range statement; a handful of entries
_RANGES: dict[tuple[str, str, str, tuple[str, ...]], str | None] = {}
