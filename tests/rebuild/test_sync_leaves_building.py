"""A sync during a rebuild indexes the live generation only and says what it left.

A generation in ``building`` has the whole corpus pending; a one-file sync beside it must
not embed that backlog (issue 28, rough edge 3). ``sync --json`` reports the backlog as
``index.left_to_rebuild``, the human output says it in a line, and the rebuild (or the
scheduler's drain, ``headwater run``) still fills the generation, the synced edit
included, and verifies it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from headwater import Workspace
from headwater.cli.app import app, register_commands
from headwater.manifest.generations import BUILDING
from headwater.rebuilds import orchestrate as core
from headwater.scheduler.daemon import Scheduler
from workspace_helpers import filesystem_source, write_config

FILES = 30


def cli(config: Path, *args: str) -> Any:
    register_commands()
    result = CliRunner().invoke(app, ["--config", str(config), *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result.stdout


def workspace(tmp_path: Path, manifest_url: str) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(FILES):
        (corpus / f"note{n:02d}.txt").write_text(f"harbour note {n} about the tides.\n")
    config = write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    return config, corpus


def start_building(config: Path) -> int:
    """Create main's next generation as `rebuild` does, and leave it unbuilt (a rebuild
    in another process that has not reached its first batch yet)."""
    with Workspace.open(config) as ws:
        generation = core._needs(ws.runtime, "main", force=True)
        assert generation is not None and generation.state == BUILDING
        return generation.generation


def pending(config: Path, generation: int) -> int:
    with Workspace.open(config) as ws:
        rows = ws.rebuild_status().as_dict()["indexes"][0]["generations"]
    return next(int(g["pending"]) for g in rows if g["generation"] == generation)


def test_a_sync_beside_a_rebuild_indexes_the_live_generation_and_leaves_the_rest(
    tmp_path: Path, manifest_url: str
) -> None:
    config, corpus = workspace(tmp_path, manifest_url)
    first = cli(config, "sync", "--json")
    assert first["index"]["documents"]["replaced"] == FILES
    assert first["index"]["left_to_rebuild"] == []
    building = start_building(config)
    assert pending(config, building) == FILES

    (corpus / "note07.txt").write_text("harbour note 7, revised: the spring tide is early.\n")
    synced = cli(config, "sync", "--json")
    index = synced["index"]
    assert index["documents"] == {"replaced": 1, "deleted": 0, "acl_updates": 0, "failed": 0}
    assert index["left_to_rebuild"] == [{"index": "main", "generation": building, "pending": FILES}]
    assert pending(config, building) == FILES  # nothing of the backlog was done

    (corpus / "note08.txt").write_text("harbour note 8, revised: neap tide on Friday.\n")
    human = cli(config, "sync")
    assert f"left {FILES} documents to the building generation main@{building} of main" in human
    assert "indexed: 1 replaced" in human

    rebuilt = cli(config, "rebuild", "--json")["indexes"][0]
    assert (rebuilt["generation"], rebuilt["result"]) == (building, "switched"), rebuilt
    assert rebuilt["index_report"]["documents"]["replaced"] == FILES
    with Workspace.open(config) as ws:
        assert ws.live_generation("main").generation == building
        hits = ws.search("spring tide early", groups=["staff"], mode="keyword", k=3)
        assert "revised" in hits[0]["snippet"]
        assert ws.reconcile().as_dict()["sinks"]["main"]["in_sync"]
    after = cli(config, "sync", "--json")
    assert after["index"]["left_to_rebuild"] == []


def test_the_scheduler_indexes_what_a_sync_left_to_the_building_generation(
    tmp_path: Path, manifest_url: str
) -> None:
    config, corpus = workspace(tmp_path, manifest_url)
    cli(config, "sync", "--json")
    building = start_building(config)
    (corpus / "note03.txt").write_text("harbour note 3, revised: a storm surge.\n")
    left = cli(config, "sync", "--json")["index"]["left_to_rebuild"]
    assert left == [{"index": "main", "generation": building, "pending": FILES}]
    # The scheduler's drain (its start-up catch-up, and after runs) is `headwater index`:
    # it fills every write-state generation, the building one included.
    assert Scheduler(config, once=True).serve() == 0
    assert pending(config, building) == 0
    drained = cli(config, "index", "--json")
    assert drained["documents"]["replaced"] == 0 and "left_to_rebuild" not in drained
    rebuilt = cli(config, "rebuild", "--json")["indexes"][0]
    assert (rebuilt["generation"], rebuilt["result"]) == (building, "switched"), rebuilt
