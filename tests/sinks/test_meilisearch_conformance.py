"""The meilisearch index passes the sink conformance suite against the fake server.

No Meilisearch server can run here; ``tests/fakes/meilisearch`` follows its API
documentation (task lifecycle, filters, user-provided vectors, error codes). Each test
gets indexes of its own on one fake server per module. With ``HEADWATER_MEILI_URL`` (and
``HEADWATER_MEILI_KEY``) set, the same suite runs against that real server instead
(docs/sinks/meilisearch.md, "Running against a real server").
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from fakes.meilisearch import FakeMeilisearch
from headwater.sinks.base import Sink
from headwater.sinks.meilisearch import MeilisearchOptions, MeilisearchSink
from headwater.sinks.testing import SinkConformance, sink_context


class InjectedFault(RuntimeError):
    pass


class _HalfAddApi:
    """The sink's API whose first add to the chunk index sends half the chunks, then dies."""

    def __init__(self, api: Any, index: str) -> None:
        self._api = api
        self._index = index

    def add_documents(self, index: str, documents: Sequence[dict[str, Any]]) -> None:
        if index != self._index:
            return self._api.add_documents(index, documents)  # type: ignore[no-any-return]
        half = list(documents)[: max(1, len(documents) // 2)]
        self._api.add_documents(index, half)
        raise InjectedFault(f"injected: the connection died after {len(half)} chunks")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)


@contextmanager
def fail_midway(sink: Sink) -> Iterator[None]:
    assert isinstance(sink, MeilisearchSink)
    api = sink._api
    sink._api = _HalfAddApi(api, sink.index)  # type: ignore[assignment]
    try:
        yield
    finally:
        sink._api = api


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, str | None]]:
    """(url, api key): the real server the environment names, else the fake."""
    url = os.environ.get("HEADWATER_MEILI_URL")
    if url:
        yield url, os.environ.get("HEADWATER_MEILI_KEY")
        return
    with FakeMeilisearch(master_key="m4ster") as fake:
        yield fake.url, "m4ster"


class TestMeilisearchConformance(SinkConformance, sink=MeilisearchSink):
    @pytest.fixture
    def fail_midway(self) -> Callable[[Sink], AbstractContextManager[object]]:
        return fail_midway

    @pytest.fixture
    def reopen(self, server: tuple[str, str | None], tmp_path: Path) -> Callable[[], Sink]:
        options = MeilisearchOptions(url=server[0], api_key=server[1])
        context = sink_context(tmp_path, name=f"t{uuid.uuid4().hex[:12]}")
        return lambda: MeilisearchSink(options, context)

    @pytest.fixture
    def sink(self, reopen: Callable[[], Sink]) -> Iterator[Sink]:
        sink = reopen()
        yield sink
        sink.close()
        reopen().drop()  # a real server keeps no test indexes behind
