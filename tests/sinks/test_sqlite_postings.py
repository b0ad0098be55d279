"""Keyword scoring in memory (``_postings``): the same hits, scores to the bit and order as
FTS5's own bm25 statement, for every caller, source and scope filter; it follows another
process's writes (text, ACL, deletes); a one-shot search loads nothing; past its budget
it answers in SQL, and words loaded past it push out the least recently used.
"""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from headwater.scopes import scope_key
from headwater.sinks.sqlite import SqliteOptions, SqliteSink
from headwater.sinks.sqlite import _keyword as keyword_module
from headwater.sinks.sqlite import _postings as postings
from headwater.sinks.sqlite._postings import STEADY, SearchMemory, varints
from headwater.sinks.sqlite._schema import principal_token
from headwater.sinks.sqlite._search import index_state
from headwater.sinks.testing import ask, make_chunks, make_document, sink_context
from headwater.types import Access, SearchHit, SearchMode

ROOT = Path(__file__).resolve().parents[2]
# A Zipf-like vocabulary: some words in most chunks, some in a few, repeated within one.
VOCABULARY = [f"w{n}" for n in range(60)]
WEIGHTS = [1.0 / (n + 1) for n in range(60)]
ACCESSES = [
    Access(public=True),
    Access(groups=("g1",)),
    Access(groups=("g2", "g3")),
    Access(users=("u@x.test",), groups=("g1", "g2", "g3", "g4")),
    Access.nobody(),
]
CALLERS = [["public"], ["group:g1"], ["public", "group:g2"], ["user:u@x.test"], ["group:g4"]]


def hits(found: Sequence[SearchHit]) -> list[tuple[str, float]]:
    return [(h.chunk_id, h.score) for h in found]


def text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCABULARY, WEIGHTS, k=rng.randint(1, 60)))


def fill(sink: SqliteSink, rng: random.Random, count: int, first: int = 0) -> None:
    """``count`` documents of 1–4 chunks: lengths from 1 to 60 words, titles that hold
    query words too, ACLs of 0–5 principals (they count in a row's length), two sources
    and nested folders."""
    for i in range(first, first + count):
        folder = rng.choice([None, "a", "a/b", "c"])
        doc = make_document(f"d{i}", rng.choice(ACCESSES), rng.choice(["s1", "s2"]), folder)
        doc = dataclasses.replace(doc, title=f"{rng.choice(VOCABULARY)} Report {i}")
        sink.replace(doc, make_chunks(doc, [text(rng) for _ in range(rng.randint(1, 4))]), 1)


def query(rng: random.Random) -> str:
    words = rng.sample(VOCABULARY, rng.randint(1, 4))
    extras = ["W1", "report", "absent", "naïve", "w2-w3"]  # case, title, none, non-ASCII
    if rng.random() < 0.3:
        words.append(rng.choice(extras))
    return " ".join(words)


def keyword(text: str, rng: random.Random) -> object:
    return ask(
        SearchMode.KEYWORD,
        text=text,
        principals=rng.choice(CALLERS),
        k=rng.choice([1, 3, 10, 80]),
        sources=rng.choice([None, ["s1"], ["s1", "s2"]]),
        scopes=rng.choice([None, None, [scope_key("s1", "a")], [scope_key("s2", "a/b")]]),
    )


@pytest.fixture(autouse=True)
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every index state counts as settled at once (``SETTLE_S``: tested on its own)."""
    monkeypatch.setattr(postings, "SETTLE_S", 0.0)


@pytest.fixture(params=["apsw", "pysqlite3"])
def pair(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[SqliteSink, SqliteSink]]:
    """One index file, opened by a sink that scores in memory and one that never does."""
    context = sink_context(tmp_path)
    memory = SqliteSink(SqliteOptions(driver=request.param), context)
    sql = SqliteSink(SqliteOptions(search_memory_mb=0), context)
    yield memory, sql
    memory.close()
    sql.close()


def answered_in_memory(sink: SqliteSink, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time ``sink``'s memory answers a query."""
    answered: list[int] = []
    ranked = SearchMemory.ranked

    def counting(self: SearchMemory, *args: object, **kwargs: object) -> object:
        found = ranked(self, *args, **kwargs)  # type: ignore[arg-type]
        answered.extend([1] if found is not None else [])
        return found

    monkeypatch.setattr(SearchMemory, "ranked", counting)
    return answered


