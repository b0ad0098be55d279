"""The qdrant index passes the sink conformance suite, in memory and in a local folder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from headwater.sinks.base import Sink
from headwater.sinks.qdrant import QdrantOptions, QdrantSink
from headwater.sinks.testing import SinkConformance, sink_context
from sink_faults import fail_midway


class _Faults(SinkConformance):
    @pytest.fixture
    def fail_midway(self) -> Callable[[Sink], AbstractContextManager[object]]:
        return fail_midway


class TestQdrantInMemoryConformance(_Faults, sink=QdrantSink):
    @pytest.fixture
    def sink(self, tmp_path: Path) -> Iterator[Sink]:
        sink = QdrantSink(QdrantOptions(location=":memory:"), sink_context(tmp_path))
        yield sink
        sink.close()


class TestQdrantLocalConformance(_Faults, sink=QdrantSink):
    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], Sink]:
        return lambda: QdrantSink(QdrantOptions(), sink_context(tmp_path))

    @pytest.fixture
    def sink(self, reopen: Callable[[], Sink]) -> Iterator[Sink]:
        sink = reopen()
        yield sink
        sink.close()
