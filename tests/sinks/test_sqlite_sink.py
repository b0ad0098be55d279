"""What the sqlite index does beyond the conformance suite: query escaping, bindings,
atomic rollback, FTS consistency, the ubiquitous-term shortcut and its options."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn
from unittest import mock

import pytest

from headwater.errors import ConfigError, FatalError, ItemError
from headwater.search.service import run_search
from headwater.sinks.base import WriteOutcome
from headwater.sinks.sqlite import SqliteOptions, SqliteSink, _search, fts_query
from headwater.sinks.sqlite._driver import DRIVERS, DriverName, DriverUnavailable, connect
from headwater.sinks.testing import (
    ask,
    make_chunks,
    make_document,
    near,
    sink_context,
    unit_vector,
)
from headwater.types import Access, EmbeddedChunk, SearchMode


@pytest.fixture
def sink(tmp_path: Path) -> Iterator[SqliteSink]:
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path))
    yield sink
    sink.close()


def fts_ok(sink: SqliteSink) -> None:
    sink._db.execute("INSERT INTO fts (fts) VALUES ('integrity-check')")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('foo-bar "x', '"foo-bar" OR """x"'),
        ("AND OR NOT", '"AND" OR "OR" OR "NOT"'),
        ("NEAR(a b) c*", '"NEAR(a" OR "b)" OR "c*"'),
        ("  repeat repeat  ", '"repeat"'),
        ('- " * ( )', None),
        ("", None),
        ("foo\x00bar\tbaz", '"foo" OR "bar" OR "baz"'),
    ],
)
def test_fts_query_quotes_every_token(text: str, expected: str | None) -> None:
    assert fts_query(text) == expected


def test_hostile_keyword_text_never_raises(sink: SqliteSink) -> None:
    doc = make_document("hostile", Access(public=True))
    sink.replace(doc, make_chunks(doc, ['he said "foo-bar" near(x) col:umn']), 1)
    for text in [
        'foo-bar "x',
        "col:umn",
        "{text} : x",
        "x AND",
        "NEAR(x",
        "^x",
        "\x00",
        "a\x00b",
        "ü",
    ]:
        sink.search(ask(SearchMode.KEYWORD, text=text))
    hits = sink.search(ask(SearchMode.KEYWORD, text="col:umn"))
    assert [h.document_id for h in hits] == [doc.document_id]


def test_default_path_and_explicit_path(tmp_path: Path) -> None:
    default = SqliteSink(SqliteOptions(), sink_context(tmp_path, name="main"))
    default.close()
    assert (tmp_path / "index-main.db").exists()
    elsewhere = tmp_path / "sub" / "x.db"
    custom = SqliteSink(SqliteOptions(path=elsewhere), sink_context(tmp_path))
    custom.close()
    assert elsewhere.exists()


def test_no_binding_is_a_fatal_error_naming_the_fix(tmp_path: Path) -> None:
    def broken(path: Path) -> NoReturn:
        raise DriverUnavailable("cannot load extensions")

    with pytest.raises(FatalError) as caught:
        connect(tmp_path / "x.db", drivers={"apsw": broken, "pysqlite3": broken})
    message = str(caught.value)
    assert "pip install apsw sqlite-vec" in message and "pysqlite3-binary" in message
    assert "apsw: cannot load extensions" in message


@pytest.mark.parametrize("driver", ["apsw", "pysqlite3"])
def test_the_index_is_read_through_a_memory_map(tmp_path: Path, driver: DriverName) -> None:
    # each `serve` worker then reads the OS page cache's pages, not its own copies
    db = connect(tmp_path / "x.db", driver)
    try:
        assert db.execute("PRAGMA mmap_size")[0][0] >= 2**31 - 2**16
    finally:
        db.close()


def test_auto_falls_back_to_pysqlite3(tmp_path: Path) -> None:
    def broken(path: Path) -> NoReturn:
        raise DriverUnavailable("no apsw here")

    db = connect(tmp_path / "x.db", drivers={"apsw": broken, "pysqlite3": DRIVERS["pysqlite3"]})
    try:
        assert db.driver == "pysqlite3"
        assert db.execute("SELECT vec_version()")[0][0].startswith("v")
    finally:
        db.close()


