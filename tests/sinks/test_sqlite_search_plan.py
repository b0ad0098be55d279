"""The sqlite index's search plan: the source filter left out only when it passes every
chunk, decided in the search's own snapshot, bm25 called in the statement ranking
exactly as FTS5's ``rank`` did, and the exact vector ranking a join that ranks as the
``IN`` list did."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from headwater.sinks.sqlite import SqliteOptions, SqliteSink, _keyword
from headwater.sinks.sqlite import _search as plan
from headwater.sinks.testing import ask, make_chunks, make_document, sink_context, unit_vector
from headwater.types import Access, SearchMode

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sink(tmp_path: Path) -> Iterator[SqliteSink]:
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path))
    yield sink
    sink.close()


def put(sink: SqliteSink, name: str, source: str, text: str, access: Access | None = None) -> None:
    doc = make_document(name, access or Access(public=True), source=source)
    sink.replace(doc, make_chunks(doc, [text]), 1)


def needed(sink: SqliteSink, sources: Sequence[str] | None) -> Sequence[str] | None:
    return plan.needed_sources(sink._db, sources)


def test_the_source_filter_is_left_out_only_when_every_held_source_is_asked_for(
    sink: SqliteSink,
) -> None:
    assert needed(sink, ["a"]) is None  # an empty index holds no other source
    # names that are prefixes of each other and sort around each other: strict gaps
    for source in ("ab", "a", "b"):
        put(sink, f"doc-{source}", source, f"plan {source}")
    assert needed(sink, ["a", "ab", "b"]) is None
    assert needed(sink, ["b", "ab", "a", "zz"]) is None  # order and extra names do not matter
    assert needed(sink, ["a", "b"]) == ["a", "b"]  # "ab" lies between them
    assert needed(sink, ["ab", "b"]) == ["ab", "b"]  # "a" lies below
    assert needed(sink, ["a", "ab"]) == ["a", "ab"]  # "b" lies above
    assert needed(sink, None) is None and needed(sink, []) == []


def test_hundreds_of_sources_are_probed_in_several_statements(sink: SqliteSink) -> None:
    names = [f"s{i:03d}" for i in range(2 * plan.PROBES + 50)]
    for name in names:
        put(sink, name, name, f"many {name}")
    assert needed(sink, names) is None
    for left_out in (names[0], names[plan.PROBES + 1], names[-1]):
        rest = [n for n in names if n != left_out]
        assert needed(sink, rest) == rest, left_out
        found = sink.search(ask(SearchMode.KEYWORD, text=f"many {left_out}", sources=rest, k=5))
        assert found and left_out not in {h.source for h in found}


def test_a_tombstone_of_another_source_keeps_the_filter_until_it_is_forgotten(
    sink: SqliteSink,
) -> None:
    put(sink, "kept", "kept", "tombstone kept")
    put(sink, "gone", "gone", "tombstone gone")
    doc = make_document("gone", Access(public=True), source="gone")
    sink.delete(doc.document_id, 2)
    assert needed(sink, ["kept"]) == ["kept"]  # safe: a held row of another source
    sink.forget_tombstones([doc.document_id])
    assert needed(sink, ["kept"]) is None
    hits = sink.search(ask(SearchMode.KEYWORD, text="tombstone", sources=["kept"]))
    assert [h.source for h in hits] == ["kept"]


def test_an_older_file_gets_the_source_index_on_open(tmp_path: Path) -> None:
    context = sink_context(tmp_path)
    first = SqliteSink(SqliteOptions(), context)
    put(first, "one", "one", "older file")
    first._db.execute("DROP INDEX documents_source")
    first.close()
    again = SqliteSink(SqliteOptions(), context)
    try:
        names = [r[0] for r in again._db.execute("SELECT name FROM sqlite_master")]
        assert "documents_source" in names
        found = again.search(ask(SearchMode.KEYWORD, text="older", sources=["one"]))
        assert [h.source for h in found] == ["one"]
    finally:
        again.close()


WRITER = """
import sys
from pathlib import Path
from headwater.sinks.sqlite import SqliteOptions, SqliteSink
from headwater.sinks.testing import make_chunks, make_document, sink_context
from headwater.types import Access
sink = SqliteSink(SqliteOptions(), sink_context(Path(sys.argv[1])))
doc = make_document("late", Access(public=True), source="other")
sink.replace(doc, make_chunks(doc, ["race race race"]), 1)
sink.close()
"""


@pytest.mark.parametrize("mode", [SearchMode.KEYWORD, SearchMode.VECTOR])
def test_a_source_written_by_another_process_mid_search_is_never_returned(
    tmp_path: Path, sink: SqliteSink, monkeypatch: pytest.MonkeyPatch, mode: SearchMode
) -> None:
    """Another process commits a document of a source the caller did not ask for after the
    search decided to leave the filter out: the search's snapshot does not see it."""
    put(sink, "mine", "mine", "race mine")
    decide = plan.needed_sources
    wrote: list[bool] = []

    def then_another_process_writes(
        db: plan.Database, sources: Sequence[str] | None
    ) -> Sequence[str] | None:
        decided = decide(db, sources)
        if not wrote:
            env = {"PYTHONPATH": f"{ROOT / 'src'}", "HF_HUB_OFFLINE": "1"}
            subprocess.run([sys.executable, "-c", WRITER, str(tmp_path)], check=True, env=env)
            wrote.append(True)
        return decided

    monkeypatch.setattr(plan, "needed_sources", then_another_process_writes)
    monkeypatch.setattr(_keyword, "needed_sources", then_another_process_writes)
    vector = unit_vector("race race race") if mode is SearchMode.VECTOR else None
    hits = sink.search(ask(mode, text="race", vector=vector, sources=["mine"]))
    assert wrote and [h.source for h in hits] == ["mine"]
    # the next search plans afresh: the filter is back, and still only "mine" is found
    again = sink.search(ask(mode, text="race", vector=vector, sources=["mine"]))
    assert [h.source for h in again] == ["mine"]
    everyone = sink.search(ask(mode, text="race", vector=vector, sources=["mine", "other"]))
    assert {h.source for h in everyone} == {"mine", "other"}


