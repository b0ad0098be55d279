"""Where ``[identity]`` aliases come from at search time: the table, and a SQL query.

The table in ``headwater.toml`` is fixed for the process. ``query`` (with ``url``, any
SQLAlchemy URL) names aliases kept elsewhere, an HR or identity database: it is run when
a search needs aliases and its answer is kept for ``cache_ttl`` (default one minute), so
an alias added or removed there takes effect within that time, without re-reading any
source. Its rows are ``(alias, user)`` pairs, merged with the table and checked the same
way (one canonical user per alias, no chains).

A query that fails (the database is down, the SQL is wrong, a row is malformed or
contradicts the table) fails closed: searches go on with the table's aliases only, so
nobody gains a name they might not have, and the error is logged and carried in
``IdentityAliases.error`` (``whois`` and ``search --explain`` show it). A failure is
remembered for ``cache_ttl`` too, so a database that is down does not slow every search.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from headwater.errors import ConfigError
from headwater.search.aliases import IdentityAliases

log = logging.getLogger(__name__)

DEFAULT_TTL = 60.0


class AliasSource:
    """The aliases in force now: the table, plus the query's rows while they are fresh."""

    def __init__(
        self,
        table: Mapping[str, str],
        *,
        query: str | None = None,
        url: str | None = None,
        ttl: float = DEFAULT_TTL,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.table = IdentityAliases.from_table(table)
        self._table = dict(table)
        self._query = query
        self._url = url
        self._ttl = ttl
        self._now = now
        self._lock = threading.Lock()
        self._cached: tuple[float, IdentityAliases] | None = None

    def current(self) -> IdentityAliases:
        """The merged aliases (cached for the TTL); the table alone, with ``error`` set,
        when the query fails."""
        if self._query is None:
            return self.table
        with self._lock:
            if self._cached is not None and self._now() - self._cached[0] < self._ttl:
                return self._cached[1]
            found = self._read()
            self._cached = (self._now(), found)
            return found

    def _read(self) -> IdentityAliases:
        try:
            rows = self._rows()
            merged = dict(self._table)
            for alias, user in rows:
                if merged.get(alias, user) != user:  # same key twice, two users
                    raise ConfigError(
                        f"[identity] query: alias {alias!r} is given for both "
                        f"{merged[alias]!r} and {user!r}; expected one canonical user per "
                        "alias; fix the rows or the table"
                    )
                merged[alias] = user
            return IdentityAliases.from_table(merged)
        except ConfigError as exc:
            message = str(exc)
        except SQLAlchemyError as exc:
            message = (
                f"[identity] query failed on {self._shown_url()}: "
                f"{type(exc).__name__}: {str(exc).splitlines()[0]}; expected it to answer "
                "rows of (alias, user); check `url`, `query` and that the database is up"
            )
        log.error("%s; searching with the [identity] aliases table only", message)
        return replace(self.table, error=message)

    def _rows(self) -> list[tuple[str, str]]:
        assert self._query is not None and self._url is not None
        engine = create_engine(self._url, poolclass=NullPool)
        try:
            with engine.connect() as conn:
                result = conn.execute(text(self._query))
                rows = [tuple(row) for row in result]
        finally:
            engine.dispose()
        bad = [row for row in rows if len(row) != 2 or not all(isinstance(v, str) for v in row)]
        if bad:
            raise ConfigError(
                f"[identity] query returned {bad[0]!r}; expected rows of two strings "
                "(alias, user); select exactly those two columns"
            )
        return [(str(a), str(u)) for a, u in rows]

    def _shown_url(self) -> str:
        assert self._url is not None
        return make_url(self._url).render_as_string(hide_password=True)


def check_url(url: str) -> str:
    """``url`` if SQLAlchemy can parse it, else ``ValueError`` naming the fix."""
    try:
        make_url(url)
    except ArgumentError:
        raise ValueError(
            "[identity] url is not a database URL (not shown: it may hold a secret); expected e.g. "
            "'postgresql+psycopg://user:${PASSWORD}@host/db' or 'sqlite:///aliases.db'"
        ) from None
    return url