def test_a_failed_replace_rolls_back_to_the_old_version(sink: SqliteSink) -> None:
    other = make_document("other", Access(public=True))
    taken = make_chunks(other, ["other text"])
    sink.replace(other, taken, 1)
    doc = make_document("atomic", Access(public=True))
    sink.replace(doc, make_chunks(doc, ["atomic old one", "atomic old two"]), 1)
    new = make_chunks(doc, ["atomic new one", "atomic new two"], pipeline="p2")
    # A chunk id already held by another document fails the insert mid-transaction,
    # after the old chunks were deleted: everything must roll back.
    clash = [*new, EmbeddedChunk(chunk=taken[0].chunk, vector=taken[0].vector)]
    with pytest.raises(Exception, match="UNIQUE"):
        sink.replace(doc, clash, 2)
    assert sink.revision(doc.document_id) == 1 and sink.count(doc.document_id) == 2
    hits = sink.search(ask(SearchMode.KEYWORD, text="atomic"))
    assert sorted(h.text for h in hits) == ["atomic old one", "atomic old two"]
    fts_ok(sink)


def test_duplicate_chunk_ids_are_an_item_error(sink: SqliteSink) -> None:
    doc = make_document("dup", Access(public=True))
    chunks = make_chunks(doc, ["dup one"])
    with pytest.raises(ItemError, match="twice"):
        sink.replace(doc, [*chunks, *chunks], 1)
    assert sink.revision(doc.document_id) is None


def test_fts_and_counters_stay_consistent_through_churn(sink: SqliteSink) -> None:
    docs = [make_document(f"churn{i}", Access(groups=(f"g{i % 3}",))) for i in range(12)]
    for revision in range(1, 5):
        for i, doc in enumerate(docs):
            texts = [f"churn {i} rev {revision} part {j}" for j in range((i + revision) % 4 + 1)]
            pipeline = "p1" if revision % 2 else "p2"
            sink.replace(doc, make_chunks(doc, texts, pipeline=pipeline), revision * 10)
            if i % 4 == 0:
                sink.update_access(doc.document_id, Access(public=True), revision * 10 + 1)
            if i % 5 == 0:
                sink.delete(doc.document_id, revision * 10 + 2)
    fts_ok(sink)
    total = sink._db.execute("SELECT count(*) FROM chunks")[0][0]
    vectors = sink._db.execute("SELECT count(*) FROM vectors")[0][0]
    counted = sink._db.execute("SELECT value FROM meta WHERE key = 'chunk_count'")[0][0]
    assert int(counted) == total == vectors == sum(r.chunks for r in sink.inventory())


def test_ubiquitous_terms_are_skipped_only_when_the_rest_fills_k(sink: SqliteSink) -> None:
    for i in range(12):
        doc = make_document(f"common{i}", Access(public=True))
        words = "everywhere " + ("special " if i < 3 else "") + f"filler{i}"
        sink.replace(doc, make_chunks(doc, [words]), 1)
    top = sink.search(ask(SearchMode.KEYWORD, text="everywhere special", k=3))
    assert {h.text.split()[1] for h in top} == {"special"}
    more = sink.search(ask(SearchMode.KEYWORD, text="everywhere special", k=8))
    assert len(more) == 8  # the rare term alone finds 3: the full query ran
    assert [h.text.split()[1] for h in more[:3]] == ["special"] * 3


def test_hybrid_is_fused_by_the_search_service_not_the_sink(sink: SqliteSink) -> None:
    doc = make_document("hybrid", Access(public=True))
    sink.replace(doc, make_chunks(doc, ["hybrid lemon", "hybrid orange", "hybrid lime"]), 1)
    # The vector points at "lime", the words at "orange": fused, both are in the top 2.
    found = run_search(
        [("main", sink)],
        lambda name, text: unit_vector("hybrid lime"),
        "orange",
        user=None,
        groups=(),
        k=2,
        mode="hybrid",
        sources=[doc.source],
        per_document=False,
    )
    assert {r.chunk for r in found} == {"hybrid orange", "hybrid lime"}
    # The sink itself answers plain requests only (no search <-> sinks import cycle).
    with pytest.raises(ConfigError, match="hybrid search is fused"):
        sink.search(ask(SearchMode.HYBRID, text="orange", vector=unit_vector("lime"), k=2))
    # Without a vector, hybrid is keyword search.
    req = ask(SearchMode.HYBRID, text="orange", k=2)
    assert [h.text for h in sink.search(req)] == ["hybrid orange"]


def test_wrong_dimension_is_refused(tmp_path: Path, sink: SqliteSink) -> None:
    doc = make_document("dim", Access(public=True))
    with pytest.raises(FatalError, match="dimensions"):
        sink.replace(doc, make_chunks(doc, ["dim"], [[1.0, 0.0]]), 1)
    with pytest.raises(FatalError, match="dimensions"):
        sink.search(ask(SearchMode.VECTOR, vector=[1.0]))
    with pytest.raises(ConfigError, match="rebuild"):
        SqliteSink(SqliteOptions(), sink_context(tmp_path, dimension=16))


