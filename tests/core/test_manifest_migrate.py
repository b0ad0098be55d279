"""Opening a manifest: an old one is migrated, one at head is opened without Alembic.

The heads are read from the migration files' text; the first test holds that reading to
Alembic's own answer, so a new migration cannot be missed by the shortcut.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from headwater.manifest.db import (
    MIGRATIONS,
    at_head,
    create_manifest_engine,
    migration_heads,
)
from headwater.manifest.store import Manifest

SRC = Path(__file__).resolve().parents[2] / "src"


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def recorded_versions(url: str) -> set[str]:
    engine = create_manifest_engine(url)
    try:
        with engine.connect() as conn:
            return {row[0] for row in conn.execute(text("SELECT version_num FROM alembic_version"))}
    finally:
        engine.dispose()


def test_heads_read_from_the_files_are_alembics_heads() -> None:
    heads = set(ScriptDirectory.from_config(alembic_config()).get_heads())
    assert migration_heads() == heads and len(heads) == 1


def test_an_old_manifest_is_still_migrated(manifest_url: str) -> None:
    engine = create_manifest_engine(manifest_url)
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0006")
    assert not at_head(engine)
    assert "generations" not in inspect(engine).get_table_names()
    engine.dispose()

    Manifest.open(manifest_url).close()

    assert recorded_versions(manifest_url) == set(migration_heads())
    engine = create_manifest_engine(manifest_url)
    try:
        assert "generations" in inspect(engine).get_table_names() and at_head(engine)
    finally:
        engine.dispose()


def test_a_manifest_at_head_opens_without_importing_alembic(manifest_url: str) -> None:
    Manifest.open(manifest_url).close()  # a new manifest: Alembic creates it
    probe = (
        "import sys\n"
        "from headwater.manifest.store import Manifest\n"
        f"m = Manifest.open({manifest_url!r})\n"
        "print(m.manifest_id)\n"
        "m.close()\n"
        "assert 'alembic' not in sys.modules, 'alembic was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.strip()) > 8  # the manifest id: the schema is really there


def test_concurrent_opens_of_a_new_manifest_all_succeed(manifest_url: str) -> None:
    probe = (
        f"from headwater.manifest.store import Manifest\nManifest.open({manifest_url!r}).close()\n"
    )
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    opens = [
        subprocess.Popen([sys.executable, "-c", probe], env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    failures = [p.communicate()[1] for p in opens if p.wait() != 0]
    assert failures == []
    assert recorded_versions(manifest_url) == set(migration_heads())


def test_a_sqlite_manifest_is_read_through_a_memory_map(tmp_path: Path) -> None:
    # the processes on one manifest (each `serve` worker) read the OS page cache's pages
    engine = create_manifest_engine(f"sqlite:///{tmp_path / 'manifest.db'}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA mmap_size").scalar() >= 2**31 - 2**16
    finally:
        engine.dispose()
