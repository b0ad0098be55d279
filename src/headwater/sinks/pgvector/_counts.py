"""Chunks per principal, kept exact by every write, so a search knows what the caller sees.

The ``…_principals`` table holds, per ACL principal, how many chunks carry it. A search
sums the rows of the caller's principals: an upper bound of the chunks the caller can
see (a chunk shared with two of them counts twice), read from a handful of primary-key
rows whatever the table's size. Below the sink's ``exact_below`` the search ranks the
visible rows exactly instead of walking the HNSW graph (see ``_search``).

Each write (replace, delete, update_access) adds its delta in its own transaction, as
its last statement: the document's old chunks' principals out, the new ones in. Rows
are upserted in principal order, so two writers never lock two rows in opposite order,
and a hot row (a principal on many documents) is held only from that statement to the
commit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg import sql

from headwater.sinks.pgvector._options import Tables

Held = list[tuple[list[str], int]]  # (principals, chunks carrying them)


def ensure_counts(cur: psycopg.Cursor[Any], tables: Tables) -> None:
    """Create the counts table when missing, counted from the chunks already held (a
    table written before it existed gets exact counts on its first open)."""
    cur.execute("SELECT to_regclass(%s)", [f'"{tables.schema}"."{tables.principals}"'])
    row = cur.fetchone()
    if row is not None and row[0] is not None:
        return
    cur.execute(
        sql.SQL("CREATE TABLE {} (principal text PRIMARY KEY, chunks bigint NOT NULL)").format(
            sql.Identifier(tables.schema, tables.principals)
        )
    )
    cur.execute(count_all(tables))


def count_all(tables: Tables) -> sql.Composed:
    """Add every chunk's principals to the counts (a new or a bulk-loaded table)."""
    return sql.SQL(
        "INSERT INTO {} AS c (principal, chunks) "
        "SELECT p, count(*) FROM {}, unnest(principals) AS p GROUP BY p ORDER BY p "
        "ON CONFLICT (principal) DO UPDATE SET chunks = c.chunks + excluded.chunks"
    ).format(
        sql.Identifier(tables.schema, tables.principals),
        sql.Identifier(tables.schema, tables.chunks),
    )


def held(cur: psycopg.Cursor[Any], tables: Tables, document_id: str) -> Held:
    """The principals of the document's chunks now in the table, with their counts."""
    rows = cur.execute(
        sql.SQL(
            "SELECT principals, count(*) FROM {} WHERE document_id = %s GROUP BY principals"
        ).format(sql.Identifier(tables.schema, tables.chunks)),
        [document_id],
    ).fetchall()
    return [(list(r[0]), int(r[1])) for r in rows]


def deltas(old: Held, new: Held) -> dict[str, int]:
    """Per principal, chunks added minus chunks removed; zeros left out."""
    change: Counter[str] = Counter()
    for principals, n in new:
        for p in set(principals):
            change[p] += n
    for principals, n in old:
        for p in set(principals):
            change[p] -= n
    return {p: d for p, d in sorted(change.items()) if d}


def apply(cur: psycopg.Cursor[Any], tables: Tables, old: Held, new: Held) -> None:
    """Add the write's deltas to the counts, in principal order (no lock-order deadlock)."""
    change = deltas(old, new)
    if not change:
        return
    cur.execute(
        sql.SQL(
            "INSERT INTO {} AS c (principal, chunks) "
            "SELECT p, d FROM unnest(%s::text[], %s::bigint[]) AS t(p, d) ORDER BY p "
            "ON CONFLICT (principal) DO UPDATE SET chunks = c.chunks + excluded.chunks"
        ).format(sql.Identifier(tables.schema, tables.principals)),
        [list(change), list(change.values())],
    )


def visible_bound(
    cur: psycopg.Cursor[Any], tables: Tables, principals: Sequence[str] | Iterable[str]
) -> int:
    """At least as many chunks as a caller with these principals can see."""
    row = cur.execute(
        sql.SQL("SELECT coalesce(sum(chunks), 0) FROM {} WHERE principal = ANY(%s::text[])").format(
            sql.Identifier(tables.schema, tables.principals)
        ),
        [list(dict.fromkeys(principals))],
    ).fetchone()
    return 0 if row is None else int(row[0])
