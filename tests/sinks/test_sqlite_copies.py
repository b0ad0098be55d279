"""The sqlite index's int8 vector copies (``_copies``): their error bound holds for every
vector sqlite-vec can score, a narrowed exact ranking returns what ranking every visible
chunk in SQL returns (rows, scores, ties), and the copies follow another process's writes.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from headwater.sinks.sqlite import SqliteOptions, SqliteSink, _copies
from headwater.sinks.sqlite._copies import VectorCopies, cosines, epsilon, quantize, unit_query
from headwater.sinks.testing import ask, make_chunks, make_document, near, sink_context
from headwater.types import Access, SearchHit, SearchMode

ROOT = Path(__file__).resolve().parents[2]
DIM = 16


def strange_vectors(rng: np.random.Generator, dimension: int) -> np.ndarray:
    """Gaussian, huge, tiny, one-hot, near-duplicate, zero and non-finite rows."""
    base = rng.standard_normal(dimension)
    rows = [
        *rng.standard_normal((40, dimension)),
        *(rng.standard_normal((5, dimension)) * 1e30),
        *(rng.standard_normal((5, dimension)) * 1e-30),
        *np.eye(dimension)[: min(dimension, 5)],
        *(base + 1e-4 * rng.standard_normal((10, dimension))),
        np.zeros(dimension),
        np.full(dimension, np.nan),
        np.full(dimension, np.inf),
    ]
    return np.asarray(rows, np.float32)


@pytest.mark.parametrize("dimension", [1, 3, 8, 64, 384, 1536])
def test_sqlite_vecs_cosine_lies_within_every_copys_bound(tmp_path: Path, dimension: int) -> None:
    """For float32 vectors and queries of every kind, the cosine sqlite-vec computes lies
    in ``scale · (q · unit query) ± (err + epsilon)``; a vector it cannot score faithfully
    (no direction, or float32 sums that overflow) has an infinite bound: always ranked."""
    rng = np.random.default_rng(dimension)
    vectors = strange_vectors(rng, dimension)
    q, scale, err = quantize(vectors)
    bounded = np.flatnonzero(np.isfinite(err))
    assert len(bounded) == 40 + min(dimension, 5) + 10  # gaussian, one-hot, crowded
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path, dimension=dimension))
    queries = 0
    try:
        for query in strange_vectors(rng, dimension):
            unit = unit_query(query)
            if unit is None:
                continue
            queries += 1
            approx = cosines(q, scale, unit)  # as ``VectorCopies.narrow`` computes it
            for row in bounded:
                distance = sink._db.execute(
                    "SELECT vec_distance_cosine(?, ?)", [vectors[row].tobytes(), query.tobytes()]
                )[0][0]
                cosine = 1.0 - float(distance)
                slack = float(err[row]) + epsilon(dimension)
                assert abs(cosine - approx[row]) <= slack, (row, cosine, approx[row], slack)
    finally:
        sink.close()
    assert queries == len(bounded)


def hits(found: Sequence[SearchHit]) -> list[tuple[str, float]]:
    return [(h.chunk_id, h.score) for h in found]


def near_duplicates(sink: SqliteSink, rng: random.Random, count: int) -> None:
    """``count`` documents whose chunks crowd a few directions (ties and near-ties the
    int8 copies cannot tell apart), with random ACLs and sources."""
    centres = [near([1.0] + [0.0] * (DIM - 1), f"c{i}", 0.3) for i in range(4)]
    accesses = [Access(public=True), Access(groups=("g1",)), Access(groups=("g2",))]
    for i in range(count):
        doc = make_document(f"d{i}", rng.choice(accesses), source=rng.choice(["s1", "s2"]))
        texts = [f"d{i} chunk {n}" for n in range(rng.randint(1, 5))]
        vectors = [
            rng.choice(centres) if rng.random() < 0.3 else near(rng.choice(centres), t, 1e-3)
            for t in texts
        ]
        sink.replace(doc, make_chunks(doc, texts, vectors), 1)


@pytest.mark.parametrize(
    ("exact_below", "wide_from"),
    [(20_000, 100_000), (0, 100_000), (0, 0)],
    ids=["exact", "candidates", "candidates-checked-row-by-row"],
)
def test_narrowed_rankings_equal_ranking_every_visible_chunk(
    tmp_path: Path, exact_below: int, wide_from: int
) -> None:
    """On crowded vectors, a sink with copies and one without (the same file) return the
    same hits, scores and order: on the exact path, on the candidates' path, and on the
    candidates of a caller who saw half the index (ACL checked row by row)."""
    context = sink_context(tmp_path, dimension=DIM)
    options = SqliteOptions(exact_below=exact_below, candidates=40, wide_from=wide_from)
    with_copies = SqliteSink(options, context)
    without = SqliteSink(options.model_copy(update={"vector_copies_mb": 0}), context)
    rng = random.Random(11)
    near_duplicates(with_copies, rng, 300)
    narrowed = 0
    for trial in range(60):
        vector = near([1.0] + [0.0] * (DIM - 1), f"q{trial}", rng.choice([0.0, 0.3, 1.0]))
        request = ask(
            SearchMode.VECTOR,
            vector=vector,
            principals=rng.choice([["public"], ["group:g1"], ["public", "group:g2"]]),
            k=rng.choice([1, 3, 10, 50]),
            sources=rng.choice([None, ["s1"]]),
        )
        assert hits(with_copies.search(request)) == hits(without.search(request)), trial
    copies = with_copies._caches._copies
    assert copies is not None and copies.usable
    ids = np.arange(1, 400, dtype=np.int64)
    for trial in range(20):  # and they do narrow: far fewer ids than asked reach SQL
        query = np.asarray(near([1.0] + [0.0] * (DIM - 1), f"n{trial}", 1.0), np.float32)
        found = copies.narrow(ids, query, 3)
        narrowed += found is not None and len(found) < len(ids) // 2
    assert narrowed
    with_copies.close()
    without.close()


WRITER = """
import sys
from pathlib import Path
from headwater.sinks.sqlite import SqliteOptions, SqliteSink
from headwater.sinks.testing import make_chunks, make_document, near, sink_context
from headwater.types import Access

