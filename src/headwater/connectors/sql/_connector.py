"""The sql connector: rows of a table or query, read in keyset pages ordered by id.

Each page is one short query, ``WHERE (ids) > (last ids) ORDER BY ids LIMIT page_size``,
run in its own transaction with a server-side cursor and retried as a whole, so no
transaction stays open while the core works, a large table never sits in memory, and the
last id tuple of a page is a checkpoint a resumed run continues from. The pages of one
read share a connection (one a page was 5 % of a no-op's time), closed when the read
ends. With an ``updated_at_column`` the read honours the run's window, widened by
``window_overlap`` before its start: a row committed late by a transaction that began
before the last run (PostgreSQL's ``now()`` is the transaction's start) is still read,
and the version gate absorbs the re-reads. Deletes are found by ``enumerate()``, one
streamed query over the id columns. JSON columns arrive as objects on every server:
MariaDB's JSON (a LONGTEXT with a ``json_valid`` check) and MySQL's are decoded from
their text.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal

import sqlalchemy as sa
from pydantic import Field, SecretStr, field_validator, model_validator

from headwater.clock import as_utc
from headwater.connectors.base import (
    ConnectorCapabilities,
    ConnectorOptions,
    ReadStream,
    SourceContext,
    versions_of,
)
from headwater.connectors.sql import _rows
from headwater.connectors.sql._database import classify, make_engine, parse_url, safe_url
from headwater.errors import ConfigError, ItemError
from headwater.retry import RetryPolicy, call_with_retry
from headwater.types import Checkpoint, Failure, KnownVersions, SourceDocument, Stage, Window
from headwater.units import parse_duration

log = logging.getLogger(__name__)


class SqlOptions(ConnectorOptions):
    """The keys of a ``sql`` source."""

    url: SecretStr
    table: str | None = None
    query: str | None = None
    id_columns: list[str] = Field(min_length=1)
    title_column: str | None = None
    content_columns: list[str] = Field(default_factory=list)
    content_template: str | None = None
    media_type: Literal["text/plain", "text/markdown"] = "text/plain"
    updated_at_column: str | None = None
    metadata_columns: list[str] = Field(default_factory=list)
    access_column: str | None = None
    locator_template: str | None = None
    page_size: int = Field(default=1000, ge=1, le=100_000)
    window_overlap: str = "30m"
    json_columns: list[str] = Field(default_factory=list)

    @field_validator("query")
    @classmethod
    def _one_statement(cls, value: str | None) -> str | None:
        """A trailing ``;`` (and whitespace) is dropped: the query is used as a subquery."""
        return re.sub(r"[\s;]+$", "", value) if value is not None else None

    @field_validator("window_overlap")
    @classmethod
    def _duration(cls, value: str) -> str:
        try:
            parse_duration(value)
        except (ValueError, ConfigError) as exc:
            raise ValueError(
                f'window_overlap {value!r} is not a duration; expected e.g. "30m", "2h" or "0s"'
            ) from exc
        return value

    @field_validator("content_template", "locator_template")
    @classmethod
    def _bare_fields(cls, value: str | None) -> str | None:
        if value is not None:
            _rows.template_fields(value)
        return value

    @model_validator(mode="after")
    def _one_source_one_content(self) -> SqlOptions:
        if (self.table is None) == (self.query is None):
            raise ValueError("set exactly one of `table` or `query`")
        if bool(self.content_columns) == (self.content_template is not None):
            raise ValueError("set exactly one of `content_columns` or `content_template`")
        return self

    def columns(self) -> list[str]:
        """Every column the connector reads, ids first, each once."""
        names = [*self.id_columns]
        for template in (self.content_template, self.locator_template):
            if template is not None:
                names += _rows.template_fields(template)
        names += [*self.content_columns, *self.metadata_columns]
        names += [c for c in (self.title_column, self.updated_at_column, self.access_column) if c]
        return list(dict.fromkeys(names))


class SqlConnector:
    """Reads rows of one table or query from PostgreSQL or MySQL/MariaDB."""

    type_name: ClassVar[str] = "sql"
    capabilities: ClassVar[ConnectorCapabilities] = ConnectorCapabilities()
    Options: ClassVar[type[SqlOptions]] = SqlOptions

    def __init__(self, options: SqlOptions, context: SourceContext) -> None:
        self.options = options
        self.context = context
        url = parse_url(options.url.get_secret_value())
        self._where = safe_url(url)
        self._mysql = url.get_backend_name() in ("mysql", "mariadb")
        self._engine = make_engine(url)
        self._label = repr(options.table) if options.table else "the query"
        windowed = options.updated_at_column is not None
        # Capabilities follow the options: windowed with an updated_at column, else every
        # read is a full listing. (An instance attribute shadows the class default.)
        setattr(self, "capabilities", ConnectorCapabilities(windowed, not windowed))  # noqa: B010
        names = options.columns()
        if options.table is not None:
            schema, _, name = options.table.rpartition(".")
            source: Any = sa.table(name, *(sa.column(c) for c in names), schema=schema or None)
        else:
            text = sa.text(options.query or "").columns(*(sa.column(c) for c in names))
            source = text.subquery("hw_rows")
        self._source = source
        self._ids = [source.c[c] for c in options.id_columns]
        self._overlap = parse_duration(options.window_overlap) or timedelta(0)
        self._json: set[str] | None = None  # JSON columns, found on the first page

    # -- plumbing ------------------------------------------------------------------------

    def _run(self, fn: Any, attempts: int = 3) -> Any:
        def attempt() -> Any:
            try:
                return fn()
            except sa.exc.SQLAlchemyError as exc:
                raise classify(exc, where=self._where, table=self._label) from None

        return call_with_retry(attempt, RetryPolicy(attempts=attempts))

    def _bound(self, moment: datetime) -> datetime:
        utc = as_utc(moment)
        return utc.replace(tzinfo=None) if self._mysql else utc

    def _page(self, window: Window, after: Sequence[Any] | None) -> list[Mapping[str, Any]]:
        stmt = sa.select(*self._source.c).where(*(c.is_not(None) for c in self._ids))
        if self.options.updated_at_column is not None:
            moment = self._source.c[self.options.updated_at_column]
            inside = moment <= self._bound(window.end)
            if window.start is not None:
                inside = sa.and_(inside, moment > self._bound(window.start - self._overlap))
            # A row without a time is in every window (Window.contains), as an undated
            # feed entry is: the version gate skips it while it is unchanged.
            stmt = stmt.where(sa.or_(moment.is_(None), inside))
        if after is not None:
            # Untyped parameters: a cursor keeps a uuid, timestamp or decimal id as text,
            # and a VARCHAR-typed one fails on PostgreSQL (`uuid > character varying`);
            # untyped, the server reads the text as the column's type.
            last = (sa.bindparam(None, value, type_=sa.types.NullType()) for value in after)
            stmt = stmt.where(sa.tuple_(*self._ids) > sa.tuple_(*last))
        stmt = stmt.order_by(*self._ids).limit(self.options.page_size)

        def fetch() -> list[Mapping[str, Any]]:
            with self._engine.connect() as conn:
                result = conn.execution_options(stream_results=True, yield_per=500).execute(stmt)
                names = list(result.keys())  # a row is a tuple: zipped with them, a dict
                return [dict(zip(names, row, strict=True)) for row in result]

        rows: list[Mapping[str, Any]] = self._run(fetch)
        json_columns = self._json_columns()
        return [_rows.decode_json(row, json_columns) for row in rows] if json_columns else rows

    def _json_columns(self) -> set[str]:
        """``json_columns``, plus a table's JSON columns on MySQL/MariaDB (whose drivers
        hand JSON over as text; PostgreSQL's already decodes it)."""
        if self._json is not None:
            return self._json
        found = set(self.options.json_columns)
        if self._mysql and self.options.table is not None:
            schema, _, name = self.options.table.rpartition(".")
            found |= self._run(lambda: self._reflect_json(schema or None, name)) & set(
                self.options.columns()
            )
        self._json = found
        return found

    def _reflect_json(self, schema: str | None, name: str) -> set[str]:
        where = "TABLE_SCHEMA = COALESCE(:schema, DATABASE()) AND TABLE_NAME = :name"
        checks = (
            "SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE "
            "CONSTRAINT_SCHEMA = COALESCE(:schema, DATABASE()) AND TABLE_NAME = :name"
        )
        params = {"schema": schema, "name": name}
        with self._engine.connect() as conn:
            typed = conn.execute(
                sa.text(
                    f"SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE {where} "
                    "AND DATA_TYPE = 'json'"
                ),
                params,
            ).scalars()
            found = {str(c) for c in typed}
            for clause in conn.execute(sa.text(checks), params).scalars():
                match = re.fullmatch(r"json_valid\(`((?:[^`]|``)+)`\)", str(clause).strip())
                if match:
                    found.add(match.group(1).replace("``", "`"))
        return found

    # -- the contract --------------------------------------------------------------------

    def validate(self) -> None:
        """Read one row of the table or query once, without retries."""
        stmt = sa.select(*self._source.c).limit(1)

        def probe() -> None:
            with self._engine.connect() as conn:
                conn.execute(stmt).all()

        try:
            self._run(probe, attempts=1)
        finally:
            self._engine.dispose()

    def read(
        self, window: Window, checkpoint: Checkpoint | None, known: KnownVersions
    ) -> ReadStream:
        """Yield the rows in keyset pages by id, resuming after the checkpoint's ids."""
        after = _resume_after(checkpoint)
        try:
            while True:
                rows = self._page(window, after)
                ids = [
                    _rows.object_id_of([row[c] for c in self.options.id_columns]) for row in rows
                ]
                versions = versions_of(known, ids)  # one manifest query a page, not one a row
                for row, object_id in zip(rows, ids, strict=True):
                    yield self._item(row, object_id, versions)
                if not rows:
                    break
                after = [_rows.cursor_value(row[c]) for c in self.options.id_columns]
                yield Checkpoint(json.dumps({"v": 1, "after": after}))
                if len(rows) < self.options.page_size:
                    break
        finally:
            self._engine.dispose()  # the read's connection: none stays open after it
        return Checkpoint(json.dumps({"v": 1, "complete": True}))

    def enumerate(self) -> Iterator[str]:
        """Every row's object id, streamed; raises if the query cannot finish."""
        stmt = sa.select(*self._ids).where(*(c.is_not(None) for c in self._ids))
        try:
            with self._engine.connect() as conn:
                streamed = conn.execution_options(stream_results=True, yield_per=5000)
                for row in streamed.execute(stmt):
                    yield _rows.object_id_of(row)
        except sa.exc.SQLAlchemyError as exc:
            raise classify(exc, where=self._where, table=self._label) from None
        finally:
            self._engine.dispose()

    # -- one row -------------------------------------------------------------------------

    def _item(
        self, row: Mapping[str, Any], object_id: str, known: Mapping[str, str | None]
    ) -> SourceDocument | Failure:
        locator = f"{self._where}#{self.options.table or 'query'}/{object_id}"
        try:
            return self._document(row, object_id, locator, known)
        except ItemError as exc:
            return Failure(object_id, locator, Stage.FETCH.value, exc.error_class, str(exc))

    def _document(
        self, row: Mapping[str, Any], object_id: str, locator: str, known: Mapping[str, str | None]
    ) -> SourceDocument:
        opts = self.options
        if opts.content_template is not None:
            content = _rows.render(opts.content_template, row)
        else:
            texts = (_rows.text_of(row[c]).strip() for c in opts.content_columns)
            content = "\n\n".join(t for t in texts if t)
        # A NUL (MySQL/MariaDB text may hold one) is no text: the parser would refuse the
        # whole row as a binary file.
        content = content.replace("\x00", "")
        if opts.locator_template is not None:
            locator = _rows.render(opts.locator_template, row)
        title = _rows.text_of(row[opts.title_column]).strip() if opts.title_column else ""
        metadata = {
            c: value
            for c in opts.metadata_columns
            if (value := _rows.metadata_of(row[c])) is not None
        }
        access = _rows.access_of(row[opts.access_column]) if opts.access_column else None
        moment = row[opts.updated_at_column] if opts.updated_at_column else None
        if moment is not None and not isinstance(moment, datetime):
            raise ItemError("bad_timestamp", f"{opts.updated_at_column}={moment!r} is no time")
        updated_at = as_utc(moment) if moment is not None else None
        version = _rows.version_of(
            title=title, content=content, metadata=metadata, access=access, updated_at=updated_at
        )
        unchanged = known.get(object_id) == version
        return SourceDocument.of(
            {
                "object_id": object_id,
                "locator": locator,
                "title": title,  # empty: the parser's title, else the object id
                "version": version,
                "content": None if unchanged else content.encode("utf-8"),
                "fetch_ref": None,
                "media_type": opts.media_type,
                "updated_at": updated_at,
                "sequence": None,
                "metadata": metadata,
                "access": access,
                "size": None,
            }
        )


def _resume_after(checkpoint: Checkpoint | None) -> list[Any] | None:
    """The id tuple to continue after: set mid-run, None for a fresh run."""
    if checkpoint is None:
        return None
    try:
        cursor = json.loads(checkpoint.cursor)
    except ValueError:
        log.warning("sql: ignoring an unreadable checkpoint; reading from the first row")
        return None
    after = cursor.get("after") if isinstance(cursor, dict) else None
    if after is not None and not isinstance(after, list):
        raise ConfigError(f"sql: checkpoint {checkpoint.cursor!r} is not a list of ids")
    return after
