"""The CLI's hot paths import only what they run: search, status and a no-op sync.

Each command runs in a real subprocess (``import_probe.cli_modules``) on a synced
workspace (fake embedder, a filesystem source, the sqlite index, a SQLite manifest) and
the modules left in ``sys.modules`` at exit are checked: none of ``HEAVY`` ever, and
neither the model runtime for ``status`` and a no-op ``sync``. The real model's search
path (ONNX) is held to the same list in ``tests/pipeline/test_embed_onnx.py``. Installed
entry points (connector, sink and embedder classes) are read once per process.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from headwater import plugins
from headwater.connectors import load_connector_class
from headwater.sinks import load_sink_class
from import_probe import HEAVY, MODEL_RUNTIME, cli_modules, loaded
from workspace_helpers import filesystem_source, write_config


@pytest.fixture
def synced(tmp_path: Path, corpus: Path) -> Path:
    write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    done, _ = cli_modules(["sync", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path


def test_search_imports_nothing_heavy(synced: Path) -> None:
    done, modules = cli_modules(
        ["search", "vacation days", "--as", "ana@acme.example", "--group", "staff", "--json"],
        synced,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"], done.stdout  # the search really ran
    assert "headwater.sinks.sqlite" in modules
    assert loaded(modules, HEAVY) == []


def test_status_and_a_noop_sync_load_no_model_runtime(synced: Path) -> None:
    for args in (["status", "--json"], ["sync", "--json"]):
        done, modules = cli_modules(args, synced)
        assert done.returncode == 0, done.stderr
        assert "headwater.manifest.store" in modules
        assert loaded(modules, HEAVY + MODEL_RUNTIME) == [], args


def test_installed_entry_points_are_read_once_per_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[None] = []
    real = metadata.entry_points

    def counting() -> Any:
        reads.append(None)
        return real()

    monkeypatch.setattr(plugins.metadata, "entry_points", counting)
    plugins._installed.cache_clear()
    try:
        for _ in range(3):
            assert load_connector_class("filesystem").__name__ == "FilesystemConnector"
            assert load_sink_class("sqlite").__name__ == "SqliteSink"
        assert len(reads) == 1
    finally:
        plugins._installed.cache_clear()
