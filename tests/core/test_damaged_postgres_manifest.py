"""A PostgreSQL manifest whose server cannot read a page back says so, and the way back.

A private server (``pg_embedded``) holds the manifest; after a sync it is shut down, the
first page of the ``documents`` table's data file is overwritten, and it is started
again. A command that reads the table then meets PostgreSQL's ``invalid page`` error
(SQLSTATE XX001): it must stop with ``ManifestDamaged``, naming the damage and the fix,
not a traceback or "bug in Headwater", and a sync must record that message, never the
statement and its parameters.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pg_embedded import EmbeddedServer
from workspace_helpers import filesystem_source, write_config

pytestmark = pytest.mark.server


def cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headwater.cli", "-c", str(config), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "400"},
        timeout=300,
    )


@pytest.fixture
def server() -> Iterator[EmbeddedServer]:
    started = EmbeddedServer()
    try:
        yield started
    finally:
        started.stop()


def damage_the_documents_table(server: EmbeddedServer) -> None:
    with psycopg.connect(server.url) as conn:
        row = conn.execute("SELECT pg_relation_filepath('documents')").fetchone()
    assert row is not None
    data_file = server.data / row[0]

    def overwrite_the_first_page() -> None:
        with data_file.open("r+b") as handle:
            handle.write(bytes(range(256)) * 32)  # 8 KiB: the page header is garbage

    server.restart(overwrite_the_first_page)  # the shutdown writes every dirty buffer first


def test_a_damaged_postgresql_manifest_names_the_damage_and_the_fix(
    tmp_path: Path, corpus: Path, server: EmbeddedServer
) -> None:
    url = server.url.replace("postgresql://", "postgresql+psycopg://", 1)
    config = write_config(tmp_path, manifest_url=url, sources=filesystem_source(corpus))
    assert cli(config, "sync", "--no-index").returncode == 0
    damage_the_documents_table(server)

    done = cli(config, "reconcile")
    assert done.returncode == 1, done.stderr
    message = " ".join(done.stderr.split())
    assert "bug in Headwater" not in message and "Traceback" not in message
    assert "is damaged" in message and "invalid page" in message
    assert "pg_restore" in message and "headwater reconcile --adopt" in message

    synced = cli(config, "sync", "--no-index", "--json")
    assert synced.returncode == 1
    (run,) = json.loads(synced.stdout)["runs"]
    assert run["status"] == "failed"
    assert run["error"].startswith("ManifestDamaged: the manifest database ")
    assert "[SQL:" not in run["error"] and "[parameters:" not in run["error"]
