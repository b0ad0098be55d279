"""Browsers on the operator's machine: DNS rebinding, cross-site forms, security headers.

Open mode (no ``[[api.keys]]``) made every caller a local admin and checked only the bind
address: a page on ``evil.example`` re-resolved to 127.0.0.1 read every document
(``Host: evil.example:PORT``), and a plain cross-site form POST paused syncs. These run a
real open-mode server and a real keyed one (the module's ``server``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_support import KEYS, Server, make_workspace

from ports import free_port


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("open")
    config = make_workspace(root)
    text = config.read_text()
    config.write_text(text[: text.index("[[api.keys]]")])  # no key: open mode
    with Server(config, free_port(), root / "server.log") as srv:
        yield srv


def paused(srv: Server) -> bool:
    sources = httpx.get(srv.url + "/v1/sources").json()["sources"]
    return bool(next(s for s in sources if s["id"] == "docs")["paused"])


def test_open_mode_answers_only_loopback_host_names(open_server: Server) -> None:
    port = open_server.port
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.nip.io:{port}", ""):
        for method, path, body in (
            ("GET", "/v1/status", None),
            ("POST", "/v1/search", {"query": "vacation", "groups": ["staff"]}),
        ):
            r = httpx.request(
                method, open_server.url + path, json=body, headers={"Host": host}, timeout=30
            )
            assert r.status_code == 421, (host, path, r.text)
            assert "loopback" in r.json()["error"] and "api.keys" in r.json()["error"]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
        r = httpx.get(open_server.url + "/v1/status", headers={"Host": host}, timeout=30)
        assert r.status_code == 200, (host, r.text)


def test_open_mode_refuses_another_sites_unsafe_requests(open_server: Server) -> None:
    url = open_server.url + "/v1/sources/docs/pause"
    for origin in ("http://evil.example", "null", f"http://localhost:{open_server.port + 1}"):
        r = httpx.post(url, headers={"Origin": origin}, timeout=30)
        assert r.status_code == 403, (origin, r.text)
        assert "Origin" in r.json()["error"]
    r = httpx.post(url, headers={"Sec-Fetch-Site": "cross-site"}, timeout=30)
    assert r.status_code == 403
    assert not paused(open_server)
    # A program (no Origin) and this server's own pages are served.
    own = f"http://127.0.0.1:{open_server.port}"
    assert httpx.post(url, headers={"Origin": own}, timeout=30).json()["paused"] is True
    resume = httpx.post(open_server.url + "/v1/sources/docs/resume", timeout=30)
    assert resume.json()["changed"] is True and not paused(open_server)
    # Reads are not refused for their Origin (a cross-site page cannot read the answer).
    assert httpx.get(open_server.url + "/v1/status", headers={"Origin": "http://evil.example"})


def sign_in(client: httpx.Client, key: str) -> str:
    """Sign in to /admin; the session's CSRF token of its pages."""
    form = client.get("/admin/login").text
    token = re.search(r'name="csrf" value="([^"]+)"', form)
    assert token is not None
    own = {"Origin": str(client.base_url).rstrip("/")}
    r = client.post("/admin/login", data={"key": key, "csrf": token.group(1)}, headers=own)
    assert r.status_code == 303 and r.headers["location"] == "/admin", r.text
    page = client.get("/admin/sources/docs").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    return csrf.group(1)


def test_cookie_authenticated_admin_forms_refuse_another_sites_origin(server: Server) -> None:
    # With keys configured too: the session cookie is the credential, so Origin is checked.
    with httpx.Client(base_url=server.url, follow_redirects=False, timeout=30) as browser:
        csrf = sign_in(browser, KEYS["admin"])
        evil = browser.post(
            "/admin/sources/docs/pause",
            data={"csrf": csrf},
            headers={"Origin": "http://evil.example"},
        )
        assert evil.status_code == 403 and "Origin" in evil.json()["error"]
        with server.client() as admin:
            docs = next(s for s in admin.get("/v1/sources").json()["sources"] if s["id"] == "docs")
            assert docs["paused"] is False
        own = browser.post(
            "/admin/sources/docs/pause", data={"csrf": csrf}, headers={"Origin": server.url}
        )
        assert own.status_code == 303, own.text
        browser.post(
            "/admin/sources/docs/resume", data={"csrf": csrf}, headers={"Origin": server.url}
        )
        # A bearer-key API call is not a browser's: its Origin is not the credential.
        with server.client() as admin:
            r = admin.post("/v1/sources/docs/resume", headers={"Origin": "http://evil.example"})
            assert r.status_code == 200


def test_admin_pages_carry_security_headers(server: Server) -> None:
    with httpx.Client(base_url=server.url, follow_redirects=False, timeout=30) as browser:
        sign_in(browser, KEYS["admin"])
        for path in ("/admin", "/admin/login", "/admin/dlq", "/admin/static/admin.css"):
            r = browser.get(path)
            assert r.status_code == 200, path
            csp = r.headers["content-security-policy"]
            assert "frame-ancestors 'none'" in csp and "default-src 'self'" in csp, path
            assert r.headers["x-content-type-options"] == "nosniff"
            assert r.headers["referrer-policy"] == "same-origin"
    r = httpx.get(server.url + "/healthz")
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff"


def test_no_page_loads_assets_from_a_cdn(server: Server) -> None:
    # /docs and /redoc loaded Swagger UI and ReDoc from cdn.jsdelivr.net: they are off.
    for path in ("/docs", "/redoc"):
        assert httpx.get(server.url + path).status_code == 404
    assert httpx.get(server.url + "/openapi.json").status_code == 200
    templates = Path(__file__).resolve().parents[2] / "src" / "headwater" / "api" / "admin"
    for page in templates.rglob("*.html"):
        assert not re.search(r"(src|href)=\"(https?:)?//", page.read_text()), page
