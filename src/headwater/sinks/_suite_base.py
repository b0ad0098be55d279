"""The shared part of the sink conformance suite: deterministic data and the base class.

``headwater.sinks.testing`` is the public face; this module holds the helpers (documents,
chunks, unit vectors, requests) and ``SuiteBase``, the fixtures every check needs.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from headwater.identity import chunk_id, document_id
from headwater.scopes import HIERARCHY_KEY
from headwater.sinks.base import SearchRequest, Sink, SinkContext
from headwater.types import (
    Access,
    Chunk,
    EmbeddedChunk,
    IndexDocument,
    SearchHit,
    SearchMode,
    caller_principals,
)

DIMENSION = 8
EVERYONE = ["public", "group:a", "group:b", "user:x@example.com", "user:y@example.com"]


def sink_context(state_dir: Path, name: str = "test", dimension: int = DIMENSION) -> SinkContext:
    """A SinkContext for a conformance check's sink under ``state_dir``."""
    return SinkContext(name=name, state_dir=state_dir, dimension=dimension)


def unit_vector(seed: str, dimension: int = DIMENSION) -> list[float]:
    """A deterministic unit vector derived from ``seed``."""
    values: list[float] = []
    counter = 0
    while len(values) < dimension:
        digest = hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        values.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    return _normalized(values[:dimension])


def near(base: Sequence[float], seed: str, amount: float) -> list[float]:
    """A unit vector ``amount`` of the way from ``base`` towards a random direction."""
    other = unit_vector(seed, len(base))
    return _normalized([b + amount * o for b, o in zip(base, other, strict=True)])


def _normalized(values: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def make_document(
    name: str, access: Access, source: str = "docs", hierarchy: str | None = None
) -> IndexDocument:
    """A test document named ``name`` with ``access``, in source ``source``, at the path
    ``hierarchy`` of its source's folders when given (``headwater.scopes``)."""
    return IndexDocument(
        document_id=document_id("tenant", "test", source, name),
        source=source,
        title=f"Title of {name}",
        locator=f"test://{source}/{name}",
        access=access,
        metadata={} if hierarchy is None else {HIERARCHY_KEY: hierarchy},
    )


def make_chunks(
    document: IndexDocument,
    texts: Sequence[str],
    vectors: Sequence[Sequence[float]] | None = None,
    pipeline: str = "p1",
) -> list[EmbeddedChunk]:
    """Chunks of ``document`` with ``texts``; vectors default to ones seeded by the text."""
    chunks: list[EmbeddedChunk] = []
    for ordinal, text in enumerate(texts):
        vector = vectors[ordinal] if vectors is not None else unit_vector(text)
        chunk = Chunk(
            chunk_id=chunk_id(document.document_id, pipeline, ordinal),
            document_id=document.document_id,
            ordinal=ordinal,
            text=text,
            embed_text=text,
        )
        chunks.append(EmbeddedChunk(chunk=chunk, vector=list(vector)))
    return chunks


def ask(
    mode: SearchMode,
    *,
    text: str = "",
    vector: Sequence[float] | None = None,
    principals: Sequence[str] = ("public",),
    k: int = 10,
    sources: Sequence[str] | None = None,
    scopes: Sequence[str] | None = None,
) -> SearchRequest:
    """A search request in ``mode`` (public caller, top 10, by default)."""
    return SearchRequest(
        text=text,
        vector=vector,
        principals=list(principals),
        k=k,
        mode=mode,
        sources=sources,
        scopes=scopes,
    )


ACCESS_POOL = [
    Access(groups=("a",)),
    Access(groups=("b",)),
    Access(users=("x@example.com",)),
    Access(users=("y@example.com",), groups=("b",)),
    Access(public=True),
    Access.nobody(),
]
CALLERS = [
    caller_principals(None),
    caller_principals("x@example.com"),
    caller_principals("y@example.com", ["a"]),
    caller_principals("z@example.com", ["b"]),
]


class SuiteBase:
    """Fixtures and helpers of every conformance check."""

    @pytest.fixture
    def sink(self) -> Iterator[Sink]:  # pragma: no cover - overridden
        """The sink under test: each conformance class overrides this fixture."""
        raise RuntimeError("override the `sink` fixture in your conformance test class")

    @pytest.fixture
    def fail_midway(self) -> Callable[[Sink], AbstractContextManager[object]]:
        """Returns ``f(sink)``: a context in which the sink's storage raises half-way
        through writing the new chunks of a replace (after some were written)."""
        raise RuntimeError("override the `fail_midway` fixture in your conformance test class")

    @pytest.fixture
    def reopen(self) -> Callable[[], Sink] | None:
        """Opens the sink's storage again; None for a sink that lives in memory."""
        return None

    # ---- helpers ------------------------------------------------------------------

    def modes(self, sink: Sink) -> list[SearchMode]:
        """The search modes ``sink`` declares it supports."""
        found = []
        if sink.capabilities.vector:
            found.append(SearchMode.VECTOR)
        if sink.capabilities.keyword:
            found.append(SearchMode.KEYWORD)
        return found

    def find(
        self, sink: Sink, mode: SearchMode, text: str, principals: Sequence[str], k: int = 50
    ) -> list[SearchHit]:
        """The hits of ``text`` in ``mode`` for ``principals``."""
        vector = unit_vector(text) if mode is not SearchMode.KEYWORD else None
        return sink.search(ask(mode, text=text, vector=vector, principals=principals, k=k))

    def ids_of(self, hits: Sequence[SearchHit]) -> list[str]:
        """The chunk ids of ``hits``, in order."""
        return [hit.chunk_id for hit in hits]
