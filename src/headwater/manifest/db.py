"""Opening the manifest database: engine settings and automatic migrations.

SQLite (the default) runs in WAL mode with a busy timeout, and write transactions
begin IMMEDIATE so concurrent writers queue instead of failing. A writer waits at most
``lease_seconds + IDLE_SLACK_SECONDS`` (30 s at most) for the write lock; then it fails
with a ``TransientError`` naming the process that holds the lock (from ``/proc/locks``)
and the lease it holds (``sqlite_lock.py``): SQLite cannot take a lock from a live
process, so a process frozen inside a write transaction blocks every writer until it
continues or dies. PostgreSQL sessions end a transaction left idle for ``lease_seconds
+ IDLE_SLACK_SECONDS`` (``idle_in_transaction_session_timeout``): a frozen owner cannot
hold row locks, and so block a lease takeover, for longer (``leases.py``).
Every open brings the schema to head, in one transaction, so a workspace never runs on a
half-migrated manifest. A manifest already at head (nearly every open) is recognized by
one plain query of alembic's version table against the heads read from the migration
files, and then Alembic is not even imported (it costs a CLI command ~0.3 s); anything
else (no table, an older or unknown revision) goes to Alembic, which decides under the
migration lock.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError

from headwater.clock import utcnow
from headwater.errors import ConfigError, FatalError, ManifestDamaged, TransientError
from headwater.manifest.sqlite_lock import write_lock_report
from headwater.retry import retry_while_sqlite_busy

MIGRATIONS = Path(__file__).parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000
IDLE_SLACK_SECONDS = 5  # a frozen transaction outlives its lease by at most this long
MIGRATE_LOCK = 0x48575F4D  # "HW_M": the advisory lock that serializes migrations
VERSION_TABLE = "alembic_version"
MMAP_BYTES = 1 << 40  # SQLite caps it at its build's SQLITE_MAX_MMAP_SIZE (2 GiB in most)
_REVISION = re.compile(r"^revision\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(.+)$", re.MULTILINE)
_QUOTED = re.compile(r"['\"]([^'\"]+)['\"]")


def _sqlite_pragmas(busy_ms: int) -> Any:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # transactions are begun explicitly, below
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
            # The switch to WAL fails at once, busy timeout or not, while another process
            # creates the file: it waits with a retry instead.
            retry_while_sqlite_busy(lambda: cursor.execute("PRAGMA journal_mode=WAL"))
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            # Read through a memory map: the processes on one manifest (each `serve`
            # worker) share the OS page cache's pages instead of each copying them.
            cursor.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        finally:
            cursor.close()

    return on_connect


def _postgres_timeouts(idle_ms: int) -> Any:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(f"SET idle_in_transaction_session_timeout = {idle_ms}")
        dbapi_connection.commit()

    return on_connect


def _begin(connection: Any) -> None:
    """Write transactions take SQLite's write lock when they start, reads never do.

    A deferred SQLite transaction that reads and then writes fails at once (no busy wait)
    if another connection committed in between; the indexer and the runner write from two
    threads, so write transactions (``begin_write``) start IMMEDIATE and wait their turn.
    A wait that runs out names the process holding the write lock.
    """
    if not connection.get_execution_options().get("headwater_write", False):
        connection.exec_driver_sql("BEGIN")
        return
    waited_from = utcnow()
    try:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    except OperationalError as exc:
        if "locked" not in str(exc.orig) and "busy" not in str(exc.orig):
            raise
        raise TransientError(
            write_lock_report(connection.engine.url.database or "", waited_from)
        ) from exc


def begin_write(engine: Engine) -> Any:
    """``engine.begin()`` for a transaction that will write."""
    return engine.execution_options(headwater_write=True).begin()


def create_manifest_engine(url: str, *, lease_seconds: int = 60) -> Engine:
    """An engine for ``url``; SQLite files get their directory created and WAL mode.

    ``lease_seconds`` (``[sync] lease_seconds``) bounds how long a transaction may block
    others: SQLite's busy wait, PostgreSQL's idle-in-transaction timeout (see above).
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(
            f"manifest.url {url!r} is not a database URL; expected e.g. "
            "'sqlite:///.headwater/manifest.db' or 'postgresql+psycopg://user@host/db'."
        ) from exc
    bound_ms = (lease_seconds + IDLE_SLACK_SECONDS) * 1000
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        busy_ms = min(SQLITE_BUSY_TIMEOUT_MS, bound_ms)
        engine = create_engine(url, connect_args={"timeout": busy_ms / 1000})
        event.listen(engine, "connect", _sqlite_pragmas(busy_ms))
        event.listen(engine, "begin", _begin)
        event.listen(engine, "handle_error", _damage_named(parsed.database or ""))
        return engine
    if parsed.get_backend_name() == "postgresql":
        engine = create_engine(url, pool_pre_ping=True)
        event.listen(engine, "connect", _postgres_timeouts(bound_ms))
        event.listen(engine, "handle_error", _pg_damage_named(parsed))
        return engine
    raise ConfigError(
        f"manifest.url uses {parsed.get_backend_name()!r}; expected sqlite or postgresql. "
        "Point manifest.url at a SQLite file or a PostgreSQL database."
    )


