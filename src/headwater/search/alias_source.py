"""Where ``[identity]`` aliases come from at search time: the table, a file and a SQL query.

The table in ``headwater.toml`` is fixed for the process. ``aliases_file`` (a CSV file,
``alias_file``) is read at load and again at the first search after it changes, so
editing it takes effect without a restart or a re-read of any source. ``query`` (with
``url``, any SQLAlchemy URL) names aliases kept elsewhere, an HR or identity database: it
is run when a search needs aliases and its answer is kept for ``cache_ttl`` (default one
minute), so an alias added or removed there takes effect within that time. Its rows are
``(alias, user)`` pairs. All three are merged and checked the same way (one canonical
user per alias, no chains), each alias keeping its origin for ``whois``.

A part that fails (the file became unreadable or contradicts the table; the database
is down, the SQL is wrong, a row is malformed or contradicts the rest) fails closed:
searches go on without that part's aliases, so nobody gains a name they might not have,
and the error is logged and carried in ``IdentityAliases.error`` (``whois`` and
``search --explain`` show it). A query failure is remembered for ``cache_ttl`` too, so a
database that is down does not slow every search.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from headwater.errors import ConfigError
from headwater.search.alias_file import FileSignature, read_alias_file
from headwater.search.aliases import AliasEntry, IdentityAliases

log = logging.getLogger(__name__)

DEFAULT_TTL = 60.0
QUERY = "[identity] query"
"""Where an alias the query answered was given."""

# One part's read: its entries (None: it failed) and why it failed.
_Part = tuple[list[AliasEntry] | None, str | None]


class AliasSource:
    """The aliases in force now: the table, the file as it is now, and the query's rows
    while they are fresh."""

    def __init__(
        self,
        table: Mapping[str, str],
        *,
        query: str | None = None,
        url: str | None = None,
        ttl: float = DEFAULT_TTL,
        now: Callable[[], float] = time.monotonic,
        file: Path | None = None,
    ) -> None:
        self._table = [AliasEntry(a, u) for a, u in table.items()]
        self.table = IdentityAliases.from_entries(self._table)
        self._query = query
        self._url = url
        self._ttl = ttl
        self._now = now
        self._file = file
        self._lock = threading.Lock()
        self._file_read: tuple[FileSignature | None, _Part] | None = None
        self._query_read: tuple[float, _Part] | None = None
        self._reads = 0  # parts read so far: the merged aliases are kept until a new read
        self._merged: tuple[int, IdentityAliases] | None = None
        if file is not None:  # a bad file at start is a ConfigError, as in config.load
            self.table = IdentityAliases.from_entries([*self._table, *read_alias_file(file)])

    def current(self) -> IdentityAliases:
        """The merged aliases: the file re-read if it changed, the query's rows cached for
        the TTL; a part that fails is left out, with ``error`` saying why."""
        if self._query is None and self._file is None:
            return self.table
        with self._lock:
            file_part = self._file_part()
            query_part = self._query_part()
            if self._merged is not None and self._merged[0] == self._reads:
                return self._merged[1]
            merged = self._merge(file_part, query_part)
            self._merged = (self._reads, merged)
            return merged

    def _file_part(self) -> _Part:
        if self._file is None:
            return [], None
        try:
            signature: FileSignature | None = FileSignature.of(self._file)
        except OSError:
            signature = None  # gone: read_alias_file names the error
        if self._file_read is not None and self._file_read[0] == signature:
            return self._file_read[1]
        try:
            part: _Part = (read_alias_file(self._file), None)
        except ConfigError as exc:
            part = (None, str(exc))
        self._file_read = (signature, part)
        self._reads += 1
        return part

    def _query_part(self) -> _Part:
        if self._query is None:
            return [], None
        if self._query_read is not None and self._now() - self._query_read[0] < self._ttl:
            return self._query_read[1]
        try:
            part: _Part = ([AliasEntry(a, u, QUERY) for a, u in self._rows()], None)
        except ConfigError as exc:
            part = (None, str(exc))
        except SQLAlchemyError as exc:
            part = (
                None,
                f"[identity] query failed on {self._shown_url()}: "
                f"{type(exc).__name__}: {str(exc).splitlines()[0]}; expected it to answer "
                "rows of (alias, user); check `url`, `query` and that the database is up",
            )
        self._query_read = (self._now(), part)
        self._reads += 1
        return part

    def _merge(self, *parts: _Part) -> IdentityAliases:
        """The table plus each part that reads and agrees with what came before it."""
        entries: Sequence[AliasEntry] = self._table
        merged, errors = IdentityAliases.from_entries(entries), []
        for found, error in parts:
            if found is not None:
                try:
                    merged = IdentityAliases.from_entries([*entries, *found])
                    entries = [*entries, *found]
                    continue
                except ConfigError as exc:
                    error = str(exc)
            if error is not None:
                errors.append(error)
        if not errors:
            return merged
        message = "; ".join(errors)
        fallback = "the [identity] aliases table only" if self._file is None else "the others"
        log.error("%s; searching with %s", message, fallback)
        return IdentityAliases(merged.canonical_of, message, merged.origin_of)

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
