"""The sql connector against the real PostgreSQL and MariaDB: reads, the version gate,
changes, deletes, a listing that fails part way, and validate() messages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from pydantic import ValidationError
from sql_support import Database, docs_options, make_connector, unique, when

from headwater.connectors.sql import SqlConnector
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError, HeadwaterError, TransientError
from headwater.types import Access, Checkpoint, SourceDocument, Window

WINDOW = Window(None, FAR_FUTURE)


def read_docs(connector: SqlConnector, known: dict[str, str] | None = None) -> list[SourceDocument]:
    return collect(connector.read(WINDOW, None, (known or {}).get)).documents


def test_first_read_maps_rows_to_documents(db: Database, docs: str, tmp_path: Path) -> None:
    connector = make_connector(db.url, tmp_path, **docs_options(docs, page_size=3))
    result = collect(connector.read(WINDOW, None, no_known))
    by_id = {d.object_id: d for d in result.documents}
    assert list(by_id) == ["1", "2", "3", "4"]
    alpha = by_id["1"]
    assert alpha.title == "Alpha" and alpha.content == b"Alpha\n\nalpha body"
    assert alpha.media_type == "text/plain" and alpha.metadata == {"category": "a"}
    assert alpha.updated_at == when(1) and alpha.version.startswith("2024-01-01T12:00:00+00:00#")
    assert alpha.access == Access(users=("Ann@X.com",), groups=("eng",))  # the gate folds it
    assert by_id["2"].access == Access(groups=("eng",), public=True)
    assert by_id["3"].access == Access.nobody()
    assert by_id["4"].access == Access(users=("bob@x.com",), groups=("ops",))
    assert alpha.locator.endswith(f"/test#{docs}/1") and "://" in alpha.locator
    # built without the dataclass's __init__ (SourceDocument.of): the very object it makes
    for doc in by_id.values():
        assert type(doc) is SourceDocument and vars(doc) == vars(SourceDocument(**vars(doc)))
    cursors = [json.loads(i.cursor) for i in result.items if isinstance(i, Checkpoint)]
    assert cursors == [{"v": 1, "after": [3]}, {"v": 1, "after": [4]}]
    assert result.final is not None and json.loads(result.final.cursor) == {
        "v": 1,
        "complete": True,
    }


def test_unchanged_reread_carries_no_content(db: Database, docs: str, tmp_path: Path) -> None:
    connector = make_connector(db.url, tmp_path, **docs_options(docs))
    known = {d.object_id: d.version for d in read_docs(connector)}
    again = read_docs(connector, known)
    assert {d.object_id: d.version for d in again} == known
    assert [d.object_id for d in again if d.content is not None] == []


def test_changed_row_gets_a_new_version(db: Database, docs: str, tmp_path: Path) -> None:
    connector = make_connector(db.url, tmp_path, **docs_options(docs))
    known = {d.object_id: d.version for d in read_docs(connector)}
    db.execute(f"UPDATE {docs} SET body = 'beta, edited' WHERE id = 2")
    db.execute(f"UPDATE {docs} SET readers = 'public' WHERE id = 3")
    again = {d.object_id: d for d in read_docs(connector, known)}
    assert {k for k, d in again.items() if d.version != known[k]} == {"2", "3"}
    assert again["2"].content == b"Beta\n\nbeta, edited"
    assert again["3"].access == Access(public=True) and again["1"].content is None


def test_window_reads_only_rows_updated_inside_it(db: Database, docs: str, tmp_path: Path) -> None:
    connector = make_connector(db.url, tmp_path, **docs_options(docs, window_overlap="0s"))
    assert connector.capabilities.windowed and not connector.capabilities.full_listing
    window = Window(when(2), when(4).replace(hour=11))
    assert [d.object_id for d in collect(connector.read(window, None, no_known)).documents] == ["3"]
    # The default overlap (30m) re-reads the stretch before the window's start.
    overlapping = make_connector(db.url, tmp_path, **docs_options(docs))
    window = Window(when(2).replace(minute=29), when(4).replace(hour=11))
    assert [d.object_id for d in collect(overlapping.read(window, None, no_known)).documents] == [
        "2",
        "3",
    ]


def test_a_row_without_updated_at_is_in_every_window(
    db: Database, docs: str, tmp_path: Path
) -> None:
    """NULL is no time: like an undated feed entry the row is read in every window (the
    version gate skips it while unchanged), never left out of the index for good."""
    db.execute(f"UPDATE {docs} SET updated_at = NULL WHERE id = 1")
    connector = make_connector(db.url, tmp_path, **docs_options(docs, window_overlap="0s"))
    first = collect(connector.read(Window(None, when(4)), None, no_known)).documents
    assert [d.object_id for d in first] == ["1", "2", "3", "4"]
    assert first[0].updated_at is None and first[0].content == b"Alpha\n\nalpha body"
    later = collect(connector.read(Window(when(3), when(9)), None, no_known)).documents
    assert [d.object_id for d in later] == ["1", "4"]


def test_keyset_pages_over_timestamp_and_uuid_ids(db: Database, tmp_path: Path) -> None:
    """The docs promise timestamp and UUID id columns; a checkpoint keeps them as text,
    which PostgreSQL refused to compare (`timestamp with time zone > character varying`)
    from the second page on."""
    name = unique("keys")
    uuid_type = "uuid" if db.kind == "postgresql" else "char(36)"
    day_type = "timestamptz" if db.kind == "postgresql" else "datetime"
    db.execute(f"CREATE TABLE {name} (day {day_type}, ref {uuid_type}, body text, "
               "PRIMARY KEY (day, ref))")  # fmt: skip
    try:
        refs = ["0b0c5a36-4e1a-4a43-9d3e-1f6a1a4c0001", "7d3d2a1e-9b2c-4c55-8e6f-0a1b2c3d0002"]
        for day in (1, 2):
            for ref in refs:
                db.execute(
                    f"INSERT INTO {name} VALUES (:day, :ref, 'text')", day=when(day), ref=ref
                )
        options = {"table": name, "id_columns": ["day", "ref"], "content_columns": ["body"]}
        connector = make_connector(db.url, tmp_path, page_size=3, **options)
        result = collect(connector.read(WINDOW, None, no_known))
        ids = [d.object_id for d in result.documents]
        assert ids == [f"{when(day).isoformat()}/{ref}" for day in (1, 2) for ref in refs]
        middle = next(i for i in result.items if isinstance(i, Checkpoint))
        resumed = collect(connector.read(WINDOW, middle, no_known)).documents
        assert [d.object_id for d in resumed] == ids[3:]
    finally:
        db.execute(f"DROP TABLE {name}")


def test_deleted_row_is_missing_from_enumerate(db: Database, docs: str, tmp_path: Path) -> None:
    connector = make_connector(db.url, tmp_path, **docs_options(docs))
    assert sorted(connector.enumerate()) == ["1", "2", "3", "4"]
    db.execute(f"DELETE FROM {docs} WHERE id = 3")
    assert sorted(connector.enumerate()) == ["1", "2", "4"]


def test_a_read_keeps_one_connection_for_its_pages_and_closes_it(
    db: Database, docs: str, tmp_path: Path
) -> None:
    connector = make_connector(db.url, tmp_path, **docs_options(docs, page_size=1))
    opened, closed = [], []
    sa.event.listen(connector._engine, "connect", lambda *_: opened.append(1))
    sa.event.listen(connector._engine.pool, "close", lambda *_: closed.append(1))
    result = collect(connector.read(WINDOW, None, no_known))
    assert len(result.documents) == 4  # five pages: four of one row, one empty
    assert len(opened) == 1  # not one a page
    assert len(closed) == 1  # and none left open once the read is over
    assert sorted(connector.enumerate()) == ["1", "2", "3", "4"]
    assert len(opened) == len(closed) == 2


def test_read_fails_when_the_table_goes_between_pages(
    db: Database, docs: str, tmp_path: Path
) -> None:
    connector = make_connector(db.url, tmp_path, **docs_options(docs, page_size=2))
    stream = connector.read(WINDOW, None, no_known)
    seen = [next(stream), next(stream), next(stream)]
    assert isinstance(seen[-1], Checkpoint)
    db.execute(f"DROP TABLE {docs}")
    with pytest.raises(ConfigError, match="404"):
        next(stream)


def test_enumerate_raises_when_the_listing_breaks(
    db: Database, docs: str, failing_function: str, tmp_path: Path
) -> None:
    query = f"SELECT id, body FROM {docs} WHERE {failing_function}(id) = id"
    options = {"query": query, "id_columns": ["id"], "content_columns": ["body"]}
    connector = make_connector(db.url, tmp_path, **options)
    with pytest.raises(HeadwaterError, match="row 3 broke"):
        list(connector.enumerate())
    with pytest.raises(HeadwaterError, match="row 3 broke"):
        collect(connector.read(WINDOW, None, no_known))


def test_validate_names_refused_connection_without_password(
    db: Database, docs: str, tmp_path: Path
) -> None:
    url = db.url.replace("@", ":s3cret-pw@").replace(":5432/", ":1/").replace(":3306/", ":1/")
    with pytest.raises(TransientError) as caught:
        make_connector(url, tmp_path, **docs_options(docs)).validate()
    message = str(caught.value)
    assert "connection refused" in message and "127.0.0.1:1" in message
    assert "s3cret" not in message and "\n" not in message


def test_validate_names_a_missing_table(db: Database, tmp_path: Path) -> None:
    connector = make_connector(db.url, tmp_path, **docs_options("hw_no_such_table"))
    with pytest.raises(ConfigError) as caught:
        connector.validate()
    message = str(caught.value)
    assert "'hw_no_such_table' not found" in message and "404" in message
    assert "fix `table`" in message and "\n" not in message


def test_a_query_with_a_syntax_error_is_a_config_error(db: Database, tmp_path: Path) -> None:
    options = {"query": "SELEC id, body FROM t", "id_columns": ["id"], "content_columns": ["body"]}
    connector = make_connector(db.url, tmp_path, **options)
    for attempt in (connector.validate, lambda: collect(connector.read(WINDOW, None, no_known))):
        with pytest.raises(ConfigError) as caught:
            attempt()
        message = str(caught.value)
        assert "not valid" in message and "fix `query`" in message and "\n" not in message


def test_validate_names_a_missing_column(db: Database, docs: str, tmp_path: Path) -> None:
    options = docs_options(docs, title_column="headline")
    with pytest.raises(ConfigError) as caught:
        make_connector(db.url, tmp_path, **options).validate()
    assert "headline" in str(caught.value) and "column is missing" in str(caught.value)


def test_validate_names_a_missing_database(db: Database, docs: str, tmp_path: Path) -> None:
    url = db.url.replace("/test", "/hw_no_such_db")
    with pytest.raises(ConfigError, match="hw_no_such_db not found"):
        make_connector(url, tmp_path, **docs_options(docs)).validate()


@pytest.fixture
def denied_url(db: Database, docs: str) -> Iterator[str]:
    """A user the server refuses: a role without SELECT (PostgreSQL), a bad password."""
    if db.kind == "postgresql":
        role = unique("reader")
        db.execute(f"CREATE ROLE {role} LOGIN")
        yield f"postgresql://{role}@127.0.0.1:5432/test"
        db.execute(f"DROP ROLE {role}")
    else:
        yield "mysql://root:wrong-password@127.0.0.1:3306/test"


def test_validate_names_denied_access(
    db: Database, docs: str, denied_url: str, tmp_path: Path
) -> None:
    with pytest.raises(CredentialError) as caught:
        make_connector(denied_url, tmp_path, **docs_options(docs)).validate()
    message = str(caught.value)
    assert "access denied (401/403" in message and "GRANT SELECT" in message
    assert "wrong-password" not in message and "\n" not in message


def test_unknown_role_is_a_credential_error(tmp_path: Path) -> None:
    url = "postgresql://hw_nobody_at_all@127.0.0.1:5432/test"
    with pytest.raises(CredentialError, match="hw_nobody_at_all"):
        make_connector(url, tmp_path, **docs_options("anything")).validate()


def test_options_are_checked_up_front(tmp_path: Path) -> None:
    base = {"url": "postgresql://x@h/db", "id_columns": ["id"], "content_columns": ["b"]}
    with pytest.raises(ValidationError, match="exactly one of `table` or `query`"):
        make_connector(**base, tmp_path=tmp_path, table="t", query="SELECT 1")
    with pytest.raises(ValidationError, match="bare column name"):
        make_connector(
            base["url"], tmp_path, table="t", id_columns=["id"], content_template="{x.__class__}"
        )
    with pytest.raises(ValidationError, match="`content_columns` or `content_template`"):
        make_connector(base["url"], tmp_path, table="t", id_columns=["id"])


def test_native_array_and_json_access_columns(db: Database, tmp_path: Path) -> None:
    name = unique("acl")
    kind = "text[]" if db.kind == "postgresql" else "JSON"
    db.execute(f"CREATE TABLE {name} (k VARCHAR(20) PRIMARY KEY, body TEXT, who {kind})")
    value = (
        "'{user:a@x.com,group:ops}'"
        if db.kind == "postgresql"
        else """'["user:a@x.com", "group:ops"]'"""
    )
    try:
        db.execute(f"INSERT INTO {name} VALUES ('a/b%', 'text', {value})")
        options = {"table": name, "id_columns": ["k"], "content_columns": ["body"]}
        connector = make_connector(db.url, tmp_path, access_column="who", **options)
        [doc] = read_docs(connector)
        assert doc.object_id == "a%2Fb%25" and list(connector.enumerate()) == ["a%2Fb%25"]
        assert doc.access == Access(users=("a@x.com",), groups=("ops",))
    finally:
        db.execute(f"DROP TABLE {name}")
