"""The azure_blob connector against Azurite: a lazy listing, ETags as versions, prefix
and globs, a refused marker, a 429/503 storm, a listing broken part way, and validate()
messages (a missing container, a refused connection, a wrong key, a SAS lacking list)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from azure_support import DEV_ACCOUNT, Azurite, make_connector
from faultproxy import FaultProxy
from pydantic import SecretStr

from headwater.connectors.azure_blob._auth import DEV_KEY
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError, ItemError, TransientError
from headwater.types import Checkpoint, Failure, Window
from ports import free_port

# The module starts Azurite (a process), so the unit tier (--fast) leaves it out.
pytestmark = pytest.mark.process

WINDOW = Window(None, FAR_FUTURE)
WRONG_KEY = "d3Jvbmcta2V5LW5ldmVyLXByaW50ZWQtd3Jvbmcta2V5LW5ldmVyLXByaW50ZWQ="


@pytest.fixture
def filled(azurite_server: Azurite, container: str) -> str:
    azurite_server.put(container, "a.md", "# A\n", "text/markdown")
    azurite_server.put(container, "b.txt", "bee")
    azurite_server.put(container, "dir/c.html", "<p>c</p>", "text/html")
    azurite_server.put(container, "dir/README", "# Read me\n", "text/markdown; charset=utf-8")
    return container


def test_read_lists_lazily_with_etags(
    proxy: FaultProxy, azurite_server: Azurite, filled: str, tmp_path: Path
) -> None:
    connector = make_connector(f"{proxy.url}/{DEV_ACCOUNT}", filled, tmp_path, page_size=3)
    result = collect(connector.read(WINDOW, None, no_known))
    docs = {d.object_id: d for d in result.documents}
    assert list(docs) == ["a.md", "b.txt", "dir/README", "dir/c.html"]
    assert proxy.count("GET") == 2 and proxy.count("GET", "comp=list") == 2, "read downloaded"
    assert all(d.content is None and d.fetch_ref == d.object_id for d in docs.values())
    a = docs["a.md"]
    assert a.version and '"' not in a.version and a.metadata["etag"] == a.version
    assert a.metadata["size"] == "4" and a.updated_at is not None
    assert a.locator.endswith(f"/{DEV_ACCOUNT}/{filled}/a.md")
    assert docs["dir/README"].media_type == "text/markdown"  # from the listing's Content-Type
    assert connector.fetch("dir/c.html") == b"<p>c</p>"
    cursors = [json.loads(i.cursor) for i in result.items if isinstance(i, Checkpoint)]
    assert len(cursors) == 1 and "page" in cursors[0]
    resumed = collect(connector.read(WINDOW, Checkpoint(json.dumps(cursors[0])), no_known))
    assert [d.object_id for d in resumed.documents] == ["dir/c.html"]
    azurite_server.put(filled, "b.txt", "bee, changed")
    again = {
        d.object_id: d.version for d in collect(connector.read(WINDOW, None, no_known)).documents
    }
    assert {k for k, v in again.items() if v != docs[k].version} == {"b.txt"}
    assert connector.fetch("b.txt") == b"bee, changed"
    azurite_server.delete(filled, "b.txt")
    assert "b.txt" not in list(connector.enumerate())
    with pytest.raises(ItemError) as caught:
        connector.fetch("b.txt")
    assert caught.value.error_class == "not_found"


def test_a_refused_marker_relists_from_the_start(
    proxy: FaultProxy, filled: str, tmp_path: Path
) -> None:
    proxy.fault = lambda method, path: 400 if "marker=stale" in path else None
    connector = make_connector(f"{proxy.url}/{DEV_ACCOUNT}", filled, tmp_path)
    result = collect(connector.read(WINDOW, Checkpoint('{"v": 1, "page": "stale"}'), no_known))
    assert len(result.documents) == 4


def test_a_429_and_503_storm_is_retried(proxy: FaultProxy, filled: str, tmp_path: Path) -> None:
    endpoint = f"{proxy.url}/{DEV_ACCOUNT}"
    connector = make_connector(endpoint, filled, tmp_path, page_size=2, retry_attempts=4)
    proxy.storm([429, 503, 503], "comp=list")
    assert len(collect(connector.read(WINDOW, None, no_known)).documents) == 4
    proxy.storm([503, 429], "/a.md")
    assert connector.fetch("a.md") == b"# A\n"
    proxy.storm([503] * 4, "comp=list")
    with pytest.raises(TransientError, match="HTTP 503"):
        list(connector.enumerate())


def test_a_listing_broken_part_way_raises(proxy: FaultProxy, filled: str, tmp_path: Path) -> None:
    connector = make_connector(f"{proxy.url}/{DEV_ACCOUNT}", filled, tmp_path, page_size=2)
    proxy.fault = lambda method, path: 403 if "marker=" in path else None
    with pytest.raises(CredentialError, match="read and list permissions"):
        collect(connector.read(WINDOW, None, no_known))
    with pytest.raises(CredentialError):
        list(connector.enumerate())


def test_prefix_globs_and_size_limit(azurite_server: Azurite, filled: str, tmp_path: Path) -> None:
    azurite_server.put(filled, "dir/big.md", "x" * 100)
    azurite_server.put(filled, "dir/odd name+ü?.html", "<p>odd</p>", "text/html")
    azurite_server.put(filled, "dir/folder.md", "", **{"x-ms-meta-hdi_isfolder": "true"})
    connector = make_connector(
        azurite_server.url,
        filled,
        tmp_path,
        prefix="dir/",
        include=["*.md", "*.html"],
        max_object_bytes=50,
    )
    result = collect(connector.read(WINDOW, None, no_known))
    assert [d.object_id for d in result.documents] == ["dir/c.html", "dir/odd name+ü?.html"]
    assert connector.fetch("dir/odd name+ü?.html") == b"<p>odd</p>"
    failures = [(f.object_id, f.error_class) for f in result.items if isinstance(f, Failure)]
    assert failures == [("dir/big.md", "too_large")]
    assert connector.in_scope("dir/x.md") and not connector.in_scope("other/x.md")


def test_connection_string_and_sas(azurite_server: Azurite, filled: str, tmp_path: Path) -> None:
    by_string = make_connector(
        "", filled, tmp_path, connection_string=SecretStr(azurite_server.connection_string())
    )
    by_string.validate()
    assert len(list(by_string.enumerate())) == 4
    sas = make_connector(
        "",
        filled,
        tmp_path,
        account_url=azurite_server.url,
        sas_token=SecretStr(azurite_server.account_sas()),
    )
    sas.validate()
    assert sas.fetch("a.md") == b"# A\n"
    sas_string = (
        f"BlobEndpoint={azurite_server.url};SharedAccessSignature={azurite_server.account_sas()}"
    )
    by_sas_string = make_connector("", filled, tmp_path, connection_string=SecretStr(sas_string))
    assert len(list(by_sas_string.enumerate())) == 4


def test_validate_names_a_missing_container(azurite_server: Azurite, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        make_connector(azurite_server.url, "no-such-container-hw", tmp_path).validate()
    message = str(caught.value)
    assert "no such container 'no-such-container-hw'" in message and "fix `container`" in message
    assert "ContainerNotFound" in message and "\n" not in message


def test_validate_names_a_refused_connection(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}/{DEV_ACCOUNT}"
    with pytest.raises(TransientError) as caught:
        make_connector(endpoint, "any", tmp_path).validate()
    assert "connection to 127.0.0.1" in str(caught.value) and "refused" in str(caught.value)


def test_validate_names_a_wrong_key_and_a_sas_without_list(
    azurite_server: Azurite, filled: str, tmp_path: Path
) -> None:
    wrong = make_connector(
        "", filled, tmp_path, account_url=azurite_server.url, account_key=SecretStr(WRONG_KEY)
    )
    with pytest.raises(CredentialError) as caught:
        wrong.validate()
    message = str(caught.value)
    assert "refused the request's credentials (HTTP 403 AuthorizationFailure)" in message
    assert "fix `account_key`" in message
    assert WRONG_KEY not in message and DEV_KEY not in message and "\n" not in message
    forged = azurite_server.account_sas(key=WRONG_KEY)
    bad_sas = make_connector(
        "", filled, tmp_path, account_url=azurite_server.url, sas_token=SecretStr(forged)
    )
    with pytest.raises(CredentialError, match="`sas_token`"):
        bad_sas.validate()
    read_only = azurite_server.account_sas(permissions="r")
    no_list = make_connector(
        "", filled, tmp_path, account_url=azurite_server.url, sas_token=SecretStr(read_only)
    )
    with pytest.raises(CredentialError, match="read and list permissions"):
        no_list.validate()


def test_one_way_to_authenticate_is_required(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="exactly one of `connection_string` or `account_url`"):
        make_connector("", "c", tmp_path, sas_token=SecretStr("sig=x"))
    with pytest.raises(ConfigError, match="no `sig` parameter"):
        make_connector("", "c", tmp_path, account_url="http://h/acct", sas_token=SecretStr("sv=1"))
    with pytest.raises(ConfigError, match="not a base64 account key"):
        make_connector("", "c", tmp_path, account_url="http://h/a", account_key=SecretStr("!!"))
