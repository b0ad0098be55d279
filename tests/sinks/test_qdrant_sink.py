"""What the qdrant index does beyond the conformance suite: options, errors, modes."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from headwater.errors import ConfigError, FatalError, ItemError, TransientError
from headwater.sinks.qdrant import QdrantOptions, QdrantSink
from headwater.sinks.qdrant import _sink as qdrant_sink
from headwater.sinks.testing import ask, make_chunks, make_document, sink_context, unit_vector
from headwater.types import Access, SearchMode
from sink_faults import InjectedFault, fail_midway


@pytest.fixture
def sink(tmp_path: Path) -> Iterator[QdrantSink]:
    sink = QdrantSink(QdrantOptions(location=":memory:"), sink_context(tmp_path))
    yield sink
    sink.close()


def test_options_take_one_place_only() -> None:
    with pytest.raises(ValidationError, match="at most one"):
        QdrantOptions(url="http://localhost:6333", path=Path("x"))
    with pytest.raises(ValidationError, match=":memory:"):
        QdrantOptions(location="http://localhost:6333")
    with pytest.raises(ValidationError):
        QdrantOptions.model_validate({"collection": "c", "unknown": 1})
    secret = QdrantOptions(url="http://h:6333", api_key="s3cret")
    assert "s3cret" not in repr(secret)


def test_default_collection_and_folder(tmp_path: Path) -> None:
    sink = QdrantSink(QdrantOptions(), sink_context(tmp_path, name="main"))
    try:
        assert sink.collection == "headwater_main"
        assert (tmp_path / "qdrant-main").is_dir()
    finally:
        sink.close()


def test_generation_folders_sit_next_to_the_default_or_the_configured_path(
    tmp_path: Path,
) -> None:
    """docs/sinks.md: generation N in local mode is `qdrant-<name>@N`, or `<path>@N`."""
    for options, folder in (
        (QdrantOptions(), tmp_path / "qdrant-main@2"),
        (QdrantOptions(path=tmp_path / "vectors"), tmp_path / "vectors@2"),
    ):
        context = dataclasses.replace(sink_context(tmp_path, name="main"), generation=2)
        sink = QdrantSink(options, context)
        try:
            assert sink.collection == "headwater_main__g2" and folder.is_dir()
        finally:
            sink.close()


def test_keyword_mode_is_refused_and_hybrid_is_vector(sink: QdrantSink) -> None:
    doc = make_document("modes", Access(public=True))
    sink.replace(doc, make_chunks(doc, ["modes one", "modes two"]), 1)
    with pytest.raises(ConfigError, match="no keyword search"):
        sink.search(ask(SearchMode.KEYWORD, text="modes"))
    with pytest.raises(ConfigError, match="vector"):
        sink.search(ask(SearchMode.HYBRID, text="modes"))
    vector = unit_vector("modes two")
    hybrid = sink.search(ask(SearchMode.HYBRID, text="modes", vector=vector))
    assert hybrid == sink.search(ask(SearchMode.VECTOR, vector=vector))
    assert hybrid[0].text == "modes two"


def test_wrong_dimension_is_refused(tmp_path: Path) -> None:
    sink = QdrantSink(QdrantOptions(), sink_context(tmp_path))
    doc = make_document("dim", Access(public=True))
    with pytest.raises(FatalError, match="dimensions"):
        sink.replace(doc, make_chunks(doc, ["dim"], [[1.0, 0.0]]), 1)
    sink.close()
    with pytest.raises(ConfigError, match="rebuild"):
        QdrantSink(QdrantOptions(), sink_context(tmp_path, dimension=16))


def test_duplicate_chunk_ids_are_an_item_error(sink: QdrantSink) -> None:
    doc = make_document("dup", Access(public=True))
    chunks = make_chunks(doc, ["dup one"])
    with pytest.raises(ItemError, match="twice"):
        sink.replace(doc, [*chunks, *chunks], 1)
    assert sink.revision(doc.document_id) is None


def test_a_folder_in_use_is_a_fatal_error_naming_the_fix(tmp_path: Path) -> None:
    first = QdrantSink(QdrantOptions(), sink_context(tmp_path))
    try:
        with pytest.raises(FatalError, match="another process"):
            QdrantSink(QdrantOptions(), sink_context(tmp_path))
    finally:
        first.close()


def test_an_unreachable_server_is_transient(tmp_path: Path) -> None:
    options = QdrantOptions(url="http://127.0.0.1:9", timeout=2)
    with pytest.raises(TransientError, match="could not be reached"):
        QdrantSink(options, sink_context(tmp_path))


def test_update_access_keeps_text_and_vectors(sink: QdrantSink) -> None:
    doc = make_document("acl", Access(groups=("a",)))
    sink.replace(doc, make_chunks(doc, ["acl text"]), 1)
    before = sink.search(
        ask(SearchMode.VECTOR, vector=unit_vector("acl text"), principals=["group:a"])
    )
    sink.update_access(doc.document_id, Access(groups=("b",)), 2)
    after = sink.search(
        ask(SearchMode.VECTOR, vector=unit_vector("acl text"), principals=["group:b"])
    )
    assert after == before
    assert [r.document_id for r in sink.inventory()] == [doc.document_id]


class _CountingClient:
    """The real client, with every call it is asked for counted by name."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        self.calls[name] += 1
        return getattr(self._client, name)


@pytest.mark.parametrize("indexed", [False, True], ids=["local-one-pass", "server-filter"])
def test_inventory_calls_grow_with_pages_not_documents(
    sink: QdrantSink, monkeypatch: pytest.MonkeyPatch, indexed: bool
) -> None:
    """A count per document was a full scan each in local mode (52 s for 2,000 documents).
    ``indexed`` runs the server's query (a facet filtered on the live tokens) in local mode."""
    monkeypatch.setattr(qdrant_sink, "INVENTORY_PAGE", 4)
    sink._indexed = indexed
    docs = [make_document(f"page-{i}", Access(public=True)) for i in range(10)]
    for i, doc in enumerate(docs):
        sink.replace(doc, make_chunks(doc, [f"page {i} part {j}" for j in range(i % 3 + 1)]), 2)
    sink.delete(docs[4].document_id, 3)
    with fail_midway(sink), pytest.raises(InjectedFault):  # leftovers of a dead write
        sink.replace(docs[5], make_chunks(docs[5], [f"dead {j}" for j in range(6)]), 3)
    never = make_document("page-never", Access(public=True))
    with fail_midway(sink), pytest.raises(InjectedFault):  # a first write that never completed
        sink.replace(never, make_chunks(never, ["never one", "never two"]), 1)
    counting = _CountingClient(sink._client)
    sink._client = counting  # type: ignore[assignment]
    rows = list(sink.inventory())
    expected = sorted((d.document_id, 2, i % 3 + 1) for i, d in enumerate(docs) if i != 4)
    assert [(r.document_id, r.revision, r.chunks) for r in rows] == expected
    pages = -(-12 // 4)  # 12 records (a tombstone and a never-live one among them), 4 a page
    assert counting.calls["count"] <= pages and counting.calls["facet"] <= pages
    assert sum(counting.calls.values()) <= 3 * pages, counting.calls  # never one per document
