"""The ``indexing`` progress line over drains: a drain's first batch reports its chunks
slice by slice with no document done yet, and that is still the same drain.

The line took every report with no document done for a new drain and added the last
report's chunks to its base: during a first batch of slices of 64 it showed 64, 192,
384, 640, 960 chunks (the sums of the counts so far) instead of 64, 128, 192, 256, 320,
and kept the excess to the end.
"""

from __future__ import annotations

import io

from rich.console import Console

from headwater.cli.progress import Reporter
from headwater.indexer.report import IndexProgress


def _text(reporter: Reporter) -> str:
    return reporter._lines["indexing"].text


def test_a_first_batch_counts_its_chunks_once_and_a_new_drain_adds_to_the_last() -> None:
    reporter = Reporter(Console(file=io.StringIO()), terminal=False, interval=60)
    reporter.index(IndexProgress(0, 10, 0))  # a drain opens
    for chunks in (64, 128, 192, 256, 320):  # its first batch, slice by slice
        reporter.index(IndexProgress(0, 10, chunks))
        assert _text(reporter).startswith(f"0/10 documents, {chunks} chunks,")
    reporter.index(IndexProgress(4, 10, 350))
    reporter.index(IndexProgress(10, 10, 900))
    assert _text(reporter).startswith("10/10 documents, 900 chunks,")
    reporter.index(IndexProgress(0, 3, 0))  # the next drain (a sync's worker drains again)
    reporter.index(IndexProgress(0, 3, 64))
    assert _text(reporter).startswith("10/13 documents, 964 chunks,")
    reporter.index(IndexProgress(3, 3, 100))
    assert _text(reporter).startswith("13/13 documents, 1000 chunks,")
