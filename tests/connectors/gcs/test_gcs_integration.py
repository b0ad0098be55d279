"""The gcs connector against fake-gcs-server: a lazy listing, generations as versions,
prefix and globs, a refused page token, a 429/503 storm, a listing broken part way, and
validate() messages (a missing bucket, a refused connection, a denied or refused key)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from faultproxy import FaultProxy
from gcs_support import GcsServer, make_connector
from pydantic import SecretStr

from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError, ItemError, TransientError
from headwater.types import Checkpoint, Failure, Window
from ports import free_port

# The module starts fake-gcs-server (a process), so the unit tier (--fast) leaves it out.
pytestmark = pytest.mark.process

WINDOW = Window(None, FAR_FUTURE)


@pytest.fixture
def filled(gcs_server: GcsServer, bucket: str) -> str:
    gcs_server.put(bucket, "a.md", "# A\n", "text/markdown")
    gcs_server.put(bucket, "b.txt", "bee")
    gcs_server.put(bucket, "dir/c.html", "<p>c</p>", "text/html")
    gcs_server.put(bucket, "dir/README", "# Read me\n", "text/markdown; charset=utf-8")
    return bucket


def test_read_lists_lazily_with_generations(
    proxy: FaultProxy, gcs_server: GcsServer, filled: str, tmp_path: Path
) -> None:
    connector = make_connector(proxy.url, filled, tmp_path, page_size=3)
    result = collect(connector.read(WINDOW, None, no_known))
    docs = {d.object_id: d for d in result.documents}
    assert list(docs) == ["a.md", "b.txt", "dir/README", "dir/c.html"]
    assert proxy.count("GET", "alt=media") == 0, "read downloaded"
    assert all(d.content is None and d.fetch_ref == d.object_id for d in docs.values())
    a = docs["a.md"]
    assert a.version.isdigit() and a.sequence == int(a.version)
    assert a.metadata["generation"] == a.version and a.metadata["size"] == "4"
    assert a.locator == f"gs://{filled}/a.md" and a.updated_at is not None
    assert docs["dir/README"].media_type == "text/markdown"  # from the listing's contentType
    assert connector.fetch("dir/c.html") == b"<p>c</p>"
    cursors = [json.loads(i.cursor) for i in result.items if isinstance(i, Checkpoint)]
    assert len(cursors) == 1 and "page" in cursors[0]
    resumed = collect(connector.read(WINDOW, Checkpoint(json.dumps(cursors[0])), no_known))
    assert [d.object_id for d in resumed.documents] == ["dir/c.html"]
    # An overwrite is a new generation: the one changed object gets a new version.
    gcs_server.put(filled, "b.txt", "bee, changed")
    again = {
        d.object_id: d.version for d in collect(connector.read(WINDOW, None, no_known)).documents
    }
    assert {k for k, v in again.items() if v != docs[k].version} == {"b.txt"}
    assert int(again["b.txt"]) > int(docs["b.txt"].version)
    assert connector.fetch("b.txt") == b"bee, changed"
    gcs_server.delete(filled, "b.txt")
    assert "b.txt" not in list(connector.enumerate())
    with pytest.raises(ItemError) as caught:
        connector.fetch("b.txt")
    assert caught.value.error_class == "not_found"


def test_a_refused_page_token_relists_from_the_start(
    proxy: FaultProxy, filled: str, tmp_path: Path
) -> None:
    proxy.fault = lambda method, path: 400 if "pageToken=stale" in path else None
    connector = make_connector(proxy.url, filled, tmp_path)
    result = collect(connector.read(WINDOW, Checkpoint('{"v": 1, "page": "stale"}'), no_known))
    assert len(result.documents) == 4


def test_a_429_and_503_storm_is_retried(proxy: FaultProxy, filled: str, tmp_path: Path) -> None:
    connector = make_connector(proxy.url, filled, tmp_path, page_size=2, retry_attempts=4)
    proxy.storm([429, 503, 503], "/o?")
    assert len(collect(connector.read(WINDOW, None, no_known)).documents) == 4
    proxy.storm([503, 429], "alt=media")
    assert connector.fetch("a.md") == b"# A\n"
    proxy.storm([503] * 4, "/o?")
    with pytest.raises(TransientError, match="HTTP 503"):
        list(connector.enumerate())


def test_a_listing_broken_part_way_raises(proxy: FaultProxy, filled: str, tmp_path: Path) -> None:
    connector = make_connector(proxy.url, filled, tmp_path, page_size=2)
    proxy.fault = lambda method, path: 403 if "pageToken=" in path else None
    with pytest.raises(CredentialError, match=r"storage\.objects\.list"):
        collect(connector.read(WINDOW, None, no_known))
    with pytest.raises(CredentialError):
        list(connector.enumerate())


def test_prefix_globs_and_size_limit(gcs_server: GcsServer, filled: str, tmp_path: Path) -> None:
    gcs_server.put(filled, "dir/big.md", "x" * 100)
    gcs_server.put(filled, "dir/odd name+ü?.html", "<p>odd</p>", "text/html")
    gcs_server.put(filled, "dir/sub/", "")
    connector = make_connector(
        gcs_server.url,
        filled,
        tmp_path,
        prefix="dir",
        include=["*.md", "*.html"],
        max_object_bytes=50,
    )
    result = collect(connector.read(WINDOW, None, no_known))
    assert [d.object_id for d in result.documents] == ["dir/c.html", "dir/odd name+ü?.html"]
    assert connector.fetch("dir/odd name+ü?.html") == b"<p>odd</p>"
    failures = [(f.object_id, f.error_class) for f in result.items if isinstance(f, Failure)]
    assert failures == [("dir/big.md", "too_large")]
    assert connector.in_scope("dir/x.md") and not connector.in_scope("other/x.md")
    assert not connector.in_scope("dir/sub/")


def test_validate_names_a_missing_bucket(gcs_server: GcsServer, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        make_connector(gcs_server.url, "no-such-bucket-hw", tmp_path).validate()
    message = str(caught.value)
    assert "no such bucket 'no-such-bucket-hw'" in message and "fix `bucket`" in message
    assert "\n" not in message


def test_validate_names_a_refused_connection(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(TransientError) as caught:
        make_connector(endpoint, "any", tmp_path).validate()
    assert "connection to 127.0.0.1" in str(caught.value) and "refused" in str(caught.value)


def test_one_way_to_authenticate_is_required(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="exactly one of"):
        make_connector("http://x", "b", tmp_path, anonymous=False)
    with pytest.raises(ConfigError, match="not a service-account key"):
        make_connector("http://x", "b", tmp_path, service_account_json=SecretStr("{}"))


class TokenServer:
    """An OAuth token endpoint that checks the service account's RS256 assertion."""

    def __init__(self, public_key: rsa.RSAPublicKey) -> None:
        self.public_key = public_key
        self.refuse = False
        self.assertions: list[dict[str, object]] = []

    def answer(self, form: dict[str, list[str]]) -> tuple[int, dict[str, object]]:
        if self.refuse:
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        head, claims, signature = form["assertion"][0].split(".")
        pad = lambda s: base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))  # noqa: E731
        self.public_key.verify(
            pad(signature), f"{head}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256()
        )
        self.assertions.append(json.loads(pad(claims)))
        return 200, {"access_token": "ya29.test-token", "expires_in": 3600}


