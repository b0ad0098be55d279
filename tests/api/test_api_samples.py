"""The charts' samples on a real workspace: indexing rate and backlog per index, from the
manifest whichever process wrote it, and search latency from the searches noted.

A ``sync --no-index`` leaves every document pending; a sample says so. An ``index`` then
writes their chunks: the next sample counts exactly the chunks the manifest records as
written in its interval, and none pending; a third sample, with nothing written since,
counts none. Noted search times become the interval's median and p95, then are gone.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from headwater.api.samples import Sampler
from headwater.manifest import schema as t
from headwater.workspace import Workspace
from workspace_helpers import filesystem_source, write_config


def test_samples_follow_the_manifest_and_the_searches(tmp_path: Path, corpus: Path) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        sampler = Sampler(every_s=30, kept=2)
        ws.sync(index=False)
        first = sampler.sample(ws)
        assert first.pending == {"main": ws.manifest.count_documents("docs")} and first.pending
        assert first.chunks_per_minute == {"main": 0.0}
        assert first.searches == 0 and first.search_p50_ms is None

        ws.index()
        second = sampler.sample(ws)
        with ws.manifest.engine.connect() as conn:
            written = conn.execute(select(func.sum(t.document_indexes.c.chunks))).scalar_one()
        minutes = (second.at - first.at) / 60
        assert written > 0 and second.pending == {"main": 0}
        assert abs(second.chunks_per_minute["main"] * minutes - written) < 1e-6

        for ms in (10, 20, 30, 40, 1000):
            sampler.searched(ms / 1000)
        third = sampler.sample(ws)
        assert third.chunks_per_minute == {"main": 0.0}  # nothing written since
        assert (third.searches, third.search_p50_ms, third.search_p95_ms) == (5, 30.0, 1000.0)
        assert sampler.sample(ws).searches == 0  # each search counts in one interval only
        assert [s.at for s in sampler.samples()] == sorted(s.at for s in sampler.samples())
        assert len(sampler.samples()) == 2  # the ring keeps the newest
