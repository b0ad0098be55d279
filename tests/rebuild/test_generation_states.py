"""Generation state changes are conditional, so two processes never both win (SQLite and
PostgreSQL manifests).

A retired generation never becomes verifying, ready or live; ``switch`` makes live only a
``ready`` generation and verifies it again first; a ``rebuild cancel`` from another
process while a rebuild runs wins: the rebuild (stopped at a failpoint, continued after
the cancel) ends ``cancelled``, its generation stays retired, its storage stays deleted,
and searches keep reading the old live generation.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from headwater import Workspace
from headwater.errors import ConfigError
from headwater.manifest.generations import BUILDING, READY, RETIRED, VERIFYING
from headwater.rebuilds import orchestrate as core
from workspace_helpers import filesystem_source, write_config

HEADWATER = [sys.executable, "-m", "headwater.cli"]


def configure(tmp_path: Path, manifest_url: str, corpus: Path, *, dimension: int) -> Path:
    return write_config(
        tmp_path,
        manifest_url=manifest_url,
        sources=filesystem_source(corpus, access='{ groups = ["staff"] }'),
        embedder=f'[embedder]\ntype = "fake"\ndimension = {dimension}\n',
        extra="[sync]\nindex_batch_size = 1\n",
    )


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("HEADWATER_FAILPOINTS", None)
    return subprocess.run(
        [*HEADWATER, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def titles(tmp_path: Path, query: str) -> list[str]:
    done = cli(tmp_path, "search", query, "--group", "staff", "--mode", "keyword", "--json")
    assert done.returncode == 0, done.stderr
    return [h["title"] for h in json.loads(done.stdout)["results"]]


def states(ws: Workspace) -> dict[int, str]:
    return {g.generation: g.state for g in ws.manifest.generations.list("main")}


def is_stopped(pid: int) -> bool:
    """Whether the process is stopped (state T in /proc), i.e. it reached its failpoint."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] in ("T", "t")


def test_a_retired_generation_never_becomes_verifying_ready_or_live(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with Workspace.open(configure(tmp_path, manifest_url, corpus, dimension=32)) as ws:
        ws.sync()
        assert core.rebuild(ws.runtime, force=True, switch=False)["indexes"][0]["result"] == "ready"
        gens = ws.manifest.generations
        assert gens.set_state("main", 2, RETIRED)
        for state in (BUILDING, VERIFYING, READY):
            assert not gens.set_state("main", 2, state), state
        with pytest.raises(ConfigError, match="main@2 is retired, not ready; nothing switched"):
            gens.switch("main", 2)
        assert states(ws) == {1: "live", 2: "retired"}
        assert core.rebuild(ws.runtime, force=True, switch=False)["indexes"][0]["generation"] == 3
        assert gens.set_state("main", 3, BUILDING)  # a build in progress is not ready
        with pytest.raises(ConfigError, match="main@3 is building, not ready"):
            gens.switch("main", 3)
        assert not gens.set_state("main", 1, RETIRED)  # the live one is never dropped
        assert states(ws) == {1: "live", 2: "retired", 3: "building"}
        assert "Vacation policy" in [h["title"] for h in ws.search("vacation", groups=["staff"])]


def test_switch_verifies_the_ready_generation_again_and_refuses_a_bad_one(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    with Workspace.open(configure(tmp_path, manifest_url, corpus, dimension=32)) as ws:
        ws.sync()
        assert core.rebuild(ws.runtime, force=True, switch=False)["indexes"][0]["result"] == "ready"
        ready = ws.manifest.generations.get("main", 2)
        # gen 2 loses a document after it was verified (storage damaged, a stray delete):
        # the manifest still records it applied, so no catch-up writes it again
        vacation = next(
            r for r in ws.manifest.documents_after("", 100) if r.title == "Vacation policy"
        )
        ws.indexes.generation_sink(ready).delete(vacation.document_id, vacation.revision + 1)
        report = core.switch(ws.runtime, "main")
        assert report["result"] == "failed", report
        assert any("missing in main@2" in p for p in report["problems"]), report
        assert states(ws) == {1: "live", 2: "failed"}
        assert "Vacation policy" in [h["title"] for h in ws.search("vacation", groups=["staff"])]


def test_a_cancel_from_another_process_during_a_running_rebuild_wins(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    configure(tmp_path, manifest_url, corpus, dimension=32)
    assert cli(tmp_path, "sync", "--json").returncode == 0
    configure(tmp_path, manifest_url, corpus, dimension=48)  # a model change: main@2
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HEADWATER_FAILPOINTS": "after_index_batch:stop"}
    rebuild = subprocess.Popen(
        [*HEADWATER, "rebuild", "--json"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not is_stopped(rebuild.pid):
            assert rebuild.poll() is None, rebuild.communicate()
            assert time.monotonic() < deadline, "the rebuild never reached its failpoint"
            time.sleep(0.05)
        status = json.loads(cli(tmp_path, "rebuild", "status", "--json").stdout)
        building = status["indexes"][0]["generations"][1]
        assert building["state"] == "building" and building["documents"] == 1, building
        cancelled = cli(tmp_path, "rebuild", "cancel", "main", "--json")
        assert cancelled.returncode == 0, cancelled.stderr
        assert not (tmp_path / "state" / "index-main@2.db").exists()
        rebuild.send_signal(signal.SIGCONT)
        stdout, stderr = rebuild.communicate(timeout=300)
    finally:
        if rebuild.poll() is None:
            rebuild.send_signal(signal.SIGCONT)
            rebuild.kill()
            rebuild.wait()
    assert rebuild.returncode == 1, stderr
    entry: dict[str, Any] = json.loads(stdout)["indexes"][0]
    assert entry["result"] == "cancelled" and entry["live"] == 1, entry
    with Workspace.open(tmp_path / "headwater.toml") as ws:
        assert states(ws) == {1: "live", 2: "retired"}
        assert ws.manifest.index_state.totals("main@2") == (0, 0)
    assert not (tmp_path / "state" / "index-main@2.db").exists()
    assert "Vacation policy" in titles(tmp_path, "vacation")  # the old live one serves
    again = cli(tmp_path, "rebuild", "--json")  # and a new rebuild builds main@3
    assert again.returncode == 0, again.stderr
    rebuilt = json.loads(again.stdout)["indexes"][0]
    assert rebuilt["result"] == "switched" and rebuilt["generation"] == 3, rebuilt
    assert "Vacation policy" in titles(tmp_path, "vacation")
