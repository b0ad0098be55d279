"""Opening a SQLite file another process is creating waits; it never fails "locked".

While one connection holds the write lock of a brand-new file (still in rollback-journal
mode: the first of several processes opening a new manifest or index, creating its
schema), another connection's switch to WAL fails at once with "database is locked",
whatever the busy timeout. Every SQLite file Headwater opens (manifest, sqlite index,
embedding cache, web link cache) must wait that writer out instead.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from headwater.connectors.web.linkcache import LinkCache
from headwater.errors import TransientError
from headwater.manifest.db import create_manifest_engine
from headwater.pipeline.embed.cache import EmbeddingCache
from headwater.retry import retry_while_sqlite_busy
from headwater.sinks.sqlite import SqliteOptions, SqliteSink
from headwater.sinks.testing import sink_context


def open_manifest(path: Path) -> None:
    engine = create_manifest_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        engine.dispose()


def open_index(path: Path) -> None:
    SqliteSink(SqliteOptions(path=path), sink_context(path.parent)).close()


def open_embedding_cache(path: Path) -> None:
    EmbeddingCache(path).close()


def open_link_cache(path: Path) -> None:
    LinkCache(path).close()


WRITER = """
import sqlite3, sys, time
writer = sqlite3.connect(sys.argv[1], isolation_level=None)
writer.execute("BEGIN IMMEDIATE")
writer.execute("CREATE TABLE being_created (x)")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
writer.execute("COMMIT")
"""


@contextmanager
def writer_creating(path: Path, hold_for: float) -> Iterator[None]:
    """Another process that creates ``path`` and holds its write lock for ``hold_for`` s.

    A process, not a thread: the sqlite index talks through apsw's own copy of SQLite,
    and two copies of SQLite in one process do not see each other's POSIX locks.
    """
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(hold_for)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "holding\n"
        yield
    finally:
        assert writer.wait(timeout=30) == 0


@pytest.mark.parametrize(
    "opener", [open_manifest, open_index, open_embedding_cache, open_link_cache]
)
def test_opening_waits_out_another_process_creating_the_file(
    tmp_path: Path, opener: Callable[[Path], None]
) -> None:
    path = tmp_path / "state.db"
    with writer_creating(path, hold_for=0.3):
        opener(path)
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert check.execute("SELECT count(*) FROM being_created").fetchone() == (0,)


def test_busy_retry_waits_out_locked_and_busy_and_reraises_anything_else() -> None:
    attempts: list[str] = []
    busy: list[Exception] = [
        sqlite3.OperationalError("database is locked"),
        TransientError("the index database is busy (BusyError); retry later"),
    ]

    def busy_twice() -> str:
        attempts.append("try")
        if busy:
            raise busy.pop(0)
        return "done"

    assert retry_while_sqlite_busy(busy_twice) == "done"
    assert len(attempts) == 3

    def broken() -> None:
        attempts.append("try")
        raise sqlite3.OperationalError("no such table: sources")

    attempts.clear()
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_while_sqlite_busy(broken)
    assert attempts == ["try"]


def test_busy_retry_gives_up_after_its_patience() -> None:
    def always_locked() -> None:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        retry_while_sqlite_busy(always_locked, patience=0.05)