def test_memory_answers_what_fts5s_statement_answers(
    pair: tuple[SqliteSink, SqliteSink], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a corpus of varied lengths, titles, ACLs, sources and folders, and queries of
    common and rare words, mixed case, words in titles, absent and non-ASCII words, the
    memory's hits equal the SQL statement's: the same chunks, scores to the bit, order.
    (The SQL side runs the full statement: the split past common words, ``_keyword``,
    may differ from it in a score's last bit.)"""
    monkeypatch.setattr(keyword_module, "split_terms", lambda *args: None)
    memory, sql = pair
    rng = random.Random(29)
    fill(memory, rng, 150)
    answered = answered_in_memory(memory, monkeypatch)
    for trial in range(300):
        request = keyword(query(rng), rng)
        for _ in range(2):  # a common word loads at its second use
            assert hits(memory.search(request)) == hits(sql.search(request)), trial
    assert len(answered) > 300  # most queries were answered in memory, not in SQL


def test_the_same_words_in_a_hybrid_search_share_one_acl_listing(
    pair: tuple[SqliteSink, SqliteSink],
) -> None:
    """The vector half's listing of a caller's chunks is kept for the keyword half (and
    the next search) until the index changes; results stay those of SQL."""
    memory, sql = pair
    fill(memory, random.Random(2), 60)
    for mode in (SearchMode.VECTOR, SearchMode.KEYWORD) * 3:
        request = ask(mode, text="w1 w5", vector=[1.0] * 8, principals=["group:g1"], k=5)
        assert hits(memory.search(request)) == hits(sql.search(request))
    assert memory._caches._memory is not None and len(memory._caches._memory._listings) == 1


WRITER = """
import sys
from pathlib import Path
from headwater.sinks.sqlite import SqliteOptions, SqliteSink
from headwater.sinks.sqlite import _keyword as keyword_module
from headwater.sinks.testing import make_chunks, make_document, sink_context
from headwater.types import Access

sink = SqliteSink(SqliteOptions(), sink_context(Path(sys.argv[1])))
step = sys.argv[2]
doc = make_document("d3", Access(public=True), "s1")
if step == "text":
    sink.replace(doc, make_chunks(doc, ["w1 w1 w1 fresh", "fresh w2"]), 5)
elif step == "acl":
    sink.update_access(doc.document_id, Access(groups=("g9",)), 6)
elif step == "delete":
    for (document_id,) in sink._db.execute(
        "SELECT document_id FROM documents WHERE deleted = 0 AND document_id != ? "
        "ORDER BY document_id LIMIT 20", [doc.document_id]
    ):
        sink.delete(document_id, 7)
sink.close()
"""


def test_memory_follows_another_process_writes(
    pair: tuple[SqliteSink, SqliteSink], tmp_path: Path
) -> None:
    """A sink whose memory holds the words answers as SQL does after another process
    rewrote a document's text, took a document away from a caller (ACL) and deleted
    documents: each write is a new state of the index, and the memory starts afresh."""
    memory, sql = pair
    rng = random.Random(8)
    fill(memory, rng, 40)
    probes = [
        ask(SearchMode.KEYWORD, text=words, principals=callers, k=k)
        for words in ("w1 w2", "fresh w1", "w0 w3 w7")
        for callers in (["public"], ["group:g9"], ["public", "group:g1"])
        for k in (1, 10, 50)
    ]
    for step in ("text", "acl", "delete"):
        for probe in probes * 2:  # loaded and current before the other writer
            memory.search(probe)
        assert memory._caches._memory is not None and memory._caches._memory._postings
        env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
        subprocess.run([sys.executable, "-c", WRITER, str(tmp_path), step], check=True, env=env)
        for probe in probes * 2:
            assert hits(memory.search(probe)) == hits(sql.search(probe)), (step, probe)
    gone = ask(SearchMode.KEYWORD, text="fresh", principals=["public"], k=5)
    assert not memory.search(gone)  # d3 went to g9 only
    assert [h.text for h in memory.search(dataclasses.replace(gone, principals=["group:g9"]))]


def test_a_one_shot_search_loads_nothing(tmp_path: Path) -> None:
    """The first search of an open sink runs in SQL (a `headwater search` process searches
    once), and so do the first keyword searches after a write; from the ``STEADY``-th
    search of one state the memory answers, alike."""
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path))
    fill(sink, random.Random(4), 30)
    request = ask(SearchMode.KEYWORD, text="w1 w2", principals=["public"], k=5)
    first = hits(sink.search(request))
    assert sink._caches._memory is None
    for _ in range(STEADY - 1):
        assert hits(sink.search(request)) == first
    memory = sink._caches._memory
    assert memory is not None and not memory._postings and memory._norms is None
    assert hits(sink.search(request)) == first
    assert "w1" in memory._postings
    fill(sink, random.Random(5), 1, first=100)  # a write: a new state, nothing held
    for _ in range(STEADY - 1):
        sink.search(request)
        assert not memory._postings and memory._norms is None
    sink.search(request)
    assert "w1" in memory._postings
    sink.close()


