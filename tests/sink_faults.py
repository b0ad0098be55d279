"""Fault injection for the sink conformance suite: storage that dies half-way.

Each wrapper sits between a real sink and its real storage (a Qdrant client, a SQLite
connection) and lets the first half of a replace's new chunks through before raising,
exactly as a crash or a lost connection midway would leave things.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from headwater.sinks.base import Sink
from headwater.sinks.qdrant import QdrantSink
from headwater.sinks.sqlite import SqliteSink


class InjectedFault(RuntimeError):
    pass


class _HalfUpsertClient:
    """A Qdrant client whose first upsert into ``collection`` writes half, then raises."""

    def __init__(self, client: Any, collection: str) -> None:
        self._client = client
        self._collection = collection

    def upsert(self, collection_name: str, points: Sequence[Any], **kwargs: Any) -> Any:
        if collection_name != self._collection:
            return self._client.upsert(collection_name, points=points, **kwargs)
        half = list(points)[: max(1, len(points) // 2)]
        self._client.upsert(collection_name, points=half, **kwargs)
        raise InjectedFault(f"injected: the connection died after {len(half)} points")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _HalfInsertRaw:
    """A SQLite connection whose chunk INSERT writes half the rows, then raises."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        if not sql.startswith("INSERT INTO chunks"):
            return self._raw.run_many(sql, rows)  # type: ignore[no-any-return]
        listed = list(rows)
        self._raw.run_many(sql, listed[: max(1, len(listed) // 2)])
        raise InjectedFault("injected: the disk failed half-way through the chunks")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


@contextmanager
def fail_midway(sink: Sink) -> Iterator[None]:
    """Within the context, the sink's next replace dies half-way through its new chunks."""
    if isinstance(sink, QdrantSink):
        client = sink._client
        sink._client = _HalfUpsertClient(client, sink.collection)  # type: ignore[assignment]
        try:
            yield
        finally:
            sink._client = client
    elif isinstance(sink, SqliteSink):
        db = sink._db
        raw = db._raw
        db._raw = _HalfInsertRaw(raw)
        try:
            yield
        finally:
            db._raw = raw
    else:  # pragma: no cover - only the shipped sinks are wrapped here
        raise TypeError(f"no fault injection for {type(sink).__name__}")