def test_keyword_scores_and_order_are_fts5_ranks(sink: SqliteSink) -> None:
    """``bm25()`` in the statement gives what ``ORDER BY rank`` gave: the same chunks, the
    same scores, ties by chunk id; over random texts, ACLs, sources and queries."""
    rng = random.Random(29)
    words = [f"w{i}" for i in range(200)]  # none in half the chunks: no term is dropped
    groups = [Access(public=True), Access(groups=("g1",)), Access(groups=("g2",))]
    for i in range(150):
        doc = make_document(f"d{i}", rng.choice(groups), source=rng.choice(["s1", "s2"]))
        texts = [" ".join(rng.choices(words, k=rng.randint(3, 40))) for _ in range(3)]
        sink.replace(doc, make_chunks(doc, texts), 1)
    for _ in range(40):
        query = " ".join(rng.sample(words, rng.randint(1, 3)))
        principals = rng.choice([["public"], ["group:g1"], ["public", "group:g2"]])
        sources = rng.choice([None, ["s1"], ["s1", "s2"]])
        k = rng.choice([1, 5, 80])
        request = ask(SearchMode.KEYWORD, text=query, principals=principals, k=k, sources=sources)
        found = [(h.chunk_id, h.score) for h in sink.search(request)]
        assert found == rank_ordered(sink, query, principals, sources, k), query


def rank_ordered(
    sink: SqliteSink, query: str, principals: list[str], sources: list[str] | None, k: int
) -> list[tuple[str, float]]:
    """The top ``k`` by FTS5's configured ``rank`` (ties by rowid), every match scored."""
    terms = plan.fts_terms(query)
    match = f"{{text title}} : ({' OR '.join(terms)}) AND {plan.acl_match(principals, sources)}"
    rows = sink._db.execute(
        "SELECT c.chunk_id, f.rank, f.rowid FROM fts f JOIN chunks c ON c.id = f.rowid "
        "WHERE fts MATCH ?",
        [match],
    )
    ranked = sorted(rows, key=lambda row: (row[1], row[2]))[:k]
    return [(str(chunk), -float(rank)) for chunk, rank, _ in ranked]


@pytest.mark.parametrize("copies_mb", [0, 256])
def test_the_exact_vector_ranking_joins_the_acl_match_and_ranks_as_an_in_list(
    tmp_path: Path, copies_mb: int
) -> None:
    """Without int8 copies the exact path reads the ACL match's rows and looks each vector
    up by id (no temporary list of every visible id); with or without them its hits are
    the ones ``v.id IN (match)`` ranks, scores and ties included, over random ACLs,
    sources and queries."""
    sink = SqliteSink(SqliteOptions(vector_copies_mb=copies_mb), sink_context(tmp_path))
    rng = random.Random(7)
    groups = [Access(public=True), Access(groups=("g1",)), Access(groups=("g2",))]
    for i in range(120):
        doc = make_document(f"d{i}", rng.choice(groups), source=rng.choice(["s1", "s2"]))
        sink.replace(doc, make_chunks(doc, [f"v{i} {n}" for n in range(rng.randint(1, 4))]), 1)
    statements: list[str] = []
    execute = sink._db.execute

    def spy(sql: str, args: Sequence[object] = ()) -> list[tuple[object, ...]]:
        statements.append(sql)
        return execute(sql, args)

    sink._db.execute = spy  # type: ignore[method-assign]
    for trial in range(30):
        vector = unit_vector(f"q{trial}")
        principals = rng.choice([["public"], ["group:g1"], ["public", "group:g2"]])
        sources = rng.choice([None, ["s1"]])
        request = ask(
            SearchMode.VECTOR, vector=vector, principals=principals, k=rng.choice([1, 5, 50]),
            sources=sources,
        )  # fmt: skip
        found = [(h.chunk_id, h.score) for h in sink.search(request)]
        assert found == in_list_ranked(execute, vector, principals, sources, request.k)
    ranking = next(s for s in statements if "vec_distance_cosine" in s)
    steps = [row[3] for row in execute(f"EXPLAIN QUERY PLAN {ranking}", [b"", "x", 1])]
    sink.close()
    if copies_mb:
        return
    assert any("SEARCH v USING INTEGER PRIMARY KEY" in step for step in steps), steps
    assert not any("LIST SUBQUERY" in step for step in steps), steps


Execute = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


def in_list_ranked(
    execute: Execute, vector: list[float], principals: list[str], sources: list[str] | None, k: int
) -> list[tuple[str, float]]:
    """The top ``k`` by ``v.id IN (SELECT rowid … MATCH …)``, the statement's older form."""
    rows = execute(
        "SELECT c.chunk_id, 1.0 - vec_distance_cosine(v.embedding, ?) AS score, v.id "
        "FROM vectors v JOIN chunks c ON c.id = v.id "
        "WHERE v.id IN (SELECT rowid FROM fts WHERE fts MATCH ?)",
        [np.asarray(vector, np.float32).tobytes(), plan.acl_match(principals, sources)],
    )
    ranked = sorted(rows, key=lambda row: (-row[1], row[2]))[:k]
    return [(str(chunk), float(score)) for chunk, score, _ in ranked]
