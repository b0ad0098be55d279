"""What the opensearch index does beyond the conformance suite, against the fake cluster:
bulk item errors, refresh, the read alias, mappings on open, the ACL filter inside k-NN."""

from __future__ import annotations

import dataclasses
import math
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from fakes.opensearch import FakeOpensearch
from headwater.errors import ConfigError, CredentialError, FatalError, TransientError
from headwater.sinks.opensearch import OpensearchBulkError, OpensearchOptions, OpensearchSink
from headwater.sinks.opensearch import _sink as opensearch_sink
from headwater.sinks.testing import (
    EVERYONE,
    ask,
    make_chunks,
    make_document,
    sink_context,
    unit_vector,
)
from headwater.types import Access, SearchMode, caller_principals


@pytest.fixture(scope="module")
def cluster() -> Iterator[FakeOpensearch]:
    with FakeOpensearch(user="admin", password="pw") as fake:
        yield fake


@pytest.fixture
def options(cluster: FakeOpensearch) -> OpensearchOptions:
    return OpensearchOptions(url=cluster.url, username="admin", password="pw", replicas=0)


@pytest.fixture
def sink(options: OpensearchOptions, tmp_path: Path) -> Iterator[OpensearchSink]:
    context = sink_context(tmp_path, name=f"t{uuid.uuid4().hex[:12]}")
    sink = OpensearchSink(options, context)
    yield sink
    sink.close()


def test_a_failed_bulk_item_is_a_sink_failure_naming_its_error(
    sink: OpensearchSink, cluster: FakeOpensearch
) -> None:
    doc = make_document("bulk", Access(public=True))
    old = make_chunks(doc, ["bulk old one", "bulk old two"])
    sink.replace(doc, old, 1)
    cluster.fail_items(sink.index, 1, "mapper_parsing_exception", "failed to parse field [x]")
    with pytest.raises(OpensearchBulkError, match="mapper_parsing_exception") as failed:
        sink.replace(doc, make_chunks(doc, ["bulk new a", "bulk new b", "bulk new c"]), 2)
    assert len(failed.value.items) == 1 and isinstance(failed.value, FatalError)
    assert sink.revision(doc.document_id) == 1 and sink.count(doc.document_id) == 2
    hits = sink.search(ask(SearchMode.KEYWORD, text="bulk new", k=10))
    assert {h.chunk_id for h in hits} == {c.chunk.chunk_id for c in old}
    cluster.fail_items(sink.index, 1, "es_rejected_execution_exception", "queue full", 429)
    with pytest.raises(TransientError, match="overloaded"):
        sink.replace(doc, make_chunks(doc, ["bulk newer"]), 3)
    wrong = {"chunk_id": "c", "document_id": "d", "vector": [0.1, 0.2, 0.3]}
    with pytest.raises(OpensearchBulkError, match="Vector dimension mismatch"):
        sink._api.bulk([({"index": {"_index": sink.index, "_id": "bad"}}, wrong)])


def test_every_write_is_searchable_when_it_returns(
    sink: OpensearchSink, cluster: FakeOpensearch
) -> None:
    start = len(cluster.log)
    doc = make_document("fresh", Access(public=True))
    sink.replace(doc, make_chunks(doc, ["fresh water"]), 1)
    sink.update_access(doc.document_id, Access(groups=("a",)), 2)
    sink.delete(doc.document_id, 3)
    writes = [r for r in cluster.log[start:] if r.path.endswith(("/_bulk", "/_delete_by_query"))]
    assert writes and all(r.params.get("refresh") in ("wait_for", "true") for r in writes)
    bulks = [r.body for r in cluster.log[start:] if r.path == "/_bulk"]
    assert all('"update"' not in body for body in bulks)  # whole documents, never partial


def test_the_read_alias_moves_in_one_call_and_back(
    options: OpensearchOptions, cluster: FakeOpensearch, tmp_path: Path
) -> None:
    first = OpensearchSink(options, sink_context(tmp_path, name="aliased"))
    second = OpensearchSink(options, dataclasses.replace(first.context, generation=2))
    try:
        assert cluster.aliases[first.alias] == {first.index}  # the first one opened names it
        one = make_document("alias-one", Access(public=True))
        two = make_document("alias-two", Access(public=True))
        first.replace(one, make_chunks(one, ["alias river one"]), 1)
        second.replace(two, make_chunks(two, ["alias river two"]), 1)
        start = len(cluster.log)
        second.publish()  # rebuild switch
        moves = [r for r in cluster.log[start:] if r.path == "/_aliases"]
        assert len(moves) == 1
        assert moves[0].body["actions"] == [
            {"remove": {"index": first.index, "alias": first.alias}},
            {"add": {"index": second.index, "alias": first.alias}},
        ]
        through = cluster._index(first.alias).search({"query": {"match_all": {}}})
        assert {h["_source"]["document_id"] for h in through["hits"]["hits"]} == {two.document_id}
        first.publish()  # rollback
        assert cluster.aliases[first.alias] == {first.index}
    finally:
        second.drop()
        first.drop()
    assert first.alias not in cluster.aliases


def test_a_mapping_mismatch_is_a_clear_error(
    sink: OpensearchSink, options: OpensearchOptions
) -> None:
    with pytest.raises(ConfigError, match=r"vector\.dimension = 8.*headwater rebuild"):
        OpensearchSink(options, dataclasses.replace(sink.context, dimension=4))
    faiss = options.model_copy(update={"engine": "faiss"})
    with pytest.raises(ConfigError, match=r"vector\.method\.engine = 'lucene'"):
        OpensearchSink(faiss, sink.context)


