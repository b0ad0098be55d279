"""The ``sqlite`` index: the embedded default, vectors and keywords in one SQLite file."""

from __future__ import annotations

from headwater.sinks.sqlite._options import SqliteOptions
from headwater.sinks.sqlite._search import fts_query
from headwater.sinks.sqlite._sink import SqliteSink

__all__ = ["SqliteOptions", "SqliteSink", "fts_query"]
