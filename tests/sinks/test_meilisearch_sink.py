"""What the meilisearch index does beyond the conformance suite, against the fake server:
waiting on tasks, failed tasks, settings on open, filters, modes, errors, options."""

from __future__ import annotations

import dataclasses
import math
import struct
import threading
import time
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from fakes.meilisearch import FakeMeilisearch
from headwater.errors import ConfigError, CredentialError, FatalError, TransientError
from headwater.sinks.meilisearch import (
    MeilisearchError,
    MeilisearchOptions,
    MeilisearchSink,
    MeilisearchTaskFailed,
)
from headwater.sinks.meilisearch import _sink as meili_sink
from headwater.sinks.testing import (
    EVERYONE,
    ask,
    make_chunks,
    make_document,
    sink_context,
    unit_vector,
)
from headwater.types import Access, SearchMode, caller_principals

KEY = "k3y"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeMeilisearch]:
    with FakeMeilisearch(master_key=KEY, task_delay=0.01) as fake:
        yield fake


@pytest.fixture
def options(server: FakeMeilisearch) -> MeilisearchOptions:
    return MeilisearchOptions(url=server.url, api_key=KEY)


@pytest.fixture
def name() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def sink(options: MeilisearchOptions, name: str, tmp_path: Path) -> Iterator[MeilisearchSink]:
    sink = MeilisearchSink(options, sink_context(tmp_path, name=name))
    yield sink
    sink.close()


def test_every_write_waits_for_its_task_to_succeed(
    sink: MeilisearchSink, server: FakeMeilisearch
) -> None:
    start = len(server.log)
    doc = make_document("wait", Access(public=True))
    sink.replace(doc, make_chunks(doc, ["wait one", "wait two"]), 1)
    sink.update_access(doc.document_id, Access(groups=("a",)), 2)
    sink.delete(doc.document_id, 3)
    log = server.log[start:]
    enqueued = [(i, r.answer["taskUid"]) for i, r in enumerate(log) if r.status == 202]
    assert len(enqueued) >= 8  # claim, add, switch, delete (x2), tombstone, delete
    for position, task_uid in enqueued:
        polls = []
        for later in log[position + 1 :]:
            if later.method == "GET" and later.path == f"/tasks/{task_uid}":
                polls.append(later.answer["status"])
                if later.answer["status"] == "succeeded":
                    break
            else:
                pytest.fail(
                    f"the sink sent {later.method} {later.path} before task {task_uid} ended"
                )
        assert polls and polls[-1] == "succeeded", polls


def test_a_write_returns_only_once_meilisearch_applied_it(
    sink: MeilisearchSink, server: FakeMeilisearch
) -> None:
    doc = make_document("held", Access(public=True))
    server.pause()
    done = threading.Event()
    worker = threading.Thread(
        target=lambda: (sink.replace(doc, make_chunks(doc, ["held back"]), 1), done.set())
    )
    try:
        worker.start()
        time.sleep(0.3)
        assert not done.is_set()  # still polling an enqueued task
    finally:
        server.resume()
    worker.join(10)
    assert done.is_set()
    assert sink.count(doc.document_id) == 1 and sink.revision(doc.document_id) == 1


def test_a_failed_task_is_a_sink_failure_naming_its_code(
    sink: MeilisearchSink, server: FakeMeilisearch
) -> None:
    doc = make_document("failing", Access(public=True))
    old = make_chunks(doc, ["failing old one", "failing old two"])
    sink.replace(doc, old, 1)
    server.fail_task(
        "no_space_left_on_device",
        "There was no space left on the device.",
        index=sink.index,
        type="documentAdditionOrUpdate",
    )
    with pytest.raises(MeilisearchTaskFailed, match="no_space_left_on_device") as failed:
        sink.replace(doc, make_chunks(doc, ["failing new"]), 2)
    assert failed.value.code == "no_space_left_on_device"
    assert isinstance(failed.value, FatalError)
    assert "docs.meilisearch.com/errors#no_space_left_on_device" in str(failed.value)
    assert sink.revision(doc.document_id) == 1 and sink.count(doc.document_id) == 2
    hits = sink.search(ask(SearchMode.KEYWORD, text="failing", k=10))
    assert {h.chunk_id for h in hits} == {c.chunk.chunk_id for c in old}
    assert sink.replace(doc, make_chunks(doc, ["failing new"]), 2).value == "applied"


def test_a_vector_of_the_wrong_dimension_fails_its_task(sink: MeilisearchSink) -> None:
    bad = {"id": "bad1", "document_id": "d", "_vectors": {"default": [0.1, 0.2, 0.3]}}
    with pytest.raises(MeilisearchTaskFailed) as failed:
        sink._api.add_documents(sink.index, [bad])
    assert failed.value.code == "invalid_vector_dimensions"
    doc = make_document("dims", Access(public=True))
    short = make_chunks(doc, ["dims"], [[1.0, 0.0]])
    with pytest.raises(FatalError, match="2 dimensions"):
        sink.replace(doc, short, 1)


