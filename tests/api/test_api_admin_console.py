"""The operator console in headless Chromium: overview, run detail, indexes, charts, actions.

One real ``headwater serve`` over a workspace with a source whose root is missing (its
runs fail with an error), a real ``headwater run`` scheduler process for the liveness
line, and a real rebuild for the generation actions. Every page gets a basic
accessibility check: each visible form control has a label and every link, button and
field is reached with the Tab key. Screenshots go under tmp; with
HEADWATER_UPDATE_DOCS_IMAGES=1 they are also copied to docs/images/ (docs/admin.md).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_support import KEYS, Server, free_port, make_workspace, server_env, wait_for
from playwright.sync_api import Page, expect, sync_playwright

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
GONE = """
[[source]]
id = "gone"
type = "filesystem"
root = "no-such-folder"
access = { groups = ["staff"] }
"""

UNLABELLED = """() => [...document.querySelectorAll('input, select, textarea, button, progress')]
  .filter(e => e.type !== 'hidden')
  .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
               && !(e.tagName === 'BUTTON' && e.textContent.trim()))
  .map(e => e.outerHTML.slice(0, 120))"""
TABBABLE = """() => [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select')]
  .filter(e => e.offsetParent !== null).length"""
MARK = "() => { const e = document.activeElement; if (e && e !== document.body) e.dataset.tabbed = '1'; }"
REACHED = "() => document.querySelectorAll('[data-tabbed]').length"


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("console")
    srv = Server(make_workspace(root, extra=GONE), free_port(), root / "server.log").start()
    try:
        yield srv
    finally:
        srv.stop()


def accessible(page: Page) -> None:
    """Every visible control is labelled; Tab reaches every link, button and field."""
    assert page.evaluate(UNLABELLED) == []
    total = page.evaluate(TABBABLE)
    page.locator("body").focus()
    for _ in range(total + 2):
        page.keyboard.press("Tab")
        page.evaluate(MARK)
    assert page.evaluate(REACHED) >= total


def run_short(page: Page, srv: Server) -> str:
    """The first 8 characters of the docs source's newest run id."""
    with srv.client() as c:
        return str(c.get("/v1/runs", params={"source": "docs"}).json()["runs"][0]["run_id"][:8])


def shot(page: Page, tmp: Path, name: str) -> None:
    page.screenshot(path=str(tmp / name), full_page=True)
    if os.environ.get("HEADWATER_UPDATE_DOCS_IMAGES") == "1":
        shutil.copy(tmp / name, DOCS_IMAGES / name)


def test_console_pages_and_actions(console: Server, tmp_path: Path) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.on("dialog", lambda dialog: dialog.accept())  # the confirmations
        page.goto(console.url + "/admin/login")
        accessible(page)
        page.get_by_label("Admin API key").fill(KEYS["admin"])
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#liveness")).to_contain_text("No scheduler running")
        inbox = page.locator("#sources tr", has_text="inbox")
        expect(inbox).to_contain_text("push: nothing pushed yet")

        accessible(page)
        for path in ("/admin/dlq", "/admin/search?q=vacation", "/admin/sources/docs"):
            page.goto(console.url + path)
            accessible(page)

        # Sync now on the failing source: the outcome links to its run's page.
        page.goto(console.url + "/admin/sources/gone")
        page.get_by_role("button", name="Sync now").click()
        page.get_by_role("status").get_by_role("link").click()
        expect(page.get_by_role("heading", level=1)).to_contain_text("of gone")

        def run_ended() -> bool:
            page.reload()
            return "failed" in page.locator(".status-failed").all_inner_texts()

        wait_for(run_ended)
        expect(page.locator("#error-message")).to_contain_text("no-such-folder")
        expect(page.locator("#error-advice")).to_contain_text("What to do")
        accessible(page)
        shot(page, tmp_path, "admin-run-failed.png")

        # The docs source: failure records and documents of the run, each linked.
        page.goto(console.url + "/admin/sources/docs")
        page.get_by_role("button", name="Sync now").click()
        page.get_by_role("status").get_by_role("link").click()

        def docs_ended() -> bool:
            page.reload()
            return page.locator(".status-completed_with_errors").count() == 1

        wait_for(docs_ended)
        expect(page.locator("#run-failures")).to_contain_text("broken.pdf")
        expect(page.locator("#run-documents")).to_contain_text("Vacation policy")
        shot(page, tmp_path, "admin-run.png")
        page.locator("#run-documents").get_by_role("link", name="Vacation policy").click()
        expect(page.get_by_role("heading", name="Document Vacation policy")).to_be_visible()
        accessible(page)

        # The dead-letter queue links each entry's run.
        page.goto(console.url + "/admin/dlq")
        entry = page.locator("#dlq tr", has_text="broken.pdf")
        entry.get_by_role("link", name=run_short(page, console)).click()
        expect(page.locator("#run-failures")).to_contain_text("broken.pdf")

        # The overview: last run linked, last success, the failed run's error in one line.
        page.goto(console.url + "/admin")
        docs = page.locator("#sources tr", has_text="docs")
        expect(docs.get_by_role("link", name="completed_with_errors")).to_be_visible()
        gone = page.locator("#sources tr", has_text="gone")
        expect(gone.locator(".error-line")).to_contain_text("no-such-folder")
        accessible(page)

        # A scheduler process appears on the liveness line, with next due times.
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "headwater", "-c", str(console.config), "run"],
            env=server_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:

            def alive() -> bool:
                page.reload()
                return "Schedulers running" in page.locator("#liveness").inner_text()

            wait_for(alive, timeout=60)
            expect(docs.locator("time").last).to_contain_text("in ")  # next due
            shot(page, tmp_path, "admin-overview.png")
        finally:
            scheduler.send_signal(signal.SIGTERM)
            scheduler.wait(timeout=120)

        def gone_from_line() -> bool:
            page.reload()
            return "No scheduler running" in page.locator("#liveness").inner_text()

        wait_for(gone_from_line)

        # Failures by cause, and the charts.
        page.get_by_role("link", name="Failures by cause").click()
        expect(page.locator("#failure-groups")).to_contain_text(".pdf")
        accessible(page)
        page.screenshot(path=str(tmp_path / "failures.png"))  # docs: test_api_admin_failures
        page.get_by_role("link", name="Charts").click()
        for chart in ("#chart-durations", "#chart-documents", "#chart-failures"):
            expect(page.locator(f"{chart} polyline").first).to_be_attached()
        accessible(page)
        shot(page, tmp_path, "admin-charts.png")

        # Indexes: build generation 2 (not switched), switch to it, roll back.
        with console.client() as c:
            built = c.post("/v1/rebuilds", json={"force": True, "switch": False}, timeout=120)
            assert built.status_code == 200, built.text
        page.get_by_role("link", name="Indexes").click()
        expect(page.locator("#index-main")).to_contain_text("live generation 1")
        expect(page.locator("#index-main .generations")).to_contain_text("ready")
        accessible(page)
        page.get_by_role("button", name="Switch main").click()
        expect(page.get_by_role("status")).to_contain_text("generation 2 is live now")
        expect(page.locator("#index-main")).to_contain_text("live generation 2")
        shot(page, tmp_path, "admin-indexes.png")
        page.get_by_role("button", name="Rollback main").click()
        expect(page.get_by_role("status")).to_contain_text("generation 1 is live again")
        page.get_by_role("button", name="Cancel rebuild main").click()
        expect(page.get_by_role("status")).to_contain_text("cancel of main refused")
        browser.close()
