"""The operator console in headless Chromium: overview, run detail, indexes, charts, actions.

One real ``headwater serve`` over a workspace with a source whose root is missing (its
runs fail with an error), a real ``headwater run`` scheduler process for the liveness
line, and a real rebuild for the generation actions. Every page gets a basic
accessibility check: each visible form control has a label, every visible text (SVG
charts included) has a WCAG 2 contrast ratio of at least 4.5:1 against its background
(3:1 for large text), computed from getComputedStyle, and every link, button and field
is reached with the Tab key. Screenshots go under tmp; with
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
from api_support import KEYS, Server, make_workspace, server_env, wait_for
from playwright.sync_api import Page, expect, sync_playwright

from ports import free_port

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
GONE = """
[[source]]
id = "gone"
type = "filesystem"
root = "no-such-folder"
access = { groups = ["staff"] }

[api]
chart_sample_every = "1s"
"""

UNLABELLED = """() => [...document.querySelectorAll('input, select, textarea, button, progress')]
  .filter(e => e.type !== 'hidden')
  .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
               && !(e.tagName === 'BUTTON' && e.textContent.trim()))
  .map(e => e.outerHTML.slice(0, 120))"""
TABBABLE = """() => [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select')]
  .filter(e => e.offsetParent !== null).length"""
CONTRAST = """() => {
  const parse = c => { const m = (c || '').match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const backdrop = el => { const chain = []; for (let e = el; e; e = e.parentElement) chain.push(e);
    let bg = [255, 255, 255, 1];
    for (const e of chain.reverse()) { const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) bg = over(c, bg); }
    return bg; };
  const failing = [];
  for (const el of document.querySelectorAll('body *')) {
    const st = getComputedStyle(el);
    if (!el.getClientRects().length || st.visibility !== 'visible' || +st.opacity === 0) continue;
    const field = el.matches('input:not([type=hidden]), select, textarea');
    const text = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!field && !text) continue;
    const bg = backdrop(el);
    const hint = field && el.placeholder && !el.value;  // the placeholder is what shows
    const ink = parse(hint ? getComputedStyle(el, '::placeholder').color
                           : el instanceof SVGElement ? st.fill : st.color);
    if (!ink) continue;
    const fg = over(ink, bg), a = lum(fg), b = lum(bg);
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(st.fontSize), bold = parseInt(st.fontWeight, 10) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) failing.push(`${el.tagName.toLowerCase()} "${(el.value || el.textContent).trim().slice(0, 30)}" ` +
      `${fg.slice(0, 3).map(Math.round)} on ${bg.slice(0, 3).map(Math.round)}: ${ratio.toFixed(2)} < ${need}`);
  }
  return failing;
}"""
MARK = "() => { const e = document.activeElement; if (e && e !== document.body) e.dataset.tabbed = '1'; }"
REACHED = "() => document.querySelectorAll('[data-tabbed]').length"


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("console")
    with Server(make_workspace(root, extra=GONE), free_port(), root / "server.log") as srv:
        yield srv


def accessible(page: Page) -> None:
    """Every visible control is labelled; every visible text (SVG text included) has a WCAG 2
    contrast of at least 4.5:1 on its background (3:1 when large); Tab reaches every link,
    button and field."""
    assert page.evaluate(UNLABELLED) == []
    assert page.evaluate(CONTRAST) == []
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
        # The contrast check sees a light grey text (#a0a0a0: 2.6:1 on white), also in SVG.
        page.evaluate(  # set through the CSSOM: the CSP refuses inline style attributes
            """() => { const p = document.createElement('p'); p.id = 'grey';
              p.textContent = 'faint'; p.style.color = '#a0a0a0';
              document.querySelector('main').append(p);
              document.querySelector('main').insertAdjacentHTML('beforeend',
                '<svg id="sv"><text x="5" y="15" fill="#a0a0a0">faint svg</text></svg>'); }"""
        )
        failing = page.evaluate(CONTRAST)
        assert len(failing) == 2 and all("faint" in f and f.endswith("< 4.5") for f in failing)
        page.evaluate("() => ['grey', 'sv'].forEach(id => document.getElementById(id).remove())")
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
        phases = page.locator("#phases")  # seconds per phase, with what is left
        for phase in ("read", "fetch and parse", "commit", "prune", "other"):
            expect(phases).to_contain_text(phase)
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
        with console.client("search") as c:  # searches for the latency chart
            for query in ("vacation", "expenses", "deploy"):
                assert c.post("/v1/search", json={"query": query}).status_code == 200
        page.get_by_role("link", name="Charts").click()

        def latency_sampled() -> bool:  # [api] chart_sample_every = "1s" here
            page.reload()
            return page.locator("#chart-latency polyline").count() == 2

        wait_for(latency_sampled)
        charts = ("#chart-durations", "#chart-documents", "#chart-failures", "#chart-rate")
        for chart in (*charts, "#chart-backlog"):
            expect(page.locator(f"{chart} polyline").first).to_be_attached()
        expect(page.locator("#chart-rate polyline title")).to_have_text("main")
        expect(page.locator("#chart-latency polyline title")).to_have_text(["median", "p95"])
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
