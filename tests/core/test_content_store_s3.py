"""The content store on object storage (moto's S3 API over real HTTP) and in a folder.

Both stores keep one contract (put before commit, get by checksum, a listing the garbage
walk reads), checked here side by side; then two workspaces with *different* state
directories share one manifest and one ``[content] url``: what one syncs, the other
indexes and searches, with no shared disk. With the folder store the same split fails,
which is why the object store exists (issue 25 item 4).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer
from pydantic import SecretStr

from headwater import Workspace
from headwater.clock import utcnow
from headwater.errors import ConfigError, ContentMissing
from headwater.manifest.content import ContentStore, FolderContentStore
from headwater.manifest.content_s3 import S3ContentStore, S3Location
from headwater.manifest.garbage import collect_garbage
from headwater.manifest.store import Manifest
from ports import free_port
from workspace_helpers import filesystem_source, write_config


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def _client(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


@pytest.fixture
def bucket(endpoint: str) -> str:
    name = f"hw-{uuid.uuid4().hex[:12]}"
    _client(endpoint).create_bucket(Bucket=name)
    return name


def _s3_store(endpoint: str, bucket: str, prefix: str = "team/content") -> S3ContentStore:
    return S3ContentStore(
        f"s3://{bucket}/{prefix}",
        endpoint_url=endpoint,
        region="us-east-1",
        access_key_id=SecretStr("test"),
        secret_access_key=SecretStr("test"),
    )


@pytest.fixture(params=["folder", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ContentStore:
    if request.param == "folder":
        return FolderContentStore(tmp_path / "content")
    endpoint = request.getfixturevalue("endpoint")
    return _s3_store(endpoint, request.getfixturevalue("bucket"))


CHECKSUMS = ["ab" + "0" * 62, "ab" + "1" * 62, "cd" + "2" * 62]


def test_put_get_and_missing(store: ContentStore) -> None:
    store.put(CHECKSUMS[0], "Vacation policy: 25 days ✓")
    store.put(CHECKSUMS[0], "Vacation policy: 25 days ✓")  # again: renewed, not duplicated
    assert store.get(CHECKSUMS[0]) == "Vacation policy: 25 days ✓"
    with pytest.raises(ContentMissing, match=CHECKSUMS[1]) as missing:
        store.get(CHECKSUMS[1])
    assert store.location in str(missing.value) and "sync --full" in str(missing.value)
    assert store.prefixes() == ["ab"]
    assert [o.name for o in store.objects("ab")] == [f"{CHECKSUMS[0]}.zst"]


def test_the_garbage_walk_keeps_referenced_and_young_objects(
    store: ContentStore, tmp_path: Path
) -> None:
    manifest = Manifest.open(f"sqlite:///{tmp_path / 'manifest.db'}")
    try:
        for n, checksum in enumerate(CHECKSUMS):
            store.put(checksum, f"text {n}")
        young = collect_garbage(manifest.engine, store)  # nothing is an hour old yet
        assert (young.scanned, young.removed, young.kept_young) == (3, 0, 3)
        later = utcnow() + timedelta(hours=2)
        dry = collect_garbage(manifest.engine, store, now=later, dry_run=True)
        assert dry.removed == 3 and store.prefixes() == ["ab", "cd"]
        gone = collect_garbage(manifest.engine, store, now=later)
        assert gone.removed == 3 and gone.removed_bytes > 0
        assert [list(store.objects(p)) for p in store.prefixes()] in ([], [[], []])
    finally:
        manifest.close()


def test_the_url_must_name_a_bucket() -> None:
    assert S3Location.parse("s3://docs") == S3Location("docs", "")
    assert S3Location.parse("s3://docs/a/b/") == S3Location("docs", "a/b/")
    for bad in ("https://docs/x", "s3:///x", "docs/x", "s3://docs/x?versionId=1"):
        with pytest.raises(ConfigError, match="expected s3://BUCKET"):
            S3Location.parse(bad)


def test_a_missing_bucket_names_the_content_keys(endpoint: str) -> None:
    store = _s3_store(endpoint, "no-such-bucket-here")
    with pytest.raises(ConfigError, match=r"no such bucket.*\[content\] `url`"):
        store.put(CHECKSUMS[0], "x")


def test_the_content_section_is_checked_with_every_other_problem(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources="",
        extra='[content]\nurl = "https://not-s3/x"\nregion = "eu-west-1"\n'
        'access_key_id = "only-one"\n',
    )
    with pytest.raises(ConfigError) as caught:
        Workspace.open(config)
    message = str(caught.value)
    assert "expected s3://BUCKET" in message
    config = write_config(
        tmp_path, manifest_url=None, sources="", extra='[content]\nregion = "x"\n'
    )
    with pytest.raises(ConfigError, match="but no `url`"):
        Workspace.open(config)


def _host(directory: Path, manifest_url: str, root: Path, content: str, *, share: bool) -> Path:
    directory.mkdir()
    return write_config(
        directory,
        manifest_url=manifest_url,
        sources=filesystem_source(root),
        extra=content if share else "",
    )


def test_two_hosts_with_different_state_dirs_share_content_through_the_bucket(
    tmp_path: Path, manifest_url: str, corpus: Path, endpoint: str, bucket: str
) -> None:
    content = (
        f'[content]\nurl = "s3://{bucket}/hw"\nendpoint_url = "{endpoint}"\n'
        'region = "us-east-1"\naccess_key_id = "test"\nsecret_access_key = "test"\n'
    )
    syncer = _host(tmp_path / "host-a", manifest_url, corpus, content, share=True)
    indexer = _host(tmp_path / "host-b", manifest_url, corpus, content, share=True)
    with Workspace.open(syncer) as ws:
        runs = ws.sync(index=False).runs
        assert runs[0].counts.new >= 3
        assert isinstance(ws.content_store, S3ContentStore)
    assert not (tmp_path / "host-b" / "state" / "content").exists()
    with Workspace.open(indexer) as ws:
        report = ws.index()
        assert report.failed == 0 and report.replaced >= 3
        hits = ws.search("vacation days", user="ann@x.com", groups=["staff"], mode="keyword")
        assert hits and "vacation" in hits[0]["title"].lower()
    keys = _client(endpoint).list_objects_v2(Bucket=bucket, Prefix="hw/")["KeyCount"]
    assert keys >= 3


def test_with_folder_stores_the_second_host_cannot_index(
    tmp_path: Path, manifest_url: str, corpus: Path
) -> None:
    """The control: without a shared store, the other host has no content to index."""
    syncer = _host(tmp_path / "host-a", manifest_url, corpus, "", share=False)
    indexer = _host(tmp_path / "host-b", manifest_url, corpus, "", share=False)
    with Workspace.open(syncer) as ws:
        ws.sync(index=False)
    with Workspace.open(indexer) as ws, pytest.raises(ContentMissing):
        ws.index()
