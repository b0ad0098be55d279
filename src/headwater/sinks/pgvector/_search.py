"""Vector and keyword search in one generation's chunks table, ACL-filtered in the query.

The ACL is a ``text[]`` column with a GIN index; ``principals && caller`` sits in the
same ``WHERE`` as the ranking, so only visible chunks are ever ranked. Scope tokens
(``scopes text[]``, GIN) are filtered the same way.

*Vector*: a caller whose principals carry at most ``exact_below`` chunks (an upper bound
read from the ``…_principals`` counts, see ``_counts``) is answered exactly: the visible
rows are read through the GIN index and sorted by distance, so a narrow caller gets the
true top k. A graph walk filtered to a small share of the rows is where HNSW loses
recall (the visible nearest chunks are not on the path), and ranking a few thousand rows
costs less than the walk. Any other caller gets
``ORDER BY embedding <=> q LIMIT k`` over the HNSW index (cosine). With
pgvector 0.8 or newer the search sets ``hnsw.iterative_scan = strict_order``, so the
index scan goes on past ``ef_search`` candidates until ``k`` visible chunks are found
(or ``max_scan_tuples`` rows were visited); older versions stop at ``ef_search``. When the
approximate query returns fewer than ``k`` (a caller who sees few chunks), the same
query runs exactly, ordered by an expression the HNSW index cannot serve: PostgreSQL
then reads the visible rows through the GIN index and sorts them, so such a caller still
gets every visible chunk up to ``k``.

*Keyword*: the query text is never query syntax. It is cut into lexemes by
``to_tsvector`` with the index's text search configuration, each lexeme is quoted and
the lexemes are OR-ed into a ``tsquery``; the matches are ranked by ``ts_rank_cd``
(cover density: how many query lexemes, how close, text weighted above title).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from headwater.sinks.base import SearchRequest
from headwater.sinks.pgvector._counts import visible_bound
from headwater.sinks.pgvector._db import vector_literal
from headwater.sinks.pgvector._options import Tables
from headwater.types import SearchHit

_COLUMNS = "chunk_id, document_id, ordinal, {score}, text, title, locator, source"
# Quote each lexeme as a tsquery string ('' for a quote, \\ for a backslash) and OR them.
_QUERY = (
    "(SELECT string_agg('''' || replace(replace(l, '\\', '\\\\'), '''', '''''') || '''', "
    "' | ') FROM unnest(tsvector_to_array(to_tsvector({config}::regconfig, %(text)s))) AS l)"
)


def _filters(request: SearchRequest) -> tuple[sql.Composable, dict[str, Any]]:
    params: dict[str, Any] = {"principals": list(request.principals), "k": request.k}
    where: sql.Composable = sql.SQL("principals && %(principals)s::text[]")
    if request.sources is not None:
        where = sql.SQL("{} AND source = ANY(%(sources)s::text[])").format(where)
        params["sources"] = list(request.sources)
    if request.scopes is not None:  # exact tokens (GIN), never a prefix: boundary-safe
        where = sql.SQL("{} AND scopes && %(scopes)s::text[]").format(where)
        params["scopes"] = list(request.scopes)
    return where, params


def vector_search(
    cur: psycopg.Cursor[Any],
    tables: Tables,
    request: SearchRequest,
    vector: Sequence[float],
    *,
    ef_search: int,
    iterative: bool,
    max_scan_tuples: int,
    exact_below: int,
) -> list[SearchHit]:
    """The ``k`` visible chunks nearest to ``vector``: exact for a caller who sees at most
    ``exact_below`` chunks; else HNSW, and exact when the walk found fewer than ``k``."""
    where, params = _filters(request)
    params["q"] = vector_literal(vector)
    columns = sql.SQL(_COLUMNS.format(score="1 - (embedding <=> %(q)s::vector)"))
    chunks = sql.Identifier(tables.schema, tables.chunks)
    # `+ 0` hides the distance from the planner's index matching: an exact sort.
    exact = sql.SQL(
        "SELECT {} FROM {} WHERE {} "
        "ORDER BY (embedding <=> %(q)s::vector) + 0, chunk_id LIMIT %(k)s"
    ).format(columns, chunks, where)
    if exact_below and visible_bound(cur, tables, request.principals) <= exact_below:
        return [_hit(row) for row in cur.execute(exact, params).fetchall()]
    settings = {"hnsw.ef_search": str(ef_search)}
    if iterative:
        settings["hnsw.iterative_scan"] = "strict_order"
        settings["hnsw.max_scan_tuples"] = str(max_scan_tuples)
    # SET LOCAL for all of them in one round trip
    calls = sql.SQL(", ").join(
        sql.SQL("set_config({}, {}, true)").format(sql.Literal(k), sql.Literal(v))
        for k, v in settings.items()
    )
    cur.execute(sql.SQL("SELECT {}").format(calls))
    approximate = sql.SQL(
        "SELECT {} FROM {} WHERE {} ORDER BY embedding <=> %(q)s::vector LIMIT %(k)s"
    ).format(columns, chunks, where)
    rows = cur.execute(approximate, params).fetchall()
    if len(rows) < request.k:
        rows = cur.execute(exact, params).fetchall()
    return [_hit(row) for row in rows]


def keyword_search(
    cur: psycopg.Cursor[Any], tables: Tables, request: SearchRequest, config: str
) -> list[SearchHit]:
    """The ``k`` visible chunks best ranked by ``ts_rank_cd`` for any of the query's words."""
    where, params = _filters(request)
    params["text"] = request.text
    query = sql.SQL(_QUERY).format(config=sql.Literal(config))
    statement = sql.SQL(
        "WITH q AS (SELECT {}::tsquery AS query) "
        "SELECT {} FROM {}, q WHERE q.query IS NOT NULL AND tsv @@ q.query AND {} "
        "ORDER BY 4 DESC, chunk_id LIMIT %(k)s"
    ).format(
        query,
        sql.SQL(_COLUMNS.format(score="ts_rank_cd(tsv, q.query)")),
        sql.Identifier(tables.schema, tables.chunks),
        where,
    )
    return [_hit(row) for row in cur.execute(statement, params).fetchall()]


def _hit(row: Sequence[Any]) -> SearchHit:
    chunk_id, document_id, ordinal, score, text, title, locator, source = row
    return SearchHit(
        chunk_id=str(chunk_id),
        document_id=str(document_id),
        ordinal=int(ordinal),
        score=float(score),
        text=str(text),
        title=str(title),
        locator=str(locator),
        source=str(source),
    )
