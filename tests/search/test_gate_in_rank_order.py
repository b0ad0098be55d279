"""The manifest is asked about a search's documents in rank order, only as deep as needed.

A hybrid search fuses some 160 chunks of ~150 documents; the gate (``admitted``) reads
each asked document's row in the manifest. ``results.admitted_first`` asks about the
first ``2k`` documents of the ranking, then twice as many each time, until ``k`` results
are shown. What a prefix of the ranking shows is a prefix of what the whole shows, so the
results must be exactly those of gating every document first — for any ranking, any
refused documents, either result shape and any ``min_score``: checked here against that
reference on random rankings, and through a real workspace whose gate counts its ids.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.search.results import admitted_first, shown
from headwater.types import SearchHit
from workspace_helpers import filesystem_source, write_config


def _hit(chunk: int, document: int, score: float) -> SearchHit:
    return SearchHit(f"c{chunk}", f"d{document}", chunk, score, "t", "T", "/l", "s")


def _ranking(rng: random.Random) -> list[SearchHit]:
    documents = rng.randint(1, 60)
    count = rng.randint(0, 160)
    scores = sorted((rng.random() for _ in range(count)), reverse=True)
    return [_hit(n, rng.randrange(documents), round(s, 3)) for n, s in enumerate(scores)]


@pytest.mark.parametrize("seed", range(400))
def test_the_results_are_those_of_gating_every_document_first(seed: int) -> None:
    rng = random.Random(seed)
    hits = _ranking(rng)
    refused = {f"d{n}" for n in range(60) if rng.random() < rng.choice([0.0, 0.1, 0.5, 0.9])}
    k = rng.choice([1, 3, 10, 25])
    per_document = rng.random() < 0.7
    min_score = rng.choice([None, None, 0.2, 0.5, 0.9])
    asked: list[str] = []

    def gate(document_ids: Sequence[str]) -> set[str]:
        asked.extend(d for d in document_ids if d not in asked)
        return {d for d in asked if d not in refused}

    found, below = admitted_first(hits, gate, k, per_document, min_score)
    every, every_below = shown([h for h in hits if h.document_id not in refused],
                               per_document, min_score)  # fmt: skip
    assert found[:k] == every[:k]
    if len(found) < k:  # the caller then asks deeper lists, or stops on ``below``
        assert (found, below) == (every, every_below)
    order = list(dict.fromkeys(h.document_id for h in hits))
    assert asked == order[: len(asked)]  # in rank order, each once


def test_a_search_asks_the_manifest_about_the_first_documents_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sixty visible pages match; a search for ``k = 5`` reads 10 of their rows, and a
    search for 50 results reads every one its lists hold."""
    pages = tmp_path / "pages"
    pages.mkdir()
    for n in range(60):
        (pages / f"p{n}.md").write_text(f"# Page {n}\n\nThe harbour ferry timetable {n}.\n")
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(pages, "pages"))
    with Workspace.open(config, embedder=FakeEmbedder(32)) as ws:
        ws.sync()
        asked: list[int] = []
        original = type(ws.manifest).visible_to

        def counted(self: object, ids: Sequence[str], principals: Sequence[str]) -> set[str]:
            asked.append(len(ids))
            return original(self, ids, principals)  # type: ignore[arg-type]

        monkeypatch.setattr(type(ws.manifest), "visible_to", counted)
        for mode in ("hybrid", "keyword", "vector"):
            asked.clear()
            results = ws.search("harbour ferry timetable", groups=["staff"], k=5, mode=mode)
            assert len(results) == 5 and sum(asked) == 10, mode
            asked.clear()
            assert (
                len(ws.search("harbour ferry timetable", groups=["staff"], k=50, mode=mode)) == 50
            )
            assert sum(asked) == 60, mode
