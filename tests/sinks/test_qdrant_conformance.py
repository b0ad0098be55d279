"""The qdrant index passes the sink conformance suite, in memory and in a local folder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from headwater.sinks.base import Sink
from headwater.sinks.qdrant import QdrantOptions, QdrantSink
from headwater.sinks.testing import SinkConformance, sink_context


class TestQdrantInMemoryConformance(SinkConformance):
    @pytest.fixture
    def sink(self, tmp_path: Path) -> Iterator[Sink]:
        sink = QdrantSink(QdrantOptions(location=":memory:"), sink_context(tmp_path))
        yield sink
        sink.close()


class TestQdrantLocalConformance(SinkConformance):
    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[], Sink]:
        return lambda: QdrantSink(QdrantOptions(), sink_context(tmp_path))

    @pytest.fixture
    def sink(self, reopen: Callable[[], Sink]) -> Iterator[Sink]:
        sink = reopen()
        yield sink
        sink.close()
