"""Failures by cause on the admin page and in the API, against a real ``headwater serve``.

The corpus gets files no parser reads (``.nginx`` text in Latin-1, a ``.gif``) next to the broken
PDF; after a sync, ``/admin/failures`` shows each group with its fix, and its bulk
actions (CSRF-protected, session only) drop or redrive exactly that group's entries.
The last test does the same in headless Chromium.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_support import KEYS, Server, wait_for
from playwright.sync_api import expect, sync_playwright

DOCS_IMAGE = Path(__file__).resolve().parents[2] / "docs" / "images" / "admin-failures.png"


@pytest.fixture(scope="module")
def synced(server: Server) -> Server:
    corpus = server.config.parent / "corpus"
    (corpus / "etc").mkdir()
    for n in range(3):
        (corpus / "etc" / f"site-{n}.nginx").write_bytes(  # Latin-1: only its name says text
            f"server_name host{n}.acme.test; # Müller\n".encode("latin-1")
        )
    (corpus / "logo.gif").write_bytes(b"GIF89a\x01\x00\x01\x00\x80\x00\x00" + bytes(40))
    with server.client() as c:
        job = c.post("/v1/sources/docs/sync").json()
        wait_for(lambda: c.get(f"/v1/jobs/{job['job_id']}").json()["status"] == "done")
    return server


def groups_of(server: Server) -> dict[str, dict[str, Any]]:
    with server.client() as c:
        r = c.get("/v1/failures/summary", params={"source": "docs"})
    assert r.status_code == 200, r.text
    return {g["label"]: g for g in r.json()["groups"]}


def sign_in(client: httpx.Client) -> str:
    """Sign in to /admin with the admin key; the session's CSRF token."""
    token = re.search(r'name="csrf" value="([^"]+)"', client.get("/admin/login").text)
    assert token is not None
    r = client.post("/admin/login", data={"key": KEYS["admin"], "csrf": token.group(1)})
    assert r.status_code == 303 and r.headers["location"] == "/admin", r.text
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/admin/failures").text)
    assert csrf is not None
    return csrf.group(1)


def test_failures_page_shows_each_group_with_its_fix_and_drops_one(synced: Server) -> None:
    groups = groups_of(synced)
    assert groups["unsupported_type .nginx"]["count"] == 3
    assert groups["unsupported_type .gif"]["fix"]["line"] == 'exclude = ["**/*.gif"]'
    pdf = next(g for g in groups.values() if g["extension"] == ".pdf")
    assert pdf["examples"] == ["broken.pdf"]
    with synced.client("search") as search:  # the API's role check
        assert search.get("/v1/failures/summary").status_code == 403
    with synced.client() as c:
        assert c.get("/v1/failures/summary", params={"source": "dcos"}).status_code == 404

    with httpx.Client(base_url=synced.url, follow_redirects=False, timeout=60) as browser:
        anonymous = browser.get("/admin/failures")
        assert anonymous.status_code == 303 and anonymous.headers["location"] == "/admin/login"
        csrf = sign_in(browser)
        page = html.unescape(browser.get("/admin/failures").text)
        assert "Failures by cause" in page
        assert "unsupported_type .nginx" in page and "etc/site-0.nginx" in page
        assert '[parse] text_extensions = [".nginx"]' in page
        assert 'exclude = ["**/*.gif"]' in page
        gif = {"source": "docs", "stage": "parse", "error_class": "unsupported_type"}
        gif["extension"] = ".gif"
        refused = browser.post("/admin/failures/drop", data={**gif, "csrf": "stale"})
        assert refused.status_code == 403
        assert "unsupported_type .gif" in groups_of(synced)
        dropped = browser.post("/admin/failures/drop", data={**gif, "csrf": csrf})
        assert dropped.status_code == 303
        assert (
            "dropped+1+entries+of+docs+parse+unsupported_type+.gif" in dropped.headers["location"]
        )
    after = groups_of(synced)
    assert "unsupported_type .gif" not in after
    assert after["unsupported_type .nginx"]["count"] == 3  # the other groups stay


def test_failures_by_cause_in_a_browser(synced: Server, tmp_path: Path) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("dialog", lambda dialog: dialog.accept())  # the drop form's confirm()
        page.goto(synced.url + "/admin/login")
        page.get_by_label("Admin API key").fill(KEYS["admin"])
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("link", name="Failures by cause").click()
        table = page.locator("#failure-groups")
        expect(table).to_contain_text("unsupported_type .nginx")
        expect(table).to_contain_text('[parse] text_extensions = [".nginx"]')
        expect(table).to_contain_text("broken.pdf")
        page.screenshot(path=str(tmp_path / "admin-failures.png"), full_page=True)
        if os.environ.get("HEADWATER_UPDATE_DOCS_IMAGES") == "1":
            shutil.copy(tmp_path / "admin-failures.png", DOCS_IMAGE)

        pdf = next(g for g in groups_of(synced).values() if g["extension"] == ".pdf")
        page.get_by_role("button", name=f"Redrive docs parse {pdf['label']}").click()
        expect(page.get_by_role("status")).to_contain_text(
            "redriven 1: 0 resolved, 1 still failing"
        )
        page.get_by_role("button", name="Drop docs parse unsupported_type .nginx").click()
        expect(page.get_by_role("status")).to_contain_text("dropped 3 entries")
        expect(table).not_to_contain_text(".nginx")
        expect(table).to_contain_text("broken.pdf")  # redriven, still failing, still here
        browser.close()
    assert "unsupported_type .nginx" not in groups_of(synced)