@functools.cache
def migration_heads() -> frozenset[str]:
    """The head revisions of the shipped migrations, read from their files' text (the
    ``revision = "..."`` and ``down_revision = ...`` lines), without importing Alembic."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        found = _REVISION.search(source)
        if found is None:
            continue
        revisions.add(found.group(1))
        down = _DOWN_REVISION.search(source)
        if down is not None:
            parents.update(_QUOTED.findall(down.group(1)))
    return frozenset(revisions - parents)


def at_head(engine: Engine) -> bool:
    """Whether the manifest's recorded revisions are exactly the shipped heads (two small
    read-only queries; no version table means a new manifest)."""
    with engine.connect() as connection:
        if connection.dialect.name == "sqlite":
            found = connection.execute(
                text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"),
                {"name": VERSION_TABLE},
            ).first()
        else:
            found = connection.execute(
                text("SELECT to_regclass(:name)"), {"name": VERSION_TABLE}
            ).scalar()
        if found is None:
            return False
        rows = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}"))
        recorded = {str(row[0]) for row in rows}
    heads = migration_heads()
    return bool(heads) and recorded == heads


def migrate(engine: Engine) -> None:
    """Upgrade the manifest schema to the newest migration (nothing when it is there)."""
    try:
        if at_head(engine):
            return
        _upgrade(engine)
    except DatabaseError as exc:
        raise _open_error(engine, exc) from exc


def _upgrade(engine: Engine) -> None:
    """Alembic's upgrade to head, in one transaction, under the migration lock."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    # SQLite: BEGIN IMMEDIATE, so a second process opening a new manifest waits for the
    # first one's migration instead of failing "database is locked".
    with begin_write(engine) as connection:
        if connection.dialect.name == "postgresql":
            # Two processes opening a fresh manifest at once: one migrates, one waits (and
            # then finds nothing to do); a reader that saw "at head" saw it committed.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATE_LOCK})
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


# SQLite's result codes for a file it cannot read as a database (extended codes included:
# SQLITE_CORRUPT_INDEX, SQLITE_CORRUPT_VTAB, SQLITE_CORRUPT_SEQUENCE).
DAMAGED_SQLITE_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


# PostgreSQL's SQLSTATEs for data it cannot read back: data_corrupted (an invalid page,
# a bad checksum), index_corrupted, and a relation's file gone (undefined_file).
DAMAGED_POSTGRES_STATES = {"XX001": "data", "XX002": "index", "58P01": "data"}


def damaged_manifest(path: str, reason: str) -> ManifestDamaged:
    """The error for a SQLite manifest file that cannot be read, with the way back."""
    return ManifestDamaged(
        f"the manifest {path} is damaged ({reason}). Restore it from a backup, or move "
        f"it away (`mv {path} {path}.damaged`), run `headwater sync --no-index` to "
        "rebuild it from the sources, then `headwater reconcile --adopt` to bring the "
        "indexes in line."
    )


def damaged_postgres_manifest(where: str, reason: str, kind: str) -> ManifestDamaged:
    """The error for a PostgreSQL manifest whose server cannot read a page back."""
    first = (
        "Rebuild the damaged index (`REINDEX TABLE` the table it names, from psql), then "
        "run the command again; if that fails too, restore"
        if kind == "index"
        else "Restore"
    )
    return ManifestDamaged(
        f"the manifest database {where} is damaged ({reason}). {first} the database from "
        "a backup (pg_restore, or point-in-time recovery), or create an empty database, "
        "point manifest.url at it, run `headwater sync --no-index` to rebuild it from the "
        "sources, then `headwater reconcile --adopt` to bring the indexes in line. Check "
        "the server's disk and its log first: damage there may not be the last."
    )


def _damage_named(path: str) -> Callable[[ExceptionContext], None]:
    """A ``handle_error`` hook: a statement that meets a damaged page (SQLite's
    ``SQLITE_CORRUPT*`` and ``SQLITE_NOTADB``) raises ``ManifestDamaged``, so a run
    records the damage and the fix, not the statement and its parameters. Every other
    error (busy, locked, a constraint) passes unchanged."""

    def hook(context: ExceptionContext) -> None:
        found = context.original_exception
        name = getattr(found, "sqlite_errorname", "")
        if isinstance(found, sqlite3.Error) and name.startswith(DAMAGED_SQLITE_CODES):
            reason = " ".join(str(found).split()).rstrip(".")
            raise damaged_manifest(path, reason) from context.sqlalchemy_exception

    return hook


def _pg_damage_named(url: URL) -> Callable[[ExceptionContext], None]:
    """A ``handle_error`` hook: a statement whose pages the PostgreSQL server cannot read
    (``DAMAGED_POSTGRES_STATES``) raises ``ManifestDamaged`` with the way back."""
    where = url.render_as_string(hide_password=True)

    def hook(context: ExceptionContext) -> None:
        state = getattr(context.original_exception, "sqlstate", None)
        if state in DAMAGED_POSTGRES_STATES:
            reason = " ".join(str(context.original_exception).split()).rstrip(".")
            kind = DAMAGED_POSTGRES_STATES[state]
            raise damaged_postgres_manifest(where, reason, kind) from (context.sqlalchemy_exception)

    return hook


def _open_error(engine: Engine, exc: DatabaseError) -> FatalError:
    """Why the manifest cannot be opened, and the fix for this engine."""
    where = engine.url.render_as_string(hide_password=True)
    reason = " ".join(str(exc.orig).split()).rstrip(".")  # libpq's hint is a second line
    if engine.url.get_backend_name() != "sqlite":
        return FatalError(
            f"cannot open the manifest at {where}: {reason}. "
            "Check that the database server runs and the URL is right."
        )
    path = engine.url.database or ""
    if not isinstance(exc, OperationalError):  # garbage bytes: "file is not a database"
        return damaged_manifest(path, reason)
    return FatalError(
        f"cannot open the SQLite manifest {path}: {reason}. Check that its directory "
        "exists and is writable by this user (workspace.state_dir or manifest.url in "
        "headwater.toml), and that the path is a file, not a directory."
    )
