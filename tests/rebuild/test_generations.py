"""Generations through the Python API: verification blocks a bad switch, rollback serves
the previous generation at once and then catches up, a sink-only change embeds nothing,
retire frees disk, and searches across a switch read one generation, never a mix."""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from headwater import Workspace
from headwater.errors import NotFoundError
from headwater.rebuilds import orchestrate as core
from headwater.sinks.sqlite import SqliteSink
from headwater.types import EmbeddedChunk, IndexDocument
from workspace_helpers import filesystem_source, write_config

SQLITE = '[[index]]\nname = "main"\ntype = "sqlite"\nkeep_previous_for = "30d"\n'
QDRANT = '[[index]]\nname = "main"\ntype = "qdrant"\n'


def _config(
    tmp_path: Path, manifest_url: str, corpus: Path, *, indexes: str = SQLITE, tokens: int = 64
) -> Path:
    return write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus),
        indexes=indexes,
        extra=f"[chunker]\nmax_tokens = {tokens}\n",
    )


class GarblingSqlite(SqliteSink):
    """A sink whose generation 2 stores a wrong chunk text: verification must catch it."""

    def replace(
        self, document: IndexDocument, chunks: Sequence[EmbeddedChunk], revision: int
    ) -> object:
        if self.context.generation == 2 and document.title == "Vacation policy":
            first = dataclasses.replace(chunks[0].chunk, text="garbled")
            chunks = [dataclasses.replace(chunks[0], chunk=first), *chunks[1:]]
        return super().replace(document, chunks, revision)


def _titles(ws: Workspace, query: str) -> list[str]:
    return [h["title"] for h in ws.search(query, groups=["staff"], mode="keyword")]


