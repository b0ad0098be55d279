"""The content/index version split: only a parser change re-reads sources.

A chunker setting, the embedder or a sink's schema change the index version: the live
generation keeps its own settings (sync says `headwater rebuild` is needed), and the
rebuild re-chunks and re-embeds stored content into a new generation without fetching
any source object. A parser version
change changes the content version: every object is fetched and parsed again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import Workspace
from headwater.pipeline import parse
from headwater.rebuilds.orchestrate import rebuild
from headwater.rebuilds.orchestrate import status as rebuild_status
from headwater.sinks.sqlite import SqliteSink
from workspace_helpers import filesystem_source, write_config

FAKE = '[embedder]\ntype = "fake"\ndimension = {dimension}\n'


def _config(
    tmp_path: Path, manifest_url: str, corpus: Path, *, max_tokens: int = 64, dimension: int = 32
) -> Path:
    index = '[[index]]\nname = "main"\ntype = "sqlite"\n'
    return write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus),
        indexes=index,
        embedder=FAKE.format(dimension=dimension),
        extra=f"[chunker]\nmax_tokens = {max_tokens}\n",
    )


def _first_sync(config: Path) -> tuple[int, dict[str, object]]:
    with Workspace.open(config) as ws:
        result = ws.sync()
        run = result.runs[0]
        assert run.counts.new > 0 and run.fetched == run.counts.new
        assert result.index.replaced == run.counts.new
        return run.counts.new, ws.status()


def _versions(status: dict[str, object]) -> tuple[object, object]:
    indexes = status["indexes"]
    assert isinstance(indexes, dict)
    return status["content_version"], indexes["main"]["index_version"]


@pytest.mark.parametrize("change", ["chunker", "embedder", "sink_schema"])
def test_an_index_version_change_is_rebuilt_without_reading_any_source(
    tmp_path: Path,
    manifest_url: str,
    corpus: Path,
    change: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    documents, before = _first_sync(_config(tmp_path, manifest_url, corpus))
    if change == "chunker":
        config = _config(tmp_path, manifest_url, corpus, max_tokens=128)
    elif change == "embedder":
        config = _config(tmp_path, manifest_url, corpus, dimension=48)
    else:
        config = _config(tmp_path, manifest_url, corpus)
        monkeypatch.setattr(SqliteSink, "schema_version", SqliteSink.schema_version + "-next")
    with Workspace.open(config) as ws:
        content, index = _versions(ws.status())
        assert content == _versions(before)[0]
        assert index != _versions(before)[1]
        result = ws.sync()
        run = result.runs[0]
        assert run.fetched == 0  # no source object was read
        assert run.counts.unchanged == documents and run.counts.changed == 0
        assert result.index.replaced == 0  # the live generation keeps its own settings
        assert any("headwater rebuild main" in w for w in result.warnings)
        built = rebuild(ws.runtime)["indexes"][0]
        assert built["result"] == "switched", built
        assert built["index_report"]["documents"]["replaced"] == documents
        assert ws.status()["indexes"]["main"]["pending"] == 0
        hits = ws.search("vacation days", groups=["staff"], mode="keyword")
        assert hits and hits[0]["title"]
        again = ws.sync()
        assert again.runs[0].fetched == 0 and again.index.replaced == 0
        assert not any("rebuild" in w for w in again.warnings)


def test_a_parser_version_change_rereads_every_source_object(
    tmp_path: Path, manifest_url: str, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(tmp_path, manifest_url, corpus)
    documents, before = _first_sync(config)
    monkeypatch.setitem(parse.PARSER_VERSIONS, "markdown", parse.PARSER_VERSIONS["markdown"] + "+1")
    with Workspace.open(config) as ws:
        content, index = _versions(ws.status())
        assert content != _versions(before)[0] and index != _versions(before)[1]
        run = ws.sync().runs[0]
        assert run.fetched == documents  # every object read and parsed again
        record = ws.document(source="docs", object_id="readme.md")
        assert record["pipeline_version"] == content
        # The live generation follows the new parsers (no rebuild needed), and rebuild
        # status reports the version it is kept at now, with nothing pending.
        (live,) = rebuild_status(ws.runtime)["indexes"][0]["generations"]
        assert live["index_version"] == index and live["pending"] == 0, live
        assert rebuild(ws.runtime)["indexes"][0]["result"] == "up_to_date"


def test_status_shows_the_content_version_and_each_index_version(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    indexes = (
        '[[index]]\nname = "main"\ntype = "sqlite"\n\n[[index]]\nname = "second"\ntype = "sqlite"\n'
    )
    config = write_config(
        tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus), indexes=indexes
    )
    with Workspace.open(config) as ws:
        status = ws.status()
        assert status["content_version"] == ws.content_version
        for name in ("main", "second"):
            assert status["indexes"][name]["index_version"] == ws.indexes.version(
                next(s for s in ws.index_sections if s.name == name)
            )
        assert ws.content_version != status["indexes"]["main"]["index_version"]


def test_a_running_workspace_reports_the_generation_another_process_switched_in(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    """A server opened before `headwater rebuild` (with the config of its start) answered
    GET /v1/indexes with its config's version for ever: `live_version` is the version of
    the generation searches read now, read from the manifest on every call."""
    _first_sync(_config(tmp_path, manifest_url, corpus))
    with Workspace.open(_config(tmp_path, manifest_url, corpus)) as server:
        old = server.status()["indexes"]["main"]
        assert old["live_version"] == old["index_version"]
        with Workspace.open(_config(tmp_path, manifest_url, corpus, max_tokens=128)) as cli:
            assert rebuild(cli.runtime)["indexes"][0]["result"] == "switched"
            new_version = cli.status()["indexes"]["main"]["live_version"]
        assert new_version != old["live_version"]
        now = server.status()["indexes"]["main"]
        assert now["live_version"] == new_version and now["pending"] == 0, now
        assert now["index_version"] == old["index_version"]  # its config did not change
