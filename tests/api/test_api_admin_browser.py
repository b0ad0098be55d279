"""The admin page in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright).

Sign in, see the overview, trigger a sync and see its run, redrive a dead letter, use the
search tester; screenshots go under tmp (the ones in docs/admin.md come from
test_api_admin_console.py).
"""

from __future__ import annotations

from pathlib import Path

import httpx
from api_support import KEYS, Server
from playwright.sync_api import expect, sync_playwright


def test_admin_page_end_to_end(server: Server, tmp_path: Path) -> None:
    # Without a session the page sends the browser to sign in; a key alone is not a session.
    r = httpx.get(server.url + "/admin", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/admin/login"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(server.url + "/admin/login")
        page.get_by_label("Admin API key").fill(KEYS["search"])  # not an admin key
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("not an admin key")
        page.get_by_label("Admin API key").fill(KEYS["admin"])
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="Overview")).to_be_visible()
        cookie = next(c for c in page.context.cookies() if c["name"] == "hw_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"

        page.get_by_role("link", name="docs").click()
        page.get_by_role("button", name="Sync now").click()
        expect(page.get_by_role("status")).to_contain_text("sync started")
        page.wait_for_timeout(1500)
        page.reload()
        expect(page.locator("#runs tbody tr").first).to_contain_text("completed_with_errors")

        page.goto(server.url + "/admin")
        expect(page.get_by_role("cell", name="docs", exact=True)).to_be_visible()
        page.screenshot(path=str(tmp_path / "admin-overview.png"), full_page=True)

        page.get_by_role("link", name="Dead letters").click()
        expect(page.locator("#dlq")).to_contain_text("broken.pdf")
        page.get_by_label("Stage").select_option("parse")
        page.get_by_role("button", name="Filter").click()
        expect(page.locator("#dlq")).to_contain_text("broken.pdf")
        page.get_by_role("button", name="Redrive entry").first.click()
        expect(page.get_by_role("status")).to_contain_text("redriven 1")
        page.screenshot(path=str(tmp_path / "admin-dlq.png"))

        page.get_by_role("link", name="Search tester").click()
        page.get_by_label("Query").fill("vacation")
        page.get_by_label("As user (email)").fill("ann@acme.test")
        page.get_by_label("Groups (comma separated)").fill("staff, other")
        page.get_by_role("button", name="Search").click()
        expect(page.locator("#results")).to_contain_text("Vacation policy")
        expect(page.locator("#results")).to_contain_text("visible by: group:staff")
        page.set_viewport_size({"width": 390, "height": 844})  # a phone
        page.screenshot(path=str(tmp_path / "admin-search-phone.png"), full_page=True)

        # A form without the session's CSRF token is refused.
        status = page.evaluate(
            "fetch('/admin/sources/docs/pause', {method: 'POST', body: new URLSearchParams({csrf: 'x'})}).then(r => r.status)"
        )
        assert status == 403
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        browser.close()