@pytest.fixture
def token_server() -> Iterator[tuple[str, TokenServer, str]]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    tokens = TokenServer(key.public_key())

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["content-length"])
            status, body = tokens.answer(parse_qs(self.rfile.read(length).decode()))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    key_json = json.dumps(
        {
            "type": "service_account",
            "client_email": "reader@proj.iam.gserviceaccount.com",
            "private_key": pem,
            "token_uri": f"http://127.0.0.1:{server.server_address[1]}/token",
        }
    )
    yield key_json, tokens, pem
    server.shutdown()
    thread.join()


def test_service_account_key_signs_for_a_bearer_token(
    proxy: FaultProxy, filled: str, tmp_path: Path, token_server: tuple[str, TokenServer, str]
) -> None:
    key_json, tokens, pem = token_server
    connector = make_connector(
        proxy.url, filled, tmp_path, service_account_json=SecretStr(key_json)
    )
    connector.validate()
    assert len(collect(connector.read(WINDOW, None, no_known)).documents) == 4
    assert connector.fetch("a.md") == b"# A\n"
    assert {h.get("Authorization") for _, _, h in proxy.requests} == {"Bearer ya29.test-token"}
    assert len(tokens.assertions) == 1  # cached for the hour
    claims = tokens.assertions[0]
    assert claims["iss"] == "reader@proj.iam.gserviceaccount.com"
    assert claims["scope"] == "https://www.googleapis.com/auth/devstorage.read_only"
    key_file = tmp_path / "key.json"
    key_file.write_text(key_json)
    by_file = make_connector(proxy.url, filled, tmp_path, service_account_file=str(key_file))
    by_file.validate()
    proxy.fault = lambda method, path: 403
    with pytest.raises(CredentialError) as denied:
        by_file.validate()
    assert "reader@proj.iam.gserviceaccount.com" in str(denied.value)
    assert "Storage Object Viewer" in str(denied.value)
    proxy.fault = None
    tokens.refuse = True
    refused = make_connector(proxy.url, filled, tmp_path, service_account_json=SecretStr(key_json))
    with pytest.raises(CredentialError) as caught:
        refused.validate()
    message = str(caught.value)
    assert "Invalid JWT Signature" in message and "service_account_json" in message
    assert "PRIVATE KEY" not in message and pem[40:80] not in message and "\n" not in message
