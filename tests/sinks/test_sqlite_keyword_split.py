"""The sqlite index's keyword search past common words (``_keyword``): the rows holding a
rare word, scored by the whole query and checked against the caller's ACL on their own
rows, give exactly what FTS5's full statement gives, or the full statement runs."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.scopes import scope_key
from headwater.sinks.sqlite import SqliteOptions, SqliteSink
from headwater.sinks.sqlite import _keyword as keyword
from headwater.sinks.sqlite._search import index_state
from headwater.sinks.testing import ask, make_chunks, make_document, sink_context
from headwater.types import Access, SearchHit, SearchMode, caller_principals

ROOT = Path(__file__).resolve().parents[2]
COMMON = [f"common{i}" for i in range(4)]  # each in ~35 % of the chunks
MIDDLE = [f"middle{i}" for i in range(6)]  # ~8 %
RARE = [f"rare{i}" for i in range(12)]  # ~1.5 %
FILLER = [f"filler{i}" for i in range(300)]
ACCESS = [
    Access(public=True),
    Access(groups=("wide",)),
    Access(groups=("wide", "team")),
    Access(groups=("team",)),
    Access(users=("solo@example.com",)),
]
CALLERS = {
    "everyone": caller_principals("x@example.com", ["wide", "team"]),
    "wide": caller_principals("y@example.com", ["wide"]),
    "team": caller_principals("z@example.com", ["team"]),
    "solo": caller_principals("solo@example.com"),
}


@pytest.fixture(params=["apsw", "pysqlite3"])
def sink(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[SqliteSink]:
    """A sink that ranks in SQL (the split is SQL's way; scoring in memory is
    ``test_sqlite_postings``)."""
    options = SqliteOptions(driver=request.param, search_memory_mb=0)
    sink = SqliteSink(options, sink_context(tmp_path))
    yield sink
    sink.close()


def chunk_text(rng: random.Random) -> str:
    words = rng.choices(FILLER, k=rng.choice([4, 12, 30, 80, 200]))
    for vocabulary, chance in ((COMMON, 0.35), (MIDDLE, 0.08), (RARE, 0.015)):
        for word in vocabulary:
            if rng.random() < chance:
                words.extend([word] * rng.choice([1, 1, 2, 5]))
    rng.shuffle(words)
    return " ".join(words)


def fill(sink: SqliteSink, seed: int, documents: int = 400) -> None:
    rng = random.Random(seed)
    for n in range(documents):
        source, folder = ("one", "two")[n % 3 == 0], ("a", "b")[n % 4 == 0]
        access = ACCESS[n % len(ACCESS)]
        doc = make_document(f"d{n}", access, source=source, hierarchy=f"{folder}/{n}.md")
        sink.replace(doc, make_chunks(doc, [chunk_text(rng) for _ in range(3)]), 1)


def queries(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        words = rng.sample(RARE, rng.choice([1, 2])) + rng.sample(COMMON, rng.choice([1, 2, 3]))
        if rng.random() < 0.3:
            words.append(rng.choice(MIDDLE))
        rng.shuffle(words)
        found.append(" ".join(words))
    return found


def shown(hits: list[SearchHit]) -> list[tuple[str, float]]:
    return [(h.chunk_id, round(h.score, 9)) for h in hits]


class Spy:
    """Counts the split's outcomes: answered, or handed to the full statement."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.answered = self.declined = 0
        real = keyword._by_essential

        def counted(*args: object, **kwargs: object) -> list[SearchHit] | None:
            found = real(*args, **kwargs)  # type: ignore[arg-type]
            if found is None:
                self.declined += 1
            else:
                self.answered += 1
            return found

        monkeypatch.setattr(keyword, "_by_essential", counted)


