"""The ``pgvector`` index's options, and the names of a generation's tables.

One generation is four tables in ``schema``: ``{table_prefix}{name}`` (the chunks, with
``vector(dim)``, ``tsvector`` and ``text[]`` ACL columns), ``…_documents`` (revisions and
tombstones), ``…_principals`` (chunks per principal, which picks the search path) and
``…_meta`` (the manifest binding); generation N > 1 appends ``__gN`` to
the base name, so a rebuild fills its own tables while the live ones serve.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field, SecretStr, field_validator, model_validator
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from headwater.errors import ConfigError
from headwater.sinks.base import SinkContext, SinkOptions

MAX_IDENTIFIER = 63  # PostgreSQL truncates longer names silently (NAMEDATALEN - 1)
HNSW_MAX_DIMENSION = 2000  # pgvector's HNSW index on `vector` columns
EXACT_BELOW = 20_000  # docs/performance.md, "pgvector sink": exact under it at 1M
_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


class PgvectorOptions(SinkOptions):
    """Options of the ``pgvector`` index: a PostgreSQL URL and the HNSW parameters."""

    url: SecretStr = Field(
        description="postgresql://user@host:5432/db; put a password in `${ENV}` or PGPASSWORD."
    )
    dimension: int | None = Field(
        default=None,
        ge=1,
        le=HNSW_MAX_DIMENSION,
        description="The vector dimension; default the embedder's (a different one is an error).",
    )
    db_schema: str = Field(
        default="headwater",
        alias="schema",
        min_length=1,
        max_length=MAX_IDENTIFIER,
        description="The PostgreSQL schema holding the tables (created if missing).",
    )
    table_prefix: str = Field(
        default="hw_", max_length=32, description="Prepended to the index name in table names."
    )
    m: int = Field(default=16, ge=2, le=100, description="HNSW: links per node.")
    ef_construction: int = Field(
        default=200,
        ge=4,
        le=1000,
        description="HNSW: candidate list size while building (64 gave recall@10 0.90 at 1M "
        "chunks where 200 gave 0.96-0.98; docs/performance.md).",
    )
    ef_search: int = Field(
        default=400, ge=1, le=1000, description="HNSW: candidate list size per search."
    )
    max_scan_tuples: int = Field(
        default=20_000,
        ge=1,
        description="pgvector 0.8+: rows an iterative HNSW scan visits before giving up "
        "(then an exact search answers).",
    )
    exact_below: int = Field(
        default=EXACT_BELOW,
        ge=0,
        description="A caller whose principals carry at most this many chunks gets exact "
        "vector search (the visible rows ranked, recall 1.0); above it the HNSW index "
        "answers; 0: always HNSW.",
    )
    pool_size: int = Field(default=5, ge=1, le=100, description="Pooled connections.")
    text_search_config: str = Field(
        default="simple",
        pattern=r"^[a-z_][a-z0-9_]*$",
        description="PostgreSQL text search configuration for the keyword column "
        "(`simple`: no stemming, no stop words; `english`: both).",
    )

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, value: SecretStr) -> SecretStr:
        parsed = _parse(value.get_secret_value())
        if parsed is None or parsed.drivername not in _SCHEMES:
            raise ValueError(
                "expected a PostgreSQL URL such as postgresql://user@host:5432/db "
                f"(scheme one of {', '.join(_SCHEMES)}); fix the index's `url`"
            )
        if not parsed.database:
            raise ValueError(
                "the URL names no database; add one, e.g. postgresql://user@host:5432/headwater"
            )
        return value

    @model_validator(mode="after")
    def _ef_construction_covers_m(self) -> PgvectorOptions:
        if self.ef_construction < 2 * self.m:
            raise ValueError(
                f"ef_construction ({self.ef_construction}) must be at least twice m "
                f"({self.m}), as pgvector requires; raise `ef_construction` or lower `m`"
            )
        return self

    def engine_url(self) -> URL:
        """The URL for SQLAlchemy's pool, with the psycopg 3 driver."""
        parsed = _parse(self.url.get_secret_value())
        assert parsed is not None  # validated
        return parsed.set(drivername="postgresql+psycopg")

    def where(self) -> str:
        """The URL without its password, for messages."""
        return self.engine_url().set(drivername="postgresql").render_as_string(hide_password=True)


def _parse(value: str) -> URL | None:
    try:
        return make_url(value)
    except ArgumentError:
        return None


@dataclass(frozen=True)
class Tables:
    """The quoted-to-be names of one generation's tables and indexes."""

    schema: str
    chunks: str
    documents: str
    meta: str
    principals: str

    def index(self, suffix: str) -> str:
        return f"{self.chunks}_{suffix}"


def tables_for(options: PgvectorOptions, context: SinkContext) -> Tables:
    """The generation's table names; a name PostgreSQL would truncate is a ConfigError."""
    base = f"{options.table_prefix}{context.name}"
    if context.generation != 1:
        base = f"{base}__g{context.generation}"
    tables = Tables(
        schema=options.db_schema,
        chunks=base,
        documents=f"{base}_documents",
        meta=f"{base}_meta",
        principals=f"{base}_principals",
    )
    longest = max((tables.documents, tables.index("embedding_hnsw")), key=len)
    if len(longest.encode()) > MAX_IDENTIFIER:
        raise ConfigError(
            f"the pgvector table name {longest!r} is longer than PostgreSQL's "
            f"{MAX_IDENTIFIER} bytes; shorten the index's `table_prefix` or its `name`"
        )
    return tables