def test_a_crash_between_switch_and_cleanup_leaves_leftovers_nobody_sees(
    sink: MeilisearchSink, server: FakeMeilisearch
) -> None:
    doc = make_document("leftover", Access(public=True))
    sink.replace(doc, make_chunks(doc, ["leftover old a", "leftover old b"]), 1)
    new = make_chunks(doc, ["leftover new"], pipeline="p2")
    server.fail_task("internal", index=sink.index, type="documentDeletion")
    with pytest.raises(MeilisearchTaskFailed, match="internal"):
        sink.replace(doc, new, 2)
    assert len(server.indexes[sink.index].docs) == 3  # both writes are stored
    assert sink.revision(doc.document_id) == 2 and sink.count(doc.document_id) == 1
    assert [(r.revision, r.chunks) for r in sink.inventory()] == [(2, 1)]
    assert sink.chunk_texts(doc.document_id) == ["leftover new"]
    for mode in (SearchMode.KEYWORD, SearchMode.VECTOR):
        vector = None if mode is SearchMode.KEYWORD else unit_vector("leftover old a")
        hits = sink.search(ask(mode, text="leftover old a", vector=vector, k=10))
        assert [h.text for h in hits] == ["leftover new"], mode
    sink.replace(doc, new, 3)  # the next write deletes the leftovers
    assert len(server.indexes[sink.index].docs) == 1


def test_documents_are_always_sent_whole(sink: MeilisearchSink, server: FakeMeilisearch) -> None:
    start = len(server.log)
    doc = make_document("whole", Access(users=("x@example.com",)))
    sink.replace(doc, make_chunks(doc, ["whole one"]), 1)
    sink.update_access(doc.document_id, Access(groups=("b",)), 2)
    log = server.log[start:]
    assert not [r for r in log if r.method == "PUT"]  # never the merging add-or-update
    added = [
        r.body for r in log if r.method == "POST" and r.path == f"/indexes/{sink.index}/documents"
    ]
    fields = {"id", "chunk_id", "document_id", "ordinal", "text", "title", "locator"}
    fields |= {"source", "source_key", "scope_key", "principals", "acl", "revision", "write"}
    fields |= {"_vectors"}
    assert len(added) == 2 and all(set(d) == fields for body in added for d in body)
    # the vector Meilisearch stored (float32) is sent back as it is
    stored = [
        struct.unpack("f", struct.pack("f", v))[0] for v in added[0][0]["_vectors"]["default"]
    ]
    assert added[1][0]["_vectors"] == {"default": stored}
    assert added[1][0]["principals"] == ["group:b"]


def test_settings_are_applied_and_verified_on_open(
    sink: MeilisearchSink, server: FakeMeilisearch
) -> None:
    settings = server.indexes[sink.index].settings
    assert set(settings["filterableAttributes"]) == {
        "document_id",
        "acl",
        "source_key",
        "scope_key",
        "write",
    }
    assert settings["searchableAttributes"] == ["text", "title"]
    assert settings["embedders"] == {"default": {"source": "userProvided", "dimensions": 8}}
    assert server.indexes[sink.index].primary_key == "id"
    records = server.indexes[sink.records].settings
    assert records["sortableAttributes"] == ["document_id"]


def test_a_lost_setting_is_applied_again(
    sink: MeilisearchSink, server: FakeMeilisearch, options: MeilisearchOptions
) -> None:
    sink._api.write("PATCH", f"/indexes/{sink.index}/settings", {"filterableAttributes": []})
    again = MeilisearchSink(options, sink.context)
    try:
        assert "acl" in server.indexes[sink.index].settings["filterableAttributes"]
    finally:
        again.close()


def test_a_settings_mismatch_is_a_clear_error(
    sink: MeilisearchSink, server: FakeMeilisearch, options: MeilisearchOptions
) -> None:
    wider = dataclasses.replace(sink.context, dimension=4)
    with pytest.raises(ConfigError, match=r"embedders\.default\.dimensions = 8.*headwater rebuild"):
        MeilisearchSink(options, wider)
    assert server.indexes[sink.index].settings["embedders"]["default"]["dimensions"] == 8
    sink._api.write("POST", "/indexes", {"uid": "foreign_pk", "primaryKey": "pk"})
    foreign = MeilisearchOptions(url=options.url, api_key=KEY, index="foreign_pk")
    with pytest.raises(ConfigError, match="primary key 'pk'"):
        MeilisearchSink(foreign, sink.context)


def test_the_acl_filter_runs_inside_the_search(sink: MeilisearchSink) -> None:
    odd = make_document("odd", Access(groups=('we"ird\\name',)))
    plain = make_document("plain", Access(groups=("a",)))
    sink.replace(odd, make_chunks(odd, ["acl river odd"]), 1)
    sink.replace(plain, make_chunks(plain, ["acl river plain"]), 1)
    odd_caller = caller_principals(None, ['we"ird\\name'])
    for mode in (SearchMode.KEYWORD, SearchMode.VECTOR, SearchMode.HYBRID):
        vector = None if mode is SearchMode.KEYWORD else unit_vector("acl river odd")
        hits = sink.search(ask(mode, text="acl river", vector=vector, principals=odd_caller))
        assert [h.text for h in hits] == ["acl river odd"], mode
        everyone = sink.search(ask(mode, text="acl river", vector=vector, principals=EVERYONE))
        assert [h.text for h in everyone] == ["acl river plain"], mode