def test_vector_mode_needs_a_vector(sink: SqliteSink) -> None:
    with pytest.raises(ConfigError, match="vector"):
        sink.search(ask(SearchMode.VECTOR))


def test_use_after_close_is_fatal(tmp_path: Path) -> None:
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path))
    sink.close()
    sink.close()
    with pytest.raises(FatalError, match="after close"):
        sink.count("x")


def test_update_access_of_an_unknown_document_is_absent(sink: SqliteSink) -> None:
    outcome = sink.update_access("unknown", Access(public=True), 3)
    assert outcome is WriteOutcome.ABSENT
    assert sink.revision("unknown") is None and list(sink.inventory()) == []


@pytest.mark.parametrize("driver", ["apsw", "pysqlite3"])
def test_a_damaged_index_file_is_a_fatal_error_naming_the_fix(tmp_path: Path, driver: str) -> None:
    damaged = tmp_path / "index-main.db"
    damaged.write_bytes(b"garbage" * 1000)
    with pytest.raises(FatalError) as caught:
        SqliteSink(SqliteOptions(driver=driver), sink_context(tmp_path, name="main"))  # type: ignore[arg-type]
    message = str(caught.value)
    assert f"the index file {damaged} is damaged" in message
    assert f"mv {damaged} {damaged}.damaged" in message and "reconcile --repair" in message


def test_scoped_vector_searches_on_every_planning_path(tmp_path: Path) -> None:
    """Approximate search (``exact_below=0``, few candidates): a scope that holds most chunks is planned
    'wide' on its second search (ACL, source and scope checked row by row on the nearest
    chunks of the whole index); the nearest chunks lie outside it, and every path still
    returns only chunks under the scope."""
    options = SqliteOptions(exact_below=0, candidates=1, wide_from=0)
    sink = SqliteSink(options, sink_context(tmp_path))
    query = unit_vector("scoped q")
    try:
        for i in range(60):
            big = i < 54
            doc = make_document(
                f"d{i}", Access(public=True), hierarchy=f"{'big' if big else 'small'}/{i}.md"
            )
            vector = unit_vector(f"far{i}") if big else near(query, f"n{i}", 0.02)
            sink.replace(doc, make_chunks(doc, [f"scoped chunk {i}"], [vector]), 1)
        for scope, in_big in (("docs:big", True), ("docs:small", False)):
            for _ in range(3):  # the first search records the share, later ones plan by it
                hits = sink.search(ask(SearchMode.VECTOR, vector=query, k=5, scopes=[scope]))
                assert len(hits) == 5
                names = {h.title.removeprefix("Title of d") for h in hits}
                assert all((int(n) < 54) == in_big for n in names), (scope, names)
            assert (
                sink.search(
                    ask(SearchMode.VECTOR, vector=query, k=5, scopes=[scope], sources=["x"])
                )
                == []
            )
    finally:
        sink.close()


@pytest.mark.parametrize(("wide_from", "planned_wide"), [(0, True), (None, False), (200, False)])
def test_a_caller_who_saw_half_the_index_checks_rows_only_past_wide_from(
    tmp_path: Path, wide_from: int | None, planned_wide: bool
) -> None:
    """The row-by-row ACL check replaces listing what a caller sees only when the caller
    saw half the index and at least ``wide_from`` chunks (default 100,000): below that,
    listing the ids costs less than reading their rows."""
    extra = {} if wide_from is None else {"wide_from": wide_from}
    sink = SqliteSink(SqliteOptions(exact_below=0, candidates=1, **extra), sink_context(tmp_path))
    planned: list[bool] = []
    wide = _search._wide

    def spy(*args: Any, **kwargs: Any) -> Any:
        planned.append(True)
        return wide(*args, **kwargs)

    try:
        for i in range(120):
            doc = make_document(f"w{i}", Access(public=True))
            sink.replace(doc, make_chunks(doc, [f"wide chunk {i}"]), 1)
        with mock.patch.object(_search, "_wide", spy):
            for _ in range(3):  # the first search records the share, later ones plan by it
                assert len(sink.search(ask(SearchMode.VECTOR, vector=unit_vector("w"), k=5))) == 5
        assert bool(planned) is planned_wide
    finally:
        sink.close()
