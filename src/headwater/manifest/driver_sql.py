"""Hot reads compiled once per driver and run as the driver's own SQL.

SQLAlchemy compiles a Core ``select`` once and caches the result, but at every execution
it still computes the statement's cache key, fills its parameters and wraps each row in a
``Row``: 0.15–0.25 ms for the small reads a search makes of the manifest (the index's live
generation, the caller's synced groups, the gate over ~150 document ids) — more than
SQLite spends answering them — and ~1 µs a row of a no-op's lookups. A
``DriverStatement`` is built and compiled once per dialect, driver and key; it runs as
driver SQL (``exec_driver_sql``: same connection, transaction and error handling), binds
its parameters in the driver's style with the literals the ``select`` holds, and converts
only the columns and parameters whose type the dialect converts (SQLite's timestamps), as
SQLAlchemy would. Where that cannot be done exactly (an expanding ``IN``, a bind name the
driver needs escaped, another dialect), it runs the ``select`` through SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Dialect, Engine, Select

# The dialects whose compiled SQL and parameters are passed to the driver as they are.
_DIRECT = ("sqlite", "postgresql")


@dataclass(frozen=True)
class DriverStatement:
    """One ``select``, compiled for one driver: run it with ``rows``."""

    query: Select[Any]
    sql: str | None  # None: run ``query`` through SQLAlchemy
    order: tuple[str, ...] | None  # positional parameters' names, in order; None: named
    defaults: Mapping[str, Any]  # the literals the statement binds (``state = 'active'``)
    binds: Mapping[str, Callable[[Any], Any]]  # parameters the dialect converts
    results: tuple[Callable[[Any], Any] | None, ...]  # each column's converter, if any

    def rows(self, conn: Connection, values: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
        """The statement's rows for ``values`` (by bind name), as tuples."""
        if self.sql is None:
            return conn.execute(self.query, dict(values)).all()
        return self._converted(driver_rows(conn, self.sql, self._params(values)))

    def read(self, engine: Engine, values: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
        """``rows`` as a read of its own: one statement on a pooled driver connection, in
        the driver's own transaction (SQLite: none, the statement's snapshot; PostgreSQL:
        rolled back when the connection goes back to the pool), outside SQLAlchemy's
        ``Connection``. A search makes three such reads of the manifest; a ``Connection``,
        its ``BEGIN`` and its execution context cost more than SQLite answering them
        (docs/performance.md). Only for a read that one statement answers whole: several
        that must agree share a transaction (``rows``). A driver error is raised as
        SQLAlchemy raises it, by reading through SQLAlchemy once more."""
        if self.sql is None:
            with engine.connect() as conn:
                return self.rows(conn, values)
        params = self._params(values)
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            try:
                cursor.execute(self.sql, params)
                found: Sequence[Sequence[Any]] = cursor.fetchall()
            finally:
                cursor.close()
        except engine.dialect.loaded_dbapi.Error:
            raw.close()
            with engine.connect() as conn:
                return self.rows(conn, values)
        raw.close()
        return self._converted(found)

    def _params(self, values: Mapping[str, Any]) -> Any:
        """``values`` with the statement's literals, converted and ordered for the driver."""
        given = {**self.defaults, **values}
        for name, convert in self.binds.items():
            given[name] = convert(given[name])
        return given if self.order is None else tuple(given[n] for n in self.order)

    def _converted(self, rows: Sequence[Sequence[Any]]) -> Sequence[Sequence[Any]]:
        """``rows`` with each column the dialect converts converted (SQLite's timestamps)."""
        converted = [(i, c) for i, c in enumerate(self.results) if c is not None]
        if not converted:
            return rows
        found: list[Sequence[Any]] = []
        for row in rows:
            cells = list(row)
            for at, convert in converted:
                cells[at] = convert(cells[at])
            found.append(tuple(cells))
        return found


def driver_statement(
    dialect: Dialect, key: Hashable, build: Callable[[], Select[Any]]
) -> DriverStatement:
    """The statement ``build()`` makes, compiled for ``dialect``'s driver once per ``key``
    (the key names what ``build`` depends on besides the dialect)."""
    cache_key = (dialect.name, dialect.driver, dialect.paramstyle, key)
    found = _COMPILED.get(cache_key)
    if found is None:
        found = _COMPILED[cache_key] = _compile(dialect, build())
    return found


def _compile(dialect: Dialect, query: Select[Any]) -> DriverStatement:
    compiled = query.compile(dialect=dialect)
    direct = (
        dialect.name in _DIRECT
        and not any(b.expanding for b in compiled.binds.values())
        and not compiled.escaped_bind_names
        and not any(b.callable for b in compiled.binds.values())
    )
    if not direct:
        return DriverStatement(query, None, None, {}, {}, ())
    binds: dict[str, Callable[[Any], Any]] = {}
    defaults: dict[str, Any] = {}
    for bind, name in compiled.bind_names.items():
        convert = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if convert is not None:
            binds[name] = convert
        if not bind.required:  # a literal the statement holds (``literal(None)`` too)
            defaults[name] = bind.effective_value
    results = tuple(
        column.type.dialect_impl(dialect).result_processor(dialect, None)
        for column in query.selected_columns
    )
    order = tuple(compiled.positiontup or ()) if compiled.positional else None
    return DriverStatement(query, str(compiled), order, defaults, binds, results)


def driver_rows(conn: Connection, statement: str, params: Any) -> Sequence[Sequence[Any]]:
    """The rows of driver SQL ``statement`` as the driver's own tuples, not SQLAlchemy
    ``Row`` objects (0.6 µs a row of a no-op's lookup); a driver error while fetching is
    raised as SQLAlchemy raises it, by fetching through SQLAlchemy once more."""
    result = conn.exec_driver_sql(statement, params)
    try:
        rows: Sequence[Sequence[Any]] = result.cursor.fetchall()
    except conn.dialect.loaded_dbapi.Error:
        return conn.exec_driver_sql(statement, params).all()
    finally:
        result.close()
    return rows


# (dialect, driver, paramstyle, key) -> the compiled statement; a handful of entries
_COMPILED: dict[tuple[str, str, str, Hashable], DriverStatement] = {}
