"""A thin SQLite connection that can load sqlite-vec, whichever binding provides it.

CPython's own ``sqlite3`` is often built without extension loading, so the sink talks to
SQLite through ``apsw`` (wheels everywhere, loads extensions) and falls back to
``pysqlite3`` (``pysqlite3-binary`` on Linux). Both are wrapped in ``Database``: explicit
``BEGIN IMMEDIATE`` transactions, rows as tuples, and a busy database turned into
``TransientError`` so the core retries it.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol

from headwater.errors import FatalError, TransientError

DriverName = Literal["auto", "apsw", "pysqlite3"]
BUSY_TIMEOUT_MS = 10_000
# Pages are read through a memory map of the file, not copied into each connection's own
# cache: every process that searches the index (each `serve` worker) reads the same pages
# of the OS page cache, and the CPU's caches hold one copy of them, not one per process
# (docs/performance.md, "One copy of the index's pages"). SQLite caps it at its build's
# SQLITE_MAX_MMAP_SIZE and maps no more of the file than there is.
MMAP_BYTES = 1 << 40

Row = tuple[Any, ...]


class DriverUnavailable(Exception):
    """This binding cannot be used here (not installed, or cannot load extensions)."""


def vec_extension_path() -> str:
    """sqlite-vec's loadable extension (no platform suffix, as ``load_extension`` takes it).

    Found next to the package without importing it when the file is there: the package's
    ``__init__`` imports numpy (~0.1 s) for helpers the sink never uses, and a no-op sync
    has no other use for numpy. Anything unexpected asks the package itself.
    """
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None:
        raise ImportError("No module named 'sqlite_vec'")
    for location in spec.submodule_search_locations or ():
        if any(Path(location).glob("vec0.*")):
            return str(Path(location) / "vec0")
    import sqlite_vec

    return str(sqlite_vec.loadable_path())


def damaged(path: Path, exc: Exception) -> FatalError:
    """The error for an index file SQLite cannot read (not a database, malformed)."""
    return FatalError(
        f"the index file {path} is damaged ({exc}); move it away with its -wal and -shm "
        f"files (`mv {path} {path}.damaged`), then run `headwater reconcile --repair` to "
        "write it again from the manifest (add `--generation N` for a generation that is "
        "not live, see `headwater rebuild status`)"
    )


def _is_damage(exc: Exception) -> bool:
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text


class _Raw(Protocol):
    """What ``Database`` needs from a binding's connection."""

    def run(self, sql: str, args: Sequence[Any]) -> list[Row]: ...

    def run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def close(self) -> None: ...


class _Apsw:
    def __init__(self, path: Path) -> None:
        try:
            import apsw

            extension = vec_extension_path()
        except ImportError as exc:
            raise DriverUnavailable(f"apsw is not importable ({exc})") from exc
        self._apsw = apsw
        self._path = path
        self._conn = apsw.Connection(str(path))
        try:
            self._conn.enable_load_extension(True)
            self._conn.load_extension(extension)
            self._conn.enable_load_extension(False)
        except apsw.Error as exc:
            self._conn.close()
            raise DriverUnavailable(f"apsw could not load sqlite-vec ({exc})") from exc
        self._conn.set_busy_timeout(BUSY_TIMEOUT_MS)

    def run(self, sql: str, args: Sequence[Any]) -> list[Row]:
        try:
            return self._conn.execute(sql, tuple(args)).fetchall()  # rows are tuples
        except (self._apsw.BusyError, self._apsw.LockedError) as exc:
            raise TransientError(f"the index database is busy ({exc}); retry later") from exc
        except (self._apsw.NotADBError, self._apsw.CorruptError) as exc:
            raise damaged(self._path, exc) from exc

    def run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = [tuple(r) for r in rows]
        if not batch:
            return
        try:
            self._conn.executemany(sql, batch)
        except (self._apsw.BusyError, self._apsw.LockedError) as exc:
            raise TransientError(f"the index database is busy ({exc}); retry later") from exc
        except (self._apsw.NotADBError, self._apsw.CorruptError) as exc:
            raise damaged(self._path, exc) from exc

    def close(self) -> None:
        self._conn.close()