def test_nothing_loads_until_the_index_state_has_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under writes every few seconds the memory would drop what it loaded before it paid
    back: a state is used only once it is ``SETTLE_S`` seconds old, as this memory's clock
    tells, and a new state starts the wait again."""
    monkeypatch.setattr(postings, "SETTLE_S", 10.0)
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path))
    fill(sink, random.Random(6), 20)
    now = [100.0]
    memory = SearchMemory(budget=1 << 20, clock=lambda: now[0])
    terms, docs = ['"w1"'], {'"w1"': 1}
    match = "acl : (" + " OR ".join(principal_token(p) for p in ["public"]) + ")"

    def ask_once() -> object:
        with sink._db.snapshot() as db:
            memory.follow(index_state(db), keyword=True)
            return memory.ranked(db, terms, match, 5, docs)

    for _ in range(STEADY + 2):
        assert ask_once() is None
    now[0] += 9.9
    assert ask_once() is None and memory._norms is None
    now[0] += 0.2
    assert ask_once()
    fill(sink, random.Random(7), 1, first=50)  # a new state: the wait starts again
    for _ in range(STEADY + 2):
        assert ask_once() is None
    now[0] += 10.0
    assert ask_once()
    sink.close()


def test_past_its_budget_the_memory_answers_in_sql(tmp_path: Path) -> None:
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path))
    fill(sink, random.Random(6), 60)
    small = SearchMemory(budget=64)  # not even the rows' lengths fit
    request = ask(SearchMode.KEYWORD, text="w1 w9", principals=["public"], k=5)
    with sink._db.snapshot() as db:
        for _ in range(STEADY):
            small.follow(("state",), keyword=True)
        docs = {'"w1"': 1, '"w9"': 1}
        assert small.ranked(db, ['"w1"', '"w9"'], "acl : (x)", 5, docs) is None
        assert small._unusable  # not read again in this state
        assert small.ranked(db, ['"w1"'], "acl : (x)", 5, docs) is None
    assert small._held <= 64
    off = SqliteSink(SqliteOptions(search_memory_mb=0), sink_context(tmp_path))
    for _ in range(3):
        assert hits(sink.search(request)) == hits(off.search(request))
    assert off._caches._memory is None
    sink.close()
    off.close()


def test_words_past_the_budget_push_out_the_oldest(tmp_path: Path) -> None:
    """Each word loaded past the budget drops the least recently used words, never the
    query's own, and the answers stay FTS5's."""
    sink = SqliteSink(SqliteOptions(), sink_context(tmp_path))
    fill(sink, random.Random(8), 60)
    memory, roomy = SearchMemory(budget=1 << 20), SearchMemory(budget=1 << 20)
    match = "acl : (" + principal_token("public") + ")"
    docs = {f'"{word}"': 1 for word in VOCABULARY}  # each loaded at its first use
    with sink._db.snapshot() as db:
        for held in (memory, roomy):
            for _ in range(STEADY):
                held.follow(index_state(db), keyword=True)
        assert memory.ranked(db, ['"w0"'], match, 5, docs)  # the row lengths and w0
        memory.budget = memory._held  # w0, the most common word, is the largest
        for word in VOCABULARY[1:20]:
            quoted = [f'"{word}"']
            assert memory.ranked(db, quoted, match, 5, docs) == roomy.ranked(
                db, quoted, match, 5, docs
            )
            assert word in memory._postings and memory._held <= memory.budget
        assert "w0" not in memory._postings
    sink.close()


def sqlite_varint(value: int) -> bytes:
    """SQLite's varint of ``value`` (< 2**56): 7 bits a byte, most significant first."""
    groups = [value & 0x7F]
    value >>= 7
    while value:
        groups.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes(reversed(groups))


def test_varints_decode_what_sqlite_encodes() -> None:
    values = [0, 1, 127, 128, 255, 16_383, 16_384, 2_097_151, 2_097_152, 2**35 + 7, 9]
    packed = b"".join(sqlite_varint(v) for v in values)
    assert varints(packed).tolist() == values
    assert varints(b"").tolist() == []
    assert np.array_equal(varints(np.frombuffer(b"\x81\x00\x02", np.uint8)), [128, 2])