def test_principals_that_differ_only_in_case_stay_apart(sink: MeilisearchSink) -> None:
    """Meilisearch matches filter strings case-insensitively; the ACL keys are opaque."""
    upper = make_document("case-upper", Access(groups=("Admins",)))
    sink.replace(upper, make_chunks(upper, ["case harbour"]), 1)
    lower_caller = caller_principals(None, ["admins"])
    for mode in (SearchMode.KEYWORD, SearchMode.VECTOR):
        vector = None if mode is SearchMode.KEYWORD else unit_vector("case harbour")
        found = sink.search(ask(mode, text="case harbour", vector=vector, principals=lower_caller))
        assert found == [], mode
        upper_caller = caller_principals(None, ["Admins"])
        found = sink.search(ask(mode, text="case harbour", vector=vector, principals=upper_caller))
        assert [h.text for h in found] == ["case harbour"], mode


def test_the_fake_refuses_a_filter_on_an_attribute_that_is_not_filterable(
    sink: MeilisearchSink,
) -> None:
    with pytest.raises(MeilisearchError) as refused:
        sink._api.search(sink.index, {"q": "x", "filter": 'text = "x"'})
    assert refused.value.code == "invalid_search_filter"
    with pytest.raises(MeilisearchTaskFailed) as failed:
        sink._api.delete_where(sink.index, 'title = "x"')
    assert failed.value.code == "invalid_document_filter"


def test_vector_scores_are_cosine_and_keyword_text_is_plain(sink: MeilisearchSink) -> None:
    doc = make_document("cos", Access(public=True))
    chunks = make_chunks(doc, ["cos alpha", "cos beta"])
    sink.replace(doc, chunks, 1)
    query = unit_vector("a query")
    hits = sink.search(ask(SearchMode.VECTOR, vector=query, k=2))
    for hit in hits:
        vector = next(c.vector for c in chunks if c.chunk.chunk_id == hit.chunk_id)
        assert vector is not None
        expected = sum(a * b for a, b in zip(query, vector, strict=True))
        assert math.isclose(hit.score, expected, abs_tol=1e-5)
    for text in ("", "*", '"', "-"):
        assert sink.search(ask(SearchMode.KEYWORD, text=text)) == []
    negated = sink.search(ask(SearchMode.KEYWORD, text='-"cos beta'))
    assert negated and negated[0].text == "cos beta"  # not read as "exclude cos beta"
    with pytest.raises(ConfigError, match="vector"):
        sink.search(ask(SearchMode.VECTOR, text="cos"))


def test_credentials_and_outages_map_to_the_error_groups(
    server: FakeMeilisearch, tmp_path: Path, sink: MeilisearchSink
) -> None:
    context = sink_context(tmp_path, name="keyed")
    with pytest.raises(CredentialError, match="invalid_api_key"):
        MeilisearchSink(MeilisearchOptions(url=server.url, api_key="wrong"), context)
    with pytest.raises(CredentialError, match="missing_authorization_header"):
        MeilisearchSink(MeilisearchOptions(url=server.url), context)
    server.fail_http(f"/indexes/{sink.index}/search", 503)
    with pytest.raises(TransientError, match="503"):
        sink.search(ask(SearchMode.KEYWORD, text="anything"))
    with pytest.raises(TransientError, match="could not be reached"):
        MeilisearchSink(MeilisearchOptions(url="http://127.0.0.1:9", timeout=2), context)


def test_generations_and_options(server: FakeMeilisearch, tmp_path: Path) -> None:
    context = dataclasses.replace(sink_context(tmp_path, name="main"), generation=2)
    sink = MeilisearchSink(MeilisearchOptions(url=server.url, api_key=KEY), context)
    try:
        assert (sink.index, sink.records) == ("headwater_main__g2", "headwater_main__g2_revisions")
    finally:
        sink.drop()
    assert "headwater_main__g2" not in server.indexes
    with pytest.raises(ValidationError, match="index uid"):
        MeilisearchOptions(url=server.url, index="has space")
    with pytest.raises(ValidationError):
        MeilisearchOptions.model_validate({"url": server.url, "unknown": 1})
    assert "s3cret" not in repr(MeilisearchOptions(url=server.url, api_key="s3cret"))


def test_the_sink_is_registered_by_entry_point() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    sinks = pyproject["project"]["entry-points"]["headwater.sinks"]
    assert sinks["meilisearch"] == "headwater.sinks.meilisearch:MeilisearchSink"


def test_pages_of_chunks_and_records_are_all_read(
    sink: MeilisearchSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(meili_sink, "FETCH_PAGE", 3)
    monkeypatch.setattr(meili_sink, "ADD_BATCH", 4)
    monkeypatch.setattr(meili_sink, "PAGE", 2)
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
    sink.forget_tombstones([d.document_id for d in docs])  # live: untouched
    assert sink.revision(big) == 2
