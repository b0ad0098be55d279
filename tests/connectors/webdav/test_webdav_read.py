"""The webdav connector against WsgiDAV: validate() messages, the listing's identity and
version hints."""

from __future__ import annotations

from pathlib import Path

import pytest
from webdav_support import DavServer, make_connector

from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.types import Window
from ports import free_port

WINDOW = Window(None, FAR_FUTURE)


def test_validate_names_each_problem(
    dav_server: DavServer, share: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = share
    with pytest.raises(CredentialError, match=r"HTTP 401.*fix the credentials"):
        make_connector(url, tmp_path, password="wrong").validate()
    with pytest.raises(ConfigError, match=r"HTTP 404.*fix `url`"):
        make_connector(f"{dav_server.url}/no-such-folder/", tmp_path).validate()
    with pytest.raises(TransientError, match=r"connection to 127\.0\.0\.1:\d+ refused"):
        make_connector(f"http://127.0.0.1:{free_port()}/", tmp_path).validate()


def test_listing_identity_versions_and_globs(share: tuple[str, Path], tmp_path: Path) -> None:
    url, folder = share
    (folder / "a-b").mkdir()
    (folder / "a-b" / "x.md").write_text("# X\n")
    (folder / "skip.log").write_text("noise\n")
    (folder / "top.txt").write_text("top\n")
    connector = make_connector(url, tmp_path, exclude=["*.log"])
    docs = collect(connector.read(WINDOW, None, no_known)).documents
    assert [d.object_id for d in docs] == ["a-b/x.md", "top.txt"]
    assert all(d.version and d.fetch_ref == d.object_id for d in docs)
    assert connector.fetch("a-b/x.md") == b"# X\n"
