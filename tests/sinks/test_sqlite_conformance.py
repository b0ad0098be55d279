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
    @pytest.fixture
    def fail_midway(self) -> Callable[[Sink], AbstractContextManager[object]]:
        return fail_midway


class TestSqliteConformance(_Faults, sink=SqliteSink):
    @pytest.fixture
    def reopen(self, tmp_path: Path, driver: str) -> Callable[[], Sink]:
        options = SqliteOptions.model_validate({"driver": driver})
        return lambda: SqliteSink(options, sink_context(tmp_path))

    @pytest.fixture
    def sink(self, reopen: Callable[[], Sink]) -> Iterator[Sink]:
        sink = reopen()
        yield sink
        sink.close()


class TestSqliteConformanceApproximate(_Faults, sink=SqliteSink):
    """The same suite with the approximate path taken for every search (``exact_below=0``)."""

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], Sink]:
        options = SqliteOptions(exact_below=0)
        return lambda: SqliteSink(options, sink_context(tmp_path))

    @pytest.fixture
    def sink(self, reopen: Callable[[], Sink]) -> Iterator[Sink]:
        sink = reopen()
        yield sink
        sink.close()
