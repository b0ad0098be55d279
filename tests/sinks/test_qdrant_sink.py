"""What the qdrant index does beyond the conformance suite: options, errors, modes."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from headwater.errors import ConfigError, FatalError, ItemError, TransientError
from headwater.sinks.qdrant import QdrantOptions, QdrantSink
from headwater.sinks.testing import ask, make_chunks, make_document, sink_context, unit_vector
from headwater.types import Access, SearchMode


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
