"""The sqlite index passes the sink conformance suite, with either SQLite binding."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from headwater.sinks.base import Sink
from headwater.sinks.sqlite import SqliteOptions, SqliteSink
from headwater.sinks.testing import SinkConformance, sink_context
from sink_faults import fail_midway


@pytest.fixture(params=["apsw", "pysqlite3"])
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class _Faults(SinkConformance):
    """Each class below gives ``reopen`` (its options); the sink is the first opening."""

    @pytest.fixture
    def fail_midway(self) -> Callable[[Sink], AbstractContextManager[object]]:
        return fail_midway

    @pytest.fixture
    def sink(self, reopen: Callable[[], Sink]) -> Iterator[Sink]:
        sink = reopen()
        yield sink
        sink.close()


class TestSqliteConformance(_Faults, sink=SqliteSink):
    @pytest.fixture
    def reopen(self, tmp_path: Path, driver: str) -> Callable[[], Sink]:
        options = SqliteOptions.model_validate({"driver": driver})
        return lambda: SqliteSink(options, sink_context(tmp_path))


class TestSqliteConformanceApproximate(_Faults, sink=SqliteSink):
    """The same suite with the approximate path taken for every search (``exact_below=0``)
    and the row-by-row ACL check for every caller who saw half the index (``wide_from=0``)."""

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], Sink]:
        options = SqliteOptions(exact_below=0, wide_from=0)
        return lambda: SqliteSink(options, sink_context(tmp_path))


class TestSqliteConformanceSqlRanking(_Faults, sink=SqliteSink):
    """The same suite without int8 vector copies (``vector_copies_mb=0``): every exact
    ranking reads the ACL match's rows in SQL, the path an index past the copies' budget
    takes."""

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], Sink]:
        options = SqliteOptions(vector_copies_mb=0)
        return lambda: SqliteSink(options, sink_context(tmp_path))