def test_the_split_answers_exactly_what_the_full_statement_answers(
    sink: SqliteSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(sink, seed=11)
    asked = [
        (text, name, k, sources, scopes)
        for text in queries(seed=5, count=60)
        for name in CALLERS
        for k in (3, 10, 40)
        for sources, scopes in ((None, None), (["one"], None), (None, [scope_key("one", "a")]))
    ]
    requests = [
        ask(SearchMode.KEYWORD, text=t, principals=CALLERS[n], k=k, sources=s, scopes=sc)
        for t, n, k, s, sc in asked
    ]
    spy = Spy(monkeypatch)
    split = [sink.search(request) for request in requests]
    assert spy.answered > 300 and spy.declined > 5, (spy.answered, spy.declined)
    monkeypatch.setattr(keyword, "split_terms", lambda *_args: None)
    for case, request, found in zip(asked, requests, split, strict=True):
        assert shown(found) == shown(sink.search(request)), case


def test_a_row_without_the_rare_word_that_outscores_the_candidates_is_not_missed(
    sink: SqliteSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rare word sits once in long chunks (a low score); a short chunk of the common
    words alone scores higher: the bound of the common words sends it to the full query."""
    public = Access(public=True)
    rows = [" ".join(["zephyr", *FILLER[:300]])] * 10
    rows += [f"alpha {FILLER[i]}" if i % 2 else f"beta {FILLER[i]}" for i in range(300)]
    rows += [f"{FILLER[i]} {FILLER[i + 1]}" for i in range(89)]
    rows.append("alpha beta alpha beta alpha beta")
    for n, text in enumerate(rows):
        doc = make_document(f"r{n}", public)
        sink.replace(doc, make_chunks(doc, [text]), 1)
    spy = Spy(monkeypatch)
    top = sink.search(ask(SearchMode.KEYWORD, text="zephyr alpha beta", k=5))
    assert spy.declined == 1  # the split was tried, and its bound refused it
    assert top[0].text == "alpha beta alpha beta alpha beta"
    monkeypatch.setattr(keyword, "split_terms", lambda *_args: None)
    assert shown(top) == shown(sink.search(ask(SearchMode.KEYWORD, text="zephyr alpha beta", k=5)))


def test_a_split_needs_every_count_and_a_rarer_word_above_the_bound() -> None:
    docs = {'"a"': 400, '"b"': 300, '"r"': 5}
    split = keyword.split_terms(['"r"', '"a"', '"b"'], docs, 1000)
    assert split is not None and split.essential == ['"r"'] and split.common == ['"a"', '"b"']
    assert split.bound == pytest.approx(2.2 * (keyword.idf(400, 1000) + keyword.idf(300, 1000)))
    assert keyword.split_terms(['"r"', '"a"', '"x"'], docs, 1000) is None  # "x" uncounted
    assert keyword.split_terms(['"a"', '"b"'], docs, 1000) is None  # no rarer word
    assert keyword.split_terms(['"r"'], docs, 1000) is None


WRITER = """
import sys
from pathlib import Path
from headwater.scopes import scope_key
from headwater.sinks.sqlite import SqliteOptions, SqliteSink
from headwater.sinks.testing import make_chunks, make_document, sink_context
from headwater.types import Access
sink = SqliteSink(SqliteOptions(), sink_context(Path(sys.argv[1])))
doc = make_document("late", Access(public=True))
sink.replace(doc, make_chunks(doc, ["counted counted", "counted again"]), 1)
sink.close()
"""


def counted(sink: SqliteSink, word: str) -> int:
    with sink._db.snapshot() as db:
        sink._caches.term_counts.follow(index_state(db))
        return keyword.term_docs(db, [f'"{word}"'], sink._caches.term_counts)[f'"{word}"']


def test_a_word_count_is_read_again_after_any_write_even_another_process_s(
    tmp_path: Path, sink: SqliteSink
) -> None:
    doc = make_document("first", Access(public=True))
    sink.replace(doc, make_chunks(doc, ["counted once"]), 1)
    assert counted(sink, "counted") == 1
    env = {"PYTHONPATH": f"{ROOT / 'src'}", "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, "-c", WRITER, str(tmp_path)], check=True, env=env)
    assert counted(sink, "counted") == 3  # the other process's two chunks
    sink.delete(doc.document_id, 2)
    assert counted(sink, "counted") == 2
    # a word shaped like the index's own ACL tokens is never counted (no split for it)
    with sink._db.snapshot() as db:
        assert (
            keyword.term_docs(db, ['"p0123456789abcdef01234567"'], sink._caches.term_counts) == {}
        )


def test_word_counts_are_bounded_in_memory(
    sink: SqliteSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = make_document("many", Access(public=True))
    sink.replace(doc, make_chunks(doc, ["alpha beta gamma delta"]), 1)
    monkeypatch.setattr(keyword, "MAX_WORDS", 2)
    for word in ("alpha", "beta", "gamma", "delta"):
        assert counted(sink, word) == 1
        assert len(sink._caches.term_counts._counts) <= 3  # cleared once past MAX_WORDS
