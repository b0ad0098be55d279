"""The s3 connector against moto's S3 API over HTTP: reads, the version gate, deletes,
a listing that breaks half way, and validate() messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import SecretStr
from s3_support import S3Server, make_connector

from headwater.connectors.base import Scoped, SourceContext
from headwater.connectors.s3 import S3Connector, S3Options
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError, ItemError, TransientError
from headwater.types import Checkpoint, Failure, SourceDocument, Window
from ports import free_port

WINDOW = Window(None, FAR_FUTURE)


def put(server: S3Server, bucket: str, key: str, body: str, content_type: str = "") -> None:
    extra = {"ContentType": content_type} if content_type else {}
    server.client().put_object(Bucket=bucket, Key=key, Body=body.encode(), **extra)


@pytest.fixture
def filled(s3_server: S3Server, bucket: str) -> str:
    put(s3_server, bucket, "a.md", "# A\n", "text/markdown")
    put(s3_server, bucket, "b.txt", "bee")
    put(s3_server, bucket, "dir/c.html", "<p>c</p>", "text/html")
    put(s3_server, bucket, "dir/d.md", "# D\n")
    return bucket


def docs_by_id(
    connector: S3Connector, known: dict[str, str] | None = None
) -> dict[str, SourceDocument]:
    result = collect(connector.read(WINDOW, None, (known or {}).get))
    return {d.object_id: d for d in result.documents}


def test_first_read_lists_lazily_and_fetches_on_demand(
    s3_server: S3Server, filled: str, tmp_path: Path
) -> None:
    connector = make_connector(s3_server.endpoint, filled, tmp_path, page_size=3)
    before, heads = len(s3_server.requests), s3_server.count("HEAD")
    result = collect(connector.read(WINDOW, None, no_known))
    made = s3_server.requests[before:]
    docs = {d.object_id: d for d in result.documents}
    assert list(docs) == ["a.md", "b.txt", "dir/c.html", "dir/d.md"]
    assert not any(m == "GET" and "list-type" not in p for m, p in made), "read downloaded"
    assert all(d.content is None and d.fetch_ref == d.object_id for d in docs.values())
    assert docs["a.md"].version.endswith(":4") and docs["a.md"].media_type == "text/markdown"
    assert docs["dir/c.html"].media_type == "text/html"
    assert docs["b.txt"].media_type == "text/plain"
    assert s3_server.count("HEAD") - heads == 0  # every key has a known extension
    assert docs["a.md"].updated_at is not None
    assert set(docs["a.md"].metadata) == {"etag", "size", "last_modified", "hierarchy"}
    assert docs["dir/c.html"].metadata["hierarchy"] == "dir/c.html"  # the key: --under s3:dir
    assert docs["dir/d.md"].locator == f"s3://{filled}/dir/d.md"
    assert connector.fetch("dir/c.html") == b"<p>c</p>"
    cursors = [json.loads(i.cursor) for i in result.items if isinstance(i, Checkpoint)]
    assert cursors == [{"v": 1, "after": "dir/c.html"}, {"v": 1, "after": "dir/d.md"}]
    assert result.final is not None and json.loads(result.final.cursor)["complete"] is True


def test_unchanged_reread_downloads_nothing(
    s3_server: S3Server, filled: str, tmp_path: Path
) -> None:
    connector = make_connector(s3_server.endpoint, filled, tmp_path)
    known = {d.object_id: d.version for d in docs_by_id(connector).values()}
    before = len(s3_server.requests)
    again = docs_by_id(connector, known)
    made = s3_server.requests[before:]
    assert {k: d.version for k, d in again.items()} == known
    assert [m for m, _ in made] == ["GET"] and "list-type=2" in made[0][1], made


def test_keys_without_extension_get_their_type_from_head_once(
    s3_server: S3Server, bucket: str, tmp_path: Path
) -> None:
    put(s3_server, bucket, "notes/README", "# Read me\n", "text/markdown; charset=utf-8")
    put(s3_server, bucket, "notes/blob", "x")
    connector = make_connector(s3_server.endpoint, bucket, tmp_path)
    heads = s3_server.count("HEAD")
    docs = docs_by_id(connector)
    assert s3_server.count("HEAD") - heads == 2
    assert docs["notes/README"].media_type == "text/markdown"
    assert docs["notes/blob"].media_type is None  # generic type: left to the parser
    known = {k: d.version for k, d in docs.items()}
    again = docs_by_id(connector, known)
    assert s3_server.count("HEAD") - heads == 2  # no HEAD for unchanged objects
    assert {k: d.metadata for k, d in again.items()} == {k: d.metadata for k, d in docs.items()}


def test_changed_object_gets_a_new_version(
    s3_server: S3Server, filled: str, tmp_path: Path
) -> None:
    connector = make_connector(s3_server.endpoint, filled, tmp_path)
    known = {d.object_id: d.version for d in docs_by_id(connector).values()}
    put(s3_server, filled, "b.txt", "bee, changed")
    again = docs_by_id(connector, known)
    changed = {k for k, d in again.items() if d.version != known[k]}
    assert changed == {"b.txt"}
    assert connector.fetch("b.txt") == b"bee, changed"


def test_deleted_object_is_missing_from_enumerate(
    s3_server: S3Server, filled: str, tmp_path: Path
) -> None:
    connector = make_connector(s3_server.endpoint, filled, tmp_path, page_size=2)
    assert list(connector.enumerate()) == ["a.md", "b.txt", "dir/c.html", "dir/d.md"]
    s3_server.client().delete_object(Bucket=filled, Key="b.txt")
    assert list(connector.enumerate()) == ["a.md", "dir/c.html", "dir/d.md"]
    with pytest.raises(ItemError) as caught:
        connector.fetch("b.txt")
    assert caught.value.error_class == "not_found"


def test_listing_that_breaks_half_way_raises(
    s3_server: S3Server, filled: str, tmp_path: Path
) -> None:
    connector = make_connector(s3_server.endpoint, filled, tmp_path, page_size=2)
    keys = connector.enumerate()
    assert next(keys) == "a.md"
    client = s3_server.client()
    for key in ("a.md", "b.txt", "dir/c.html", "dir/d.md"):
        client.delete_object(Bucket=filled, Key=key)
    client.delete_bucket(Bucket=filled)
    with pytest.raises(ConfigError, match="no such bucket"):
        list(keys)
    stream = connector.read(WINDOW, None, no_known)
    with pytest.raises(ConfigError):
        collect(stream)


def test_resume_starts_after_the_checkpoint_key(
    s3_server: S3Server, filled: str, tmp_path: Path
) -> None:
    connector = make_connector(s3_server.endpoint, filled, tmp_path, page_size=2)
    resumed = collect(connector.read(WINDOW, Checkpoint('{"v": 1, "after": "b.txt"}'), no_known))
    assert [d.object_id for d in resumed.documents] == ["dir/c.html", "dir/d.md"]
    fresh = collect(connector.read(WINDOW, Checkpoint('{"v": 1, "complete": true}'), no_known))
    assert len(fresh.documents) == 4


def test_prefix_globs_and_size_limit(s3_server: S3Server, filled: str, tmp_path: Path) -> None:
    put(s3_server, filled, "dir/big.md", "x" * 100)
    put(s3_server, filled, "dir/sub/", "")
    connector = make_connector(
        s3_server.endpoint,
        filled,
        tmp_path,
        prefix="dir/",
        include=["*.md", "*.html"],
        exclude=["d.*"],
        max_object_bytes=50,
    )
    result = collect(connector.read(WINDOW, None, no_known))
    assert [d.object_id for d in result.documents] == ["dir/c.html"]
    failures = [i for i in result.items if isinstance(i, Failure)]
    assert [(f.object_id, f.error_class, f.permanent) for f in failures] == [
        ("dir/big.md", "too_large", True)
    ]
    assert set(connector.enumerate()) == {"dir/big.md", "dir/c.html"}


def test_validate_names_a_missing_bucket(s3_server: S3Server, tmp_path: Path) -> None:
    connector = make_connector(s3_server.endpoint, "no-such-bucket-hw", tmp_path)
    with pytest.raises(ConfigError) as caught:
        connector.validate()
    message = str(caught.value)
    assert "'no-such-bucket-hw'" in message and "404" in message and "fix `bucket`" in message
    assert "\n" not in message


def test_validate_names_refused_connection(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(TransientError) as caught:
        make_connector(endpoint, "any", tmp_path).validate()
    message = str(caught.value)
    assert endpoint in message and "connection refused" in message and "\n" not in message


def test_validate_names_denied_credentials(s3_auth_server: str, tmp_path: Path) -> None:
    options = S3Options(
        bucket="locked",
        endpoint_url=s3_auth_server,
        region="us-east-1",
        access_key_id=SecretStr("AKIANOTAREALKEY00000"),
        secret_access_key=SecretStr("wrong-secret-never-printed"),
    )
    connector = S3Connector(options, SourceContext("s3-test", tmp_path))
    with pytest.raises(CredentialError) as caught:
        connector.validate()
    message = str(caught.value)
    assert "access denied (403" in message and "access_key_id" in message
    assert "wrong-secret" not in message and "\n" not in message


def test_half_given_keys_are_a_config_error(tmp_path: Path) -> None:
    options = S3Options(bucket="b", access_key_id=SecretStr("k"))
    with pytest.raises(ConfigError, match="secret_access_key"):
        S3Connector(options, SourceContext("s3-test", tmp_path))
    assert "k" not in repr(options.access_key_id).replace("SecretStr", "")


def test_globs_are_relative_to_the_prefix(s3_server: S3Server, bucket: str, tmp_path: Path) -> None:
    """The documented example: prefix "published/" with exclude "drafts/**"."""
    put(s3_server, bucket, "published/guide.md", "# Guide\n")
    put(s3_server, bucket, "published/drafts/new.md", "# New\n")
    put(s3_server, bucket, "published/team/drafts/plan.md", "# Plan\n")
    put(s3_server, bucket, "other/drafts/x.md", "# X\n")
    connector = make_connector(
        s3_server.endpoint, bucket, tmp_path, prefix="published/", exclude=["drafts/**"]
    )
    ids = [d.object_id for d in collect(connector.read(WINDOW, None, no_known)).documents]
    assert ids == ["published/guide.md", "published/team/drafts/plan.md"]
    assert set(connector.enumerate()) == set(ids)
    assert isinstance(connector, Scoped)
    assert connector.in_scope("published/guide.md")
    assert not connector.in_scope("published/drafts/new.md")
    assert not connector.in_scope("other/guide.md")  # outside the prefix
    assert not connector.in_scope("published/team/")  # a folder marker
    # Written without its slash, the prefix selects the same keys with the same globs.
    bare = make_connector(
        s3_server.endpoint, bucket, tmp_path, prefix="published", exclude=["drafts/**"]
    )
    assert [d.object_id for d in collect(bare.read(WINDOW, None, no_known)).documents] == ids
    assert not bare.in_scope("published/drafts/new.md")