class _Pysqlite3:
    def __init__(self, path: Path) -> None:
        try:
            from pysqlite3 import dbapi2

            extension = vec_extension_path()
        except ImportError as exc:
            raise DriverUnavailable(f"pysqlite3 is not importable ({exc})") from exc
        self._dbapi = dbapi2
        self._path = path
        self._conn = dbapi2.connect(
            str(path),
            isolation_level=None,
            check_same_thread=False,
            timeout=BUSY_TIMEOUT_MS / 1000,
        )
        try:
            self._conn.enable_load_extension(True)
            self._conn.load_extension(extension)
            self._conn.enable_load_extension(False)
        except (AttributeError, dbapi2.Error) as exc:
            self._conn.close()
            raise DriverUnavailable(f"pysqlite3 could not load sqlite-vec ({exc})") from exc

    def _busy(self, exc: Exception) -> bool:
        text = str(exc).lower()
        return "locked" in text or "busy" in text

    def run(self, sql: str, args: Sequence[Any]) -> list[Row]:
        try:
            return [tuple(row) for row in self._conn.execute(sql, tuple(args)).fetchall()]
        except self._dbapi.DatabaseError as exc:
            self._raise(exc)
            raise

    def _raise(self, exc: Exception) -> None:
        if isinstance(exc, self._dbapi.OperationalError) and self._busy(exc):
            raise TransientError(f"the index database is busy ({exc}); retry later") from exc
        if _is_damage(exc):
            raise damaged(self._path, exc) from exc

    def run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        batch = [tuple(r) for r in rows]
        if not batch:
            return
        try:
            self._conn.executemany(sql, batch)
        except self._dbapi.DatabaseError as exc:
            self._raise(exc)
            raise

    def close(self) -> None:
        self._conn.close()


DriverFactory = Callable[[Path], _Raw]

DRIVERS: dict[str, DriverFactory] = {"apsw": _Apsw, "pysqlite3": _Pysqlite3}


class Database:
    """One connection, serialized by a lock; writes happen inside ``transaction()``."""

    def __init__(self, raw: _Raw, driver: str) -> None:
        self._raw = raw
        self.driver = driver
        self._lock = threading.RLock()
        self._closed = False

    def execute(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        """Run ``sql`` with ``args``; the rows it returns."""
        with self._lock:
            self._check_open()
            return self._raw.run(sql, args)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run ``sql`` once for each of ``rows``."""
        with self._lock:
            self._check_open()
            self._raw.run_many(sql, rows)

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; any exception rolls everything back."""
        with self._lock:
            self._check_open()
            self._raw.run("BEGIN IMMEDIATE", ())
            try:
                yield self
            except BaseException:
                self._raw.run("ROLLBACK", ())
                raise
            self._raw.run("COMMIT", ())

    @contextmanager
    def snapshot(self) -> Iterator[Database]:
        """A read transaction: every statement inside sees the same committed state."""
        with self._lock:
            self._check_open()
            self._raw.run("BEGIN", ())
            try:
                yield self
            finally:
                self._raw.run("COMMIT", ())

    def close(self) -> None:
        """Close the database (once)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._raw.close()

    def _check_open(self) -> None:
        if self._closed:
            raise FatalError("the sqlite index was used after close(); open a new sink")


def connect(
    path: Path, driver: DriverName = "auto", drivers: dict[str, DriverFactory] | None = None
) -> Database:
    """Open ``path`` with sqlite-vec loaded, trying apsw then pysqlite3 for ``auto``.

    ``drivers`` replaces the known bindings (a test seam). Raises ``FatalError`` naming
    the fix when no binding can load the extension.
    """
    known = DRIVERS if drivers is None else drivers
    names = list(known) if driver == "auto" else [driver]
    problems: list[str] = []
    for name in names:
        factory = known.get(name)
        if factory is None:
            problems.append(f"{name}: unknown driver")
            continue
        try:
            database = Database(factory(path), name)
        except DriverUnavailable as exc:
            problems.append(f"{name}: {exc}")
            continue
        database.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        return database
    raise FatalError(
        "the sqlite index needs a SQLite binding that can load the sqlite-vec extension, "
        f"and none worked ({'; '.join(problems)}); "
        "fix: `pip install apsw sqlite-vec` (or `pip install pysqlite3-binary` on Linux)"
    )
