"""A batch of long documents: its progress moves as chunks are embedded, and a stop
request abandons it within one embedding slice (issue 28 items 1 and 2).

A drain embeds a batch's texts in slices of ``EMBED_SLICE``: progress reported only per
batch stayed at "0/20 documents, 0 chunks" for minutes, and a stop waited for the whole
batch (103 s for `headwater run`)."""

from __future__ import annotations

from pathlib import Path

from headwater import Workspace
from headwater.indexer.prepare import EMBED_SLICE
from headwater.indexer.report import IndexProgress
from workspace_helpers import filesystem_source, write_config

WORDS = 1600  # 100 chunks of 16 words per document


def _workspace(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(4):
        words = " ".join(f"w{n}x{i}" for i in range(WORDS))
        (corpus / f"long{n}.txt").write_text(words + "\n", encoding="utf-8")
    return write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(corpus, access="{ public = true }"),
        extra="[chunker]\nmax_tokens = 16\n",
    )


def test_progress_counts_chunks_while_a_batch_is_embedded(tmp_path: Path) -> None:
    with Workspace.open(_workspace(tmp_path)) as ws:
        ws.sync(index=False)
        seen: list[IndexProgress] = []
        ws.index_progress = seen.append
        report = ws.index()
    total = report.chunks
    assert total > 3 * EMBED_SLICE
    mid_batch = [p.chunks for p in seen if p.documents_done == 0 and p.chunks > 0]
    assert mid_batch[:3] == [EMBED_SLICE, 2 * EMBED_SLICE, 3 * EMBED_SLICE], seen
    assert seen[-1] == IndexProgress(4, 4, total)


def test_a_stop_abandons_the_batch_within_one_slice_and_the_next_drain_does_it(
    tmp_path: Path,
) -> None:
    with Workspace.open(_workspace(tmp_path)) as ws:
        ws.sync(index=False)
        seen: list[IndexProgress] = []

        def stop_after_the_first_slice(progress: IndexProgress) -> None:
            seen.append(progress)
            if progress.chunks >= EMBED_SLICE:
                ws.cancel.set()  # what SIGTERM / Ctrl-C do

        ws.index_progress = stop_after_the_first_slice
        stopped = ws.index()
        assert (stopped.chunks, stopped.replaced) == (0, 0)  # nothing of the batch written
        assert max(p.chunks for p in seen) == EMBED_SLICE  # no second slice was embedded
        assert ws.status()["indexes"]["main"]["pending"] == 4
        ws.cancel.clear()
        ws.index_progress = None
        done = ws.index()
        assert done.replaced == 4 and ws.status()["indexes"]["main"]["pending"] == 0
        assert ws.search("w2x700", mode="keyword")
