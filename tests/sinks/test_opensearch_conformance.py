"""The opensearch index passes the sink conformance suite against the fake cluster.

No OpenSearch can run here; ``tests/fakes/opensearch`` follows its documentation
(bulk item errors, near-real-time refresh, strict mappings, filtered k-NN, aliases).
With ``HEADWATER_OPENSEARCH_URL`` (and ``HEADWATER_OPENSEARCH_USER`` /
``HEADWATER_OPENSEARCH_PASSWORD``) set, the same suite runs against that cluster.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from fakes.opensearch import FakeOpensearch
from headwater.sinks.base import Sink
from headwater.sinks.opensearch import OpensearchOptions, OpensearchSink
from headwater.sinks.testing import SinkConformance, sink_context


class InjectedFault(RuntimeError):
    pass


class _HalfBulkApi:
    """The sink's API whose first bulk into the chunk index sends half, then dies."""

    def __init__(self, api: Any, index: str) -> None:
        self._api = api
        self._index = index

    def bulk(self, actions: Sequence[tuple[dict[str, Any], dict[str, Any] | None]]) -> None:
        if not actions or next(iter(actions[0][0].values()))["_index"] != self._index:
            return self._api.bulk(actions)  # type: ignore[no-any-return]
        half = list(actions)[: max(1, len(actions) // 2)]
        self._api.bulk(half)
        raise InjectedFault(f"injected: the connection died after {len(half)} chunks")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)


@contextmanager
def fail_midway(sink: Sink) -> Iterator[None]:
    assert isinstance(sink, OpensearchSink)
    api = sink._api
    sink._api = _HalfBulkApi(api, sink.index)  # type: ignore[assignment]
    try:
        yield
    finally:
        sink._api = api


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, Any]]:
    """Options of the cluster the environment names, else of the fake."""
    url = os.environ.get("HEADWATER_OPENSEARCH_URL")
    if url:
        yield {
            "url": url,
            "username": os.environ.get("HEADWATER_OPENSEARCH_USER"),
            "password": os.environ.get("HEADWATER_OPENSEARCH_PASSWORD"),
        }
        return
    with FakeOpensearch(user="admin", password="pw") as fake:
        yield {"url": fake.url, "username": "admin", "password": "pw"}


class TestOpensearchConformance(SinkConformance, sink=OpensearchSink):
    @pytest.fixture
    def fail_midway(self) -> Callable[[Sink], AbstractContextManager[object]]:
        return fail_midway

    @pytest.fixture
    def reopen(self, cluster: dict[str, Any], tmp_path: Path) -> Callable[[], Sink]:
        options = OpensearchOptions(**cluster, replicas=0)
        context = sink_context(tmp_path, name=f"t{uuid.uuid4().hex[:12]}")
        return lambda: OpensearchSink(options, context)

    @pytest.fixture
    def sink(self, reopen: Callable[[], Sink]) -> Iterator[Sink]:
        sink = reopen()
        yield sink
        sink.close()
        reopen().drop()  # a real cluster keeps no test indexes behind
