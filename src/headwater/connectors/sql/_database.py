"""The database side of the sql connector: engines, safe URLs and error classes.

URLs are normalised to the drivers Headwater ships (psycopg 3 for PostgreSQL, PyMySQL for
MySQL/MariaDB); sessions run in UTC so naive timestamps mean UTC. Driver errors become
Headwater errors by SQLSTATE (PostgreSQL) or error number (MySQL), each with a one-line
message that names the database (password hidden), what was expected and the fix.
"""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine

from headwater.errors import (
    ConfigError,
    CredentialError,
    FatalError,
    HeadwaterError,
    TransientError,
)

_DRIVERS = {
    "postgres": "postgresql+psycopg",
    "postgresql": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
    "mariadb": "mariadb+pymysql",
}
_PG_DENIED = {"28000", "28P01", "42501"}
_PG_TRANSIENT_PREFIXES = ("08", "53", "57P", "40")
_PG_TRANSIENT = {"55P03"}
_MY_DENIED = {1044, 1045, 1142, 1143, 1227, 1698}
_MY_TRANSIENT = {1040, 1053, 1205, 1213, 2002, 2003, 2006, 2013, 2055}


def parse_url(raw: str) -> URL:
    """The SQLAlchemy URL, with a plain ``postgresql://``/``mysql://`` mapped to our drivers."""
    try:
        url = sa.make_url(raw)
    except sa.exc.ArgumentError:
        raise ConfigError(
            "sql source: `url` is not a database URL; expected e.g. "
            "postgresql://user:password@host:5432/db; fix `url`"
        ) from None
    driver = _DRIVERS.get(url.drivername)
    return url.set(drivername=driver) if driver else url


def safe_url(url: URL) -> str:
    """The URL for messages and locators: never the password."""
    return url.set(password=None).render_as_string(hide_password=True)


def make_engine(url: URL) -> Engine:
    """An engine whose pool keeps a read's connection between its pages (each page's
    transaction ends when the page is fetched: the pool rolls back what it takes back),
    checked before each use; the connector disposes of it when a read or listing ends,
    so no connection outlives one."""
    connect_args: dict[str, Any] = {"connect_timeout": 10}
    if url.get_backend_name() == "postgresql":
        connect_args["options"] = "-c timezone=UTC"
    elif url.get_backend_name() in ("mysql", "mariadb"):
        connect_args["init_command"] = "SET time_zone = '+00:00'"
        connect_args["charset"] = "utf8mb4"
    try:
        return sa.create_engine(
            url, pool_size=1, max_overflow=2, pool_pre_ping=True, connect_args=connect_args
        )
    except (sa.exc.NoSuchModuleError, ImportError) as exc:
        raise ConfigError(
            f"sql source: no driver for {url.drivername!r} ({exc}); expected postgresql or "
            "mysql/mariadb URLs; fix `url` or install the driver"
        ) from None


def _reason(orig: BaseException) -> str:
    text = str(orig.args[1]) if len(orig.args) > 1 else str(orig)
    line = text.strip().splitlines()[0] if text.strip() else type(orig).__name__
    line = re.sub(r"^connection failed: ", "", line)
    return line[:200]


def classify(exc: Exception, *, where: str, table: str) -> HeadwaterError:
    """One Headwater error for a SQLAlchemy/driver error, in one actionable line."""
    orig = getattr(exc, "orig", None) or exc
    reason = _reason(orig)
    lowered = reason.lower()
    state = str(getattr(orig, "sqlstate", None) or "")
    number = orig.args[0] if orig.args and isinstance(orig.args[0], int) else None
    is_pg = type(orig).__module__.startswith("psycopg")
    if "refused" in lowered or "can't connect" in lowered or "could not connect" in lowered:
        return TransientError(
            f"sql database {where}: connection refused ({reason}); expected a running "
            "server there; check host and port in `url` or start the server"
        )
    denied = (state in _PG_DENIED) if is_pg else (number in _MY_DENIED)
    if is_pg and not state:
        denied = "role" in lowered and "does not exist" in lowered
        denied = denied or "password authentication failed" in lowered
        denied = denied or "pg_hba.conf" in lowered
    if denied:
        return CredentialError(
            f"sql database {where}: access denied (401/403: {reason}); expected a user "
            f"allowed to SELECT from {table}; fix the user/password in `url` or GRANT SELECT"
        )
    no_table = state == "42P01" or number == 1146
    if no_table:
        return ConfigError(
            f"sql table {table} not found in {where} (404: {reason}); expected an "
            "existing table or view; fix `table` (schema.table) or `query`"
        )
    if state == "3D000" or number == 1049 or ("database" in lowered and "not exist" in lowered):
        return ConfigError(
            f"sql database {where} not found (404: {reason}); expected an existing "
            "database; fix the database name in `url`"
        )
    if state == "42601" or number == 1064:
        return ConfigError(
            f"sql source {table} in {where}: the SQL is not valid ({reason}); expected "
            "one SELECT statement; fix `query` (or `table`)"
        )
    if state == "42703" or number == 1054:
        return ConfigError(
            f"sql source {table} in {where}: a configured column is missing ({reason}); "
            "fix `id_columns`, `title_column`, `content_*`, `*_column(s)` or the query"
        )
    transient = state in _PG_TRANSIENT or state.startswith(_PG_TRANSIENT_PREFIXES)
    if transient or number in _MY_TRANSIENT or isinstance(exc, sa.exc.TimeoutError):
        return TransientError(f"sql database {where}: {reason}; retrying later")
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return TransientError(f"sql database {where}: connection lost ({reason})")
    return FatalError(f"sql database {where}: {type(orig).__name__}: {reason}")
