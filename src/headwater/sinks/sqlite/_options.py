"""The ``sqlite`` index's options, and where each generation of an index keeps its file."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from headwater.sinks.base import SinkOptions
from headwater.sinks.sqlite._driver import DriverName
from headwater.sinks.sqlite._search import (
    CANDIDATES,
    EXACT_BELOW,
    SEARCH_MEMORY_MB,
    VECTOR_COPIES_MB,
    WIDE_FROM,
)


def generation_path(base: Path, generation: int) -> Path:
    """Generation 1 keeps ``base``; generation N lives next to it as ``{stem}@{N}{suffix}``."""
    if generation == 1:
        return base
    return base.with_name(f"{base.stem}@{generation}{base.suffix}")


class SqliteOptions(SinkOptions):
    """Options of the ``sqlite`` index."""

    path: Path | None = Field(
        default=None, description="The index file; default `{state_dir}/index-{name}.db`."
    )
    driver: DriverName = Field(
        default="auto",
        description="SQLite binding: `apsw`, `pysqlite3`, or `auto` (apsw, then pysqlite3).",
    )
    exact_below: int = Field(
        default=EXACT_BELOW,
        ge=0,
        description="A caller who sees at most this many chunks gets exact vector search; "
        "above it, 1-bit codes pick `candidates` chunks that are then ranked exactly.",
    )
    candidates: int = Field(
        default=CANDIDATES,
        ge=1,
        description="Chunks ranked exactly per approximate vector search (at least 10 × k).",
    )
    wide_from: int = Field(
        default=WIDE_FROM,
        ge=0,
        description="A caller whose last search saw at least half the index and at least "
        "this many chunks checks the ACL of the nearest chunks row by row instead of "
        "listing every chunk it sees (worth it past ~100,000 visible chunks).",
    )
    vector_copies_mb: int = Field(
        default=VECTOR_COPIES_MB,
        ge=0,
        description="Megabytes of int8 vector copies each open index may keep in memory "
        "(dimension + 8 bytes per chunk id) so that exact ranking reads only the chunks that "
        "can reach the top k; same results; 0, or an index needing more, ranks every "
        "visible chunk in SQL.",
    )
    search_memory_mb: int = Field(
        default=SEARCH_MEMORY_MB,
        ge=0,
        description="Megabytes each open index may keep of the query words' posting lists, "
        "its rows' lengths and the callers' visible ids, so that keyword search scores "
        "bm25 in memory (same scores and order as FTS5) and vector search lists a caller's "
        "chunks once until the index changes; 0 runs every search in SQL.",
    )