sink = SqliteSink(SqliteOptions(), sink_context(Path(sys.argv[1]), dimension=int(sys.argv[2])))
step, target = sys.argv[3], [0.0, 1.0] + [0.0] * (int(sys.argv[2]) - 2)
amount = {"rewrite": 1e-2, "add": 1e-3, "empty": 1e-2}[step]
if step == "empty":
    sink.bind("another-manifest", empty=True)
for i in range(int(sys.argv[4]), int(sys.argv[5])):
    doc = make_document(f"d{i}", Access(public=True), source="s1")
    texts = [f"d{i} chunk {n}" for n in range(3)]
    # each step's chunks point nearer the queries' direction than any before them
    sink.replace(doc, make_chunks(doc, texts, [near(target, t + step, amount) for t in texts]), 2)
sink.close()
"""


def test_the_copies_follow_another_process_writes(tmp_path: Path) -> None:
    """A sink that loaded its copies answers exactly as a sink without copies after
    another process rewrote vectors of chunks it holds (same chunk rows, new vectors),
    added documents, and emptied the index and filled it again."""
    context = sink_context(tmp_path, dimension=DIM)
    reader = SqliteSink(SqliteOptions(), context)
    rng = random.Random(3)
    near_duplicates(reader, rng, 60)
    target = [0.0, 1.0] + [0.0] * (DIM - 2)  # far from every chunk until the writes
    for step, first, last in (("rewrite", 10, 20), ("add", 60, 70), ("empty", 100, 140)):
        probe = ask(SearchMode.VECTOR, vector=target, principals=["public"], k=5)
        for _ in range(2):  # the copies are loaded and current before the other writer
            reader.search(probe)
        assert reader._caches._copies is not None and reader._caches._copies.usable
        subprocess.run(
            [sys.executable, "-c", WRITER, str(tmp_path), str(DIM), step, str(first), str(last)],
            check=True,
            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        )
        fresh = SqliteSink(SqliteOptions(vector_copies_mb=0), context)
        top = fresh.search(probe)[0].text  # the other process's chunks are now the nearest
        assert first <= int(top.split()[0][1:]) < last, (step, top)
        for k in (1, 5, 20):
            request = ask(SearchMode.VECTOR, vector=target, principals=["public"], k=k)
            assert hits(reader.search(request)) == hits(fresh.search(request)), (step, k)
        fresh.close()
    reader.close()


def test_an_index_past_the_budget_keeps_no_copies_and_ranks_in_sql(tmp_path: Path) -> None:
    context = sink_context(tmp_path, dimension=DIM)
    sink = SqliteSink(SqliteOptions(), context)
    near_duplicates(sink, random.Random(5), 40)
    small = VectorCopies(DIM, budget=100)  # a handful of ids' worth
    with sink._db.snapshot() as db:
        assert small.refresh(db) is False and not small.usable
    assert small.narrow(np.arange(5, dtype=np.int64), np.ones(DIM, np.float32), 1) is None
    off = SqliteSink(SqliteOptions(vector_copies_mb=0), context)
    assert off._caches.copies() is None
    request = ask(SearchMode.VECTOR, vector=[1.0] * DIM, principals=["public", "group:g1"], k=7)
    assert hits(off.search(request)) == hits(sink.search(request))
    sink.close()
    off.close()


@pytest.mark.parametrize("copies_mb", [0, 256])
def test_vectors_without_direction_score_zero_instead_of_failing_the_search(
    tmp_path: Path, copies_mb: int
) -> None:
    """A zero or NaN vector in the index (sqlite-vec scores it NULL) ranks as an
    orthogonal one; a zero query ranks every visible chunk at score 0."""
    options = SqliteOptions(vector_copies_mb=copies_mb)
    sink = SqliteSink(options, sink_context(tmp_path, dimension=DIM))
    doc = make_document("odd", Access(public=True))
    along = [1.0] + [0.0] * (DIM - 1)
    vectors = [[0.0] * DIM, [float("nan")] * DIM, along, [-v for v in along]]
    sink.replace(doc, make_chunks(doc, ["zero", "nan", "along", "against"], vectors), 1)
    found = sink.search(ask(SearchMode.VECTOR, vector=along, k=4))
    assert [h.text for h in found] == ["along", "zero", "nan", "against"]
    assert [round(h.score, 6) for h in found] == [1.0, 0.0, 0.0, -1.0]
    flat = sink.search(ask(SearchMode.VECTOR, vector=[0.0] * DIM, k=4))
    assert sorted(h.score for h in flat) == [0.0] * 4
    sink.close()


def test_the_copies_never_hold_more_than_their_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Growing by half for the next writes stops at the budget: an index that fits it
    keeps copies no larger than it, however many pages loading it took."""
    monkeypatch.setattr(_copies, "PAGE", 64)
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path, dimension=DIM))
    near_duplicates(sink, random.Random(9), 150)
    top = int(sink._db.execute("SELECT max(id) FROM vectors")[0][0])
    budget = (top + 1) * (DIM + 8) + 10  # room for these ids, not for half as many more
    copies = VectorCopies(DIM, budget)
    with sink._db.snapshot() as db:
        assert copies.refresh(db)
    held = copies.q.nbytes + copies.scale.nbytes + copies.err.nbytes
    assert held <= budget and len(copies.scale) == top + 1
    sink.close()


def test_a_one_shot_search_loads_no_copies(tmp_path: Path) -> None:
    """The first vector search of an open sink ranks in SQL (a `headwater search` process
    searches once: reading every vector would cost it more than it saves); the second
    loads the copies, and both answer alike."""
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path, dimension=DIM))
    near_duplicates(sink, random.Random(4), 50)
    request = ask(SearchMode.VECTOR, vector=[1.0] * DIM, principals=["public", "group:g1"], k=7)
    first = hits(sink.search(request))
    assert sink._caches._copies is None
    assert hits(sink.search(request)) == first
    assert sink._caches._copies is not None and sink._caches._copies.usable
    sink.close()
