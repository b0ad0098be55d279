"""Helpers for the sql connector tests: the two real servers and a connector factory."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from pydantic import SecretStr
from sqlalchemy.engine import Engine

from headwater.connectors.base import SourceContext
from headwater.connectors.sql import SqlConnector, SqlOptions

URLS = {
    "postgresql": "postgresql://postgres@127.0.0.1:5432/test",
    "mariadb": "mysql://root@127.0.0.1:3306/test",
}
ENGINE_URLS = {
    "postgresql": "postgresql+psycopg://postgres@127.0.0.1:5432/test",
    "mariadb": "mysql+pymysql://root@127.0.0.1:3306/test",
}


@dataclass
class Database:
    kind: str
    url: str
    engine: Engine

    def execute(self, sql: str, **params: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.text(sql), params)


def unique(stem: str) -> str:
    return f"hw_{stem}_{uuid.uuid4().hex[:10]}"


def when(day: int) -> datetime:
    return datetime(2024, 1, day, 12, 0, tzinfo=UTC)


ROWS = [
    {"id": 1, "title": "Alpha", "body": "alpha body", "category": "a",
     "readers": '["user:Ann@X.com", "group:eng"]', "updated_at": when(1)},
    {"id": 2, "title": "Beta", "body": "beta body", "category": "b",
     "readers": "group:eng, public", "updated_at": when(2)},
    {"id": 3, "title": "Gamma", "body": "gamma body", "category": "a",
     "readers": None, "updated_at": when(3)},
    {"id": 4, "title": "Delta", "body": "delta/body", "category": "b",
     "readers": "bob@x.com,ops", "updated_at": when(4)},
]  # fmt: skip


def create_docs_table(db: Database, name: str, rows: list[dict[str, Any]] = ROWS) -> sa.Table:
    meta = sa.MetaData()
    table = sa.Table(
        name,
        meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("title", sa.String(200)),
        sa.Column("body", sa.Text),
        sa.Column("category", sa.String(50)),
        sa.Column("readers", sa.Text),
        sa.Column("updated_at", sa.DateTime(timezone=True)),
    )
    meta.create_all(db.engine)
    with db.engine.begin() as conn:
        conn.execute(table.insert(), rows)
    return table


def make_connector(url: str, tmp_path: Path, **options: Any) -> SqlConnector:
    opts = SqlOptions(url=SecretStr(url), **options)
    return SqlConnector(opts, SourceContext(source_id="sql-test", state_dir=tmp_path))


def docs_options(table: str, **extra: Any) -> dict[str, Any]:
    return {
        "table": table,
        "id_columns": ["id"],
        "title_column": "title",
        "content_columns": ["title", "body"],
        "updated_at_column": "updated_at",
        "metadata_columns": ["category"],
        "access_column": "readers",
        **extra,
    }


def workspace_config(tmp_path: Path, db: Database, table: str, source_options: str) -> Path:
    """A workspace config (fake embedder, one sqlite index) with one sql source ``rows``
    over ``table``; ``source_options`` are the source's further TOML lines."""
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "rows"\ntype = "sql"\nurl = "{db.url}"\ntable = "{table}"\n'
        + source_options
    )
    return config