def test_a_failed_verification_never_switches(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = _config(tmp_path, manifest_url, corpus)
    with Workspace.open(config) as ws:
        ws.sync()
    with Workspace.open(config, sink_types={"sqlite": GarblingSqlite}) as ws:
        entry = core.rebuild(ws.runtime, force=True)["indexes"][0]
        assert entry["result"] == "failed", entry
        assert any("chunk texts" in p for p in entry["problems"]), entry["problems"]
        gens = {g.generation: g for g in ws.manifest.generations.list("main")}
        assert gens[1].state == "live" and gens[2].state == "failed" and gens[2].problems
        assert "Vacation policy" in _titles(ws, "vacation")  # the live one keeps serving


def test_rollback_serves_the_previous_generation_at_once_then_catches_up(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with Workspace.open(_config(tmp_path, manifest_url, corpus)) as ws:
        ws.sync()
    with Workspace.open(_config(tmp_path, manifest_url, corpus, tokens=128)) as ws:
        assert core.rebuild(ws.runtime)["indexes"][0]["result"] == "switched"
        (corpus / "notes" / "parking.md").write_text("# Parking\n\nBicycle parking is free.\n")
        ws.sync()  # only the live generation 2 receives it
        rolled = core.rollback(ws.runtime, "main", catch_up=False)
        assert rolled["live"] == 1 and rolled["pending"] == 1
        assert "Vacation policy" in _titles(ws, "vacation")  # served at once
        assert _titles(ws, "bicycle") == []  # not caught up yet
        live = core.status(ws.runtime)["indexes"][0]
        assert live["live"] == 1 and live["generations"][0]["pending"] == 1
        ws.index()
        assert "Parking" in _titles(ws, "bicycle")


def test_a_sink_only_change_makes_no_model_call(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with Workspace.open(_config(tmp_path, manifest_url, corpus)) as ws:
        ws.sync()
    with Workspace.open(_config(tmp_path, manifest_url, corpus, indexes=QDRANT)) as ws:
        assert any("sink schema" in w for w in ws.warnings())
        entry = core.rebuild(ws.runtime)["indexes"][0]
        assert entry["result"] == "switched", entry
        chunks = entry["index_report"]["chunks"]
        assert chunks["embedded"] == 0 and chunks["cache_hits"] > 0
        hits = ws.search("vacation days", groups=["staff"], mode="vector")
        assert hits and hits[0]["title"] == "Vacation policy"
        assert (tmp_path / "state" / "qdrant-main@2").is_dir()


def test_retire_drops_every_generation_but_live_and_previous_and_frees_disk(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = _config(tmp_path, manifest_url, corpus)
    with Workspace.open(config) as ws:
        ws.sync()
        core.rebuild(ws.runtime, force=True)
        core.rebuild(ws.runtime, force=True)
        state = tmp_path / "state"
        assert (state / "index-main.db").exists() and (state / "index-main@2.db").exists()
        assert core.retire(ws.runtime, "main")["retired"] == [1]
        assert not (state / "index-main.db").exists()  # disk freed
        assert (state / "index-main@2.db").exists() and (state / "index-main@3.db").exists()
        states = [g.state for g in ws.manifest.generations.list("main")]
        assert states == ["retired", "previous", "live"]
        assert "Vacation policy" in _titles(ws, "vacation")


def test_searches_across_a_switch_see_one_generation_never_a_mix(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with Workspace.open(_config(tmp_path, manifest_url, corpus)) as ws:
        ws.sync()
    with Workspace.open(_config(tmp_path, manifest_url, corpus, tokens=128)) as ws:
        core.rebuild(ws.runtime, switch=False)
        gens = {g.generation: g for g in ws.manifest.generations.list("main")}
        ids = {
            n: {h.chunk_id for h in _all_hits(ws, gens[n])} for n in (1, 2)
        }  # chunk ids embed the chunking version: the two sets are disjoint
        assert ids[1] and ids[2] and not ids[1] & ids[2]
        seen: list[set[str]] = []
        stop = threading.Event()

        def searcher() -> None:
            with Workspace.open(_config(tmp_path, manifest_url, corpus, tokens=128)) as mine:
                while not stop.is_set():
                    hits = mine.search(
                        "days", groups=["staff"], mode="keyword", k=50, per_document=False
                    )
                    seen.append({h["chunk_id"] for h in hits})
                    started.set()

        started = threading.Event()
        thread = threading.Thread(target=searcher)
        thread.start()
        try:
            assert started.wait(60)
            core.switch(ws.runtime, "main")
            after = len(seen)
            deadline = time.monotonic() + 60
            while len(seen) < after + 3 and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            stop.set()
            thread.join()
        assert all(s <= ids[1] or s <= ids[2] for s in seen)  # never a mix
        assert seen[0] <= ids[1] and seen[-1] <= ids[2]  # old before the switch, new after


def _all_hits(ws: Workspace, generation: object) -> list[object]:
    from headwater.sinks.base import SearchRequest
    from headwater.types import SearchMode, caller_principals

    sink = ws.indexes.generation_sink(generation)  # type: ignore[arg-type]
    principals = caller_principals(None, ["staff"])
    request = SearchRequest("days", None, principals, 50, SearchMode.KEYWORD)
    return list(sink.search(request))


def test_reconcile_checks_the_generation_it_is_given(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:

    with Workspace.open(_config(tmp_path, manifest_url, corpus)) as ws:
        ws.sync()
        core.rebuild(ws.runtime, force=True, switch=False)
        record = ws.manifest.document_by_object("docs", "readme.md")
        assert record is not None
        ws.manifest.index_state.forget("main@2", [record.document_id])  # drift in @2 only
        assert ws.reconcile().as_dict()["sinks"]["main"]["in_sync"]  # the live generation is fine
        drift = ws.reconcile(generation=2, repair=True).as_dict()["sinks"]["main@2"]
        assert drift["unconfirmed"] == 1 and drift["repaired"] == 1
        assert ws.reconcile(generation=2).as_dict()["sinks"]["main@2"]["in_sync"]


def test_reconcile_refuses_a_retired_generation_and_does_not_recreate_its_storage(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with Workspace.open(_config(tmp_path, manifest_url, corpus)) as ws:
        ws.sync()
        core.rebuild(ws.runtime, force=True)
        core.rebuild(ws.runtime, force=True)
        assert core.retire(ws.runtime, "main")["retired"] == [1]
        with pytest.raises(NotFoundError, match="main@1 is retired"):
            ws.reconcile(generation=1)
        assert not (tmp_path / "state" / "index-main.db").exists()  # disk stays freed


def test_reconcile_a_generation_checks_every_index_that_has_it(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    two = SQLITE + '[[index]]\nname = "other"\ntype = "sqlite"\n'
    with Workspace.open(_config(tmp_path, manifest_url, corpus, indexes=two)) as ws:
        ws.sync()
        assert core.rebuild(ws.runtime, ["main"], force=True)["indexes"][0]["result"] == "switched"
        report = ws.reconcile(generation=2).as_dict()["sinks"]
        assert list(report) == ["main@2"] and report["main@2"]["in_sync"]  # other has no @2
        assert list(ws.reconcile(generation=1).as_dict()["sinks"]) == ["main@1", "other@1"]
        with pytest.raises(NotFoundError, match="index 'other' has no generation 2"):
            ws.reconcile("other", generation=2)  # a named index without it is an error
        with pytest.raises(NotFoundError, match="no index has generation 3"):
            ws.reconcile(generation=3)


def test_old_generations_are_retired_after_keep_previous_for(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    config = _config(tmp_path, manifest_url, corpus, indexes=SQLITE.replace("30d", "1s"))
    with Workspace.open(config) as ws:
        ws.sync()
        core.rebuild(ws.runtime, force=True)
        assert [g.state for g in ws.manifest.generations.list("main")] == ["previous", "live"]
        time.sleep(1.2)
        ws.sync()  # retires at the end of the run
        assert [g.state for g in ws.manifest.generations.list("main")] == ["retired", "live"]
        assert not (tmp_path / "state" / "index-main.db").exists()


def _fake(dimension: int) -> str:
    return f'[embedder]\ntype = "fake"\ndimension = {dimension}\n'


def test_a_model_change_on_qdrant_builds_a_collection_per_generation(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    def config(dimension: int) -> Path:
        return write_config(
            tmp_path,
            manifest_url=manifest_url,
            sources=filesystem_source(corpus),
            indexes=QDRANT,
            embedder=_fake(dimension),
        )

    with Workspace.open(config(32)) as ws:
        ws.sync()
    shutil.rmtree(corpus)
    with Workspace.open(config(48)) as ws:
        entry = core.rebuild(ws.runtime)["indexes"][0]
        assert entry["result"] == "switched", entry
        assert ws.sink("main").collection == "headwater_main__g2"  # type: ignore[attr-defined]
        hits = ws.search("vacation days", groups=["staff"], mode="vector")
        assert hits and hits[0]["title"] == "Vacation policy"
        core.rollback(ws.runtime, "main")
        hits = ws.search("vacation days", groups=["staff"], mode="vector")  # 32 dims again
        assert hits and hits[0]["title"] == "Vacation policy"


def test_a_live_generation_whose_embedder_is_gone_stops_indexing_and_keeps_serving(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    from headwater.pipeline.embed.fake import FakeEmbedder

    config = _config(tmp_path, manifest_url, corpus)
    with Workspace.open(config, embedder=FakeEmbedder(32)) as ws:  # not reproducible later
        ws.sync()
    (corpus / "notes" / "parking.md").write_text("# Parking\n\nBicycle parking is free.\n")
    with Workspace.open(config) as ws:
        result = ws.sync()
        stopped = [w for w in result.warnings if "indexing into main stopped" in w]
        assert len(stopped) == 1 and "headwater rebuild main" in stopped[0], result.warnings
        assert "Vacation policy" in _titles(ws, "vacation")  # still served
        assert _titles(ws, "bicycle") == []
        assert core.rebuild(ws.runtime)["indexes"][0]["result"] == "switched"
        assert "Parking" in _titles(ws, "bicycle")


def test_doc_show_reports_the_live_generation(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with Workspace.open(_config(tmp_path, manifest_url, corpus)) as ws:
        ws.sync()
    (corpus / "readme.md").write_text("# Readme\n\nChanged after the switch.\n")
    with Workspace.open(_config(tmp_path, manifest_url, corpus, tokens=128)) as ws:
        core.rebuild(ws.runtime)
        ws.sync()
        doc = ws.document(source="docs", object_id="readme.md")
        assert doc["indexes"]["main"]["applied_revision"] == 2  # generation 2's row, not 1's


def _pending_metric(ws: Workspace) -> dict[tuple[str, str], float]:
    from types import SimpleNamespace

    from headwater.api.metrics import ManifestCollector

    collector = ManifestCollector(SimpleNamespace(ws=ws))  # type: ignore[arg-type]
    (family,) = [m for m in collector.collect() if m.name == "headwater_index_pending"]
    return {(s.labels["index"], s.labels["generation"]): s.value for s in family.samples}


def test_pending_is_reported_per_generation_against_its_own_settings(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with Workspace.open(_config(tmp_path, manifest_url, corpus)) as ws:
        ws.sync()
    with Workspace.open(_config(tmp_path, manifest_url, corpus, tokens=128)) as ws:
        # The config changed and no rebuild ran: the live generation is current with its
        # own settings, so nothing is pending (not every document).
        assert _pending_metric(ws) == {("main", "1"): 0.0}
        generation = core._needs(ws.runtime, "main", force=False)
        assert generation is not None and generation.generation == 2
        everything = float(ws.manifest.index_state.active_documents())
        assert _pending_metric(ws) == {("main", "1"): 0.0, ("main", "2"): everything}
        core.rebuild(ws.runtime)
        (corpus / "notes" / "parking.md").write_text("# Parking\n\nBicycle parking is free.\n")
        ws.sync(index=False)
        assert _pending_metric(ws) == {("main", "2"): 1.0}
