"""sql connector edge cases on the real servers: JSON columns decoded on MariaDB as on
PostgreSQL, a query ending in ``;``, and late commits caught by ``window_overlap``."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from sql_support import Database, make_connector, unique, workspace_config

from headwater import Workspace
from headwater.connectors.sql import SqlOptions
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.pipeline.parse import parse
from headwater.types import SourceDocument, Window


def read_docs(connector: object) -> list[SourceDocument]:
    return collect(connector.read(Window(None, FAR_FUTURE), None, no_known)).documents  # type: ignore[attr-defined]


def test_json_metadata_is_an_object_on_every_server(db: Database, tmp_path: Path) -> None:
    name = unique("json")
    kind = "jsonb" if db.kind == "postgresql" else "JSON"  # MariaDB: LONGTEXT + json_valid
    db.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, body TEXT, tags {kind}, info {kind})")
    try:
        db.execute(
            f'INSERT INTO {name} VALUES (1, \'text\', \'["a", "b"]\', \'{{"team": "ops"}}\')'
        )
        options = {"table": name, "id_columns": ["k"], "content_columns": ["body"]}
        connector = make_connector(db.url, tmp_path, metadata_columns=["tags", "info"], **options)
        [doc] = read_docs(connector)
        assert doc.metadata == {"tags": ["a", "b"], "info": '{"team":"ops"}'}
        # A query cannot be reflected: json_columns names its JSON columns.
        query = {"query": f"SELECT k, body, tags FROM {name}", "id_columns": ["k"]}
        by_query = make_connector(
            db.url, tmp_path, content_columns=["body"], metadata_columns=["tags"],
            json_columns=["tags"], **query,
        )  # fmt: skip
        assert read_docs(by_query)[0].metadata == {"tags": ["a", "b"]}
    finally:
        db.execute(f"DROP TABLE {name}")


def test_a_lone_surrogate_in_json_becomes_a_replacement_character(
    db: Database, tmp_path: Path
) -> None:
    """JSON may escape half of a surrogate pair (``"\\ud800"``), which decodes to a string
    no database stores; it failed every run of the source. It becomes U+FFFD."""
    name = unique("surrogate")
    kind = "json" if db.kind == "postgresql" else "LONGTEXT"  # both keep the escape as sent
    db.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, body TEXT, tags {kind})")
    try:
        db.execute(f"INSERT INTO {name} VALUES (1, 'text', :tags)", tags='["x\\ud800y"]')
        query = {"query": f"SELECT k, body, tags FROM {name}", "id_columns": ["k"]}
        connector = make_connector(
            db.url, tmp_path, content_columns=["body", "tags"], metadata_columns=["tags"],
            json_columns=["tags"], **query,
        )  # fmt: skip
        [doc] = read_docs(connector)
        assert doc.metadata == {"tags": ["x\ufffdy"]}
        assert doc.content == 'text\n\n["x\ufffdy"]'.encode()
    finally:
        db.execute(f"DROP TABLE {name}")


def test_a_query_ending_in_a_semicolon_works(db: Database, docs: str, tmp_path: Path) -> None:
    query = f"SELECT id, title, body FROM {docs} ORDER BY id ;  \n"
    options = SqlOptions.model_validate(
        {"url": db.url, "query": query, "id_columns": ["id"], "content_columns": ["body"]}
    )
    assert options.query == f"SELECT id, title, body FROM {docs} ORDER BY id"
    connector = make_connector(
        db.url, tmp_path, query=query, id_columns=["id"], content_columns=["body"]
    )
    assert [d.object_id for d in read_docs(connector)] == ["1", "2", "3", "4"]


def test_window_overlap_must_be_a_duration(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="window_overlap 'soon'"):
        SqlOptions.model_validate(
            {"url": "postgresql://x/y", "table": "t", "id_columns": ["id"],
             "content_columns": ["b"], "window_overlap": "soon"}
        )  # fmt: skip


@pytest.mark.parametrize("db", ["postgresql"], indirect=True)
def test_a_row_committed_late_is_indexed(db: Database, docs: str, tmp_path: Path) -> None:
    """PostgreSQL's now() is the transaction's start: a row inserted by a transaction that
    is open while a sync runs carries a time before that sync's window end, and becomes
    visible only after it. The overlap re-reads that stretch, so the row is not lost."""
    config = workspace_config(
        tmp_path,
        db,
        docs,
        'id_columns = ["id"]\ncontent_columns = ["title", "body"]\n'
        'updated_at_column = "updated_at"\naccess = { public = true }\n',
    )
    with Workspace.open(config) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        with db.engine.connect() as late:
            transaction = late.begin()
            late.execute(
                sa.text(
                    f"INSERT INTO {docs} (id, title, body, updated_at) "
                    "VALUES (5, 'Late', 'late body', now())"
                )
            )
            during = ws.sync(index=False).runs[0]  # its window end passes the row's time
            assert during.counts.new == 0
            transaction.commit()
        after = ws.sync(index=False).runs[0]
        assert (after.status, after.counts.new, after.counts.changed) == ("succeeded", 1, 0)
        assert ws.document(source="rows", object_id="5")["state"] == "active"


def test_a_nul_in_a_text_column_is_dropped_not_a_binary_row(db: Database, tmp_path: Path) -> None:
    """MariaDB text can hold NUL (PostgreSQL text cannot, bytea can): the row was refused
    as a binary file ("has NUL bytes ... give it the extension of its real format")."""
    name = unique("nul")
    body_type = "bytea" if db.kind == "postgresql" else "text"
    db.execute(f"CREATE TABLE {name} (id int primary key, body {body_type})")
    try:
        db.execute(f"INSERT INTO {name} VALUES (1, :b)", b=b"legacy\x00 import")
        options = {"table": name, "id_columns": ["id"], "content_columns": ["body"]}
        (doc,) = read_docs(make_connector(db.url, tmp_path, **options))
        assert doc.content == b"legacy import"
        parsed = parse(doc.content, name=doc.object_id, media_type=doc.media_type)
        assert parsed.text == "legacy import"
    finally:
        db.execute(f"DROP TABLE {name}")