def test_the_acl_filter_sits_inside_the_knn_query(
    sink: OpensearchSink, cluster: FakeOpensearch
) -> None:
    hidden = make_document("knn-hidden", Access(groups=("hidden",)))
    seen = make_document("knn-seen", Access(groups=("seen",)))
    query = unit_vector("knn query")
    sink.replace(hidden, make_chunks(hidden, ["knn hidden"], [query]), 1)
    sink.replace(seen, make_chunks(seen, ["knn seen"], [unit_vector("far away")]), 1)
    start = len(cluster.log)
    caller = caller_principals(None, ["seen"])
    hits = sink.search(ask(SearchMode.VECTOR, vector=query, principals=caller, k=1))
    assert [h.text for h in hits] == ["knn seen"]
    searched = next(r.body for r in cluster.log[start:] if r.path.endswith("/_search"))
    knn = searched["query"]["knn"]["vector"]
    assert knn["filter"] == {"bool": {"filter": [{"terms": {"principals": caller}}]}}
    expected = sum(a * b for a, b in zip(query, unit_vector("far away"), strict=True))
    assert math.isclose(hits[0].score, expected, abs_tol=1e-9)  # cosine, not (1 + cos) / 2
    for text in ("", "  ", "?!"):
        assert sink.search(ask(SearchMode.KEYWORD, text=text, principals=EVERYONE)) == []


def test_a_crash_between_switch_and_cleanup_leaves_leftovers_nobody_sees(
    sink: OpensearchSink, cluster: FakeOpensearch
) -> None:
    doc = make_document("leftover", Access(public=True))
    sink.replace(doc, make_chunks(doc, ["leftover old a", "leftover old b"]), 1)
    new = make_chunks(doc, ["leftover new"], pipeline="p2")
    cluster.fail_http(f"/{sink.index}/_delete_by_query", 503)
    with pytest.raises(TransientError, match="503"):
        sink.replace(doc, new, 2)
    assert len(cluster.indexes[sink.index].docs) == 3
    assert sink.revision(doc.document_id) == 2 and sink.count(doc.document_id) == 1
    assert [(r.revision, r.chunks) for r in sink.inventory()] == [(2, 1)]
    for mode in (SearchMode.KEYWORD, SearchMode.VECTOR):
        vector = None if mode is SearchMode.KEYWORD else unit_vector("leftover old a")
        hits = sink.search(ask(mode, text="leftover old a", vector=vector, k=10))
        assert [h.text for h in hits] == ["leftover new"], mode
    sink.replace(doc, new, 3)
    assert len(cluster.indexes[sink.index].docs) == 1


def test_credentials_outages_and_options(cluster: FakeOpensearch, tmp_path: Path) -> None:
    context = sink_context(tmp_path, name="creds")
    wrong = OpensearchOptions(url=cluster.url, username="admin", password="nope")
    with pytest.raises(CredentialError, match="security_exception"):
        OpensearchSink(wrong, context)
    with pytest.raises(TransientError, match="could not be reached"):
        OpensearchSink(OpensearchOptions(url="http://127.0.0.1:9", timeout=2), context)
    with pytest.raises(ValidationError, match="lowercase"):
        OpensearchOptions(url=cluster.url, index="Upper")
    with pytest.raises(ValidationError, match="both username and password"):
        OpensearchOptions(url=cluster.url, username="admin")
    assert "s3cret" not in repr(OpensearchOptions(url=cluster.url, username="u", password="s3cret"))


def test_the_sink_is_registered_by_entry_point() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    sinks = pyproject["project"]["entry-points"]["headwater.sinks"]
    assert sinks["opensearch"] == "headwater.sinks.opensearch:OpensearchSink"


def test_pages_of_chunks_and_records_are_all_read(
    sink: OpensearchSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(opensearch_sink, "CHUNK_PAGE", 3)
    monkeypatch.setattr(opensearch_sink, "BULK_BATCH", 4)
    monkeypatch.setattr(opensearch_sink, "PAGE", 2)
    docs = [make_document(f"paged{i}", Access(public=True)) for i in range(5)]
    for i, doc in enumerate(docs):
        sink.replace(doc, make_chunks(doc, [f"paged {i} part {j}" for j in range(7 + i)]), 1)
    big = docs[-1].document_id
    assert sink.chunk_texts(big) == [f"paged 4 part {j}" for j in range(11)]
    assert sink.update_access(big, Access(groups=("a",)), 2).value == "applied"
    assert sink.count(big) == 11 and sink.chunk_texts(big)[-1] == "paged 4 part 10"
    rows = list(sink.inventory())
    assert [r.document_id for r in rows] == sorted(d.document_id for d in docs)
    assert {r.document_id: r.chunks for r in rows} == {
        d.document_id: 7 + i for i, d in enumerate(docs)
    }


def test_an_index_of_schema_1_gains_the_scopes_field_on_open(
    cluster: FakeOpensearch, options: OpensearchOptions, tmp_path: Path
) -> None:
    """A chunk index made before folder scopes (strict mapping, no ``scopes``) gets the
    field added to its mapping when opened, so writes and scoped searches work on it."""
    context = sink_context(tmp_path, name=f"t{uuid.uuid4().hex[:12]}")
    first = OpensearchSink(options, context)
    first.close()
    del cluster.indexes[first.index].mappings["properties"]["scopes"]
    sink = OpensearchSink(options, context)
    try:
        assert cluster.indexes[sink.index].mappings["properties"]["scopes"] == {"type": "keyword"}
        doc = make_document("old", Access(public=True), hierarchy="team/a.md")
        sink.replace(doc, make_chunks(doc, ["scoped granite"]), 1)
        scoped = ask(SearchMode.KEYWORD, text="granite", scopes=["docs:team"])
        assert [h.document_id for h in sink.search(scoped)] == [doc.document_id]
    finally:
        sink.close()
