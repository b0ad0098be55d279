"""The web connector against a real local site: reads, re-reads, changes, deletes, prunes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from httpserver import LocalHttpServer, Reply, Request
from web_site import MakeWeb, page, sitemap_index, urlset

from headwater.connectors.http import HostRateLimiter
from headwater.connectors.testing import FAR_FUTURE, ReadResult, collect, no_known
from headwater.connectors.web import WebConnector
from headwater.errors import ConfigError, FatalError, TransientError
from headwater.pipeline.parse import parse
from headwater.types import Deleted, Failure, KnownVersions, SourceDocument, Window

ALL = Window(None, FAR_FUTURE)


def read(connector: WebConnector, known: KnownVersions = no_known) -> ReadResult:
    return collect(connector.read(ALL, None, known))


def versions(result: ReadResult) -> dict[str, str]:
    return {d.object_id: d.version for d in result.documents}


@pytest.fixture(params=["sitemap", "crawl"])
def connector(
    request: pytest.FixtureRequest, site: LocalHttpServer, make_web: MakeWeb
) -> WebConnector:
    if request.param == "sitemap":
        return make_web(sitemaps=[site.url("/sitemap.xml")])
    return make_web(start_urls=[site.url("/")])


def test_first_read(site: LocalHttpServer, connector: WebConnector) -> None:
    result = read(connector)
    docs = {d.object_id: d for d in result.documents}
    assert set(docs) == {
        site.url("/"),
        site.url("/about"),
        site.url("/docs/a"),
        site.url("/docs/b?x=1"),  # tracking parameter dropped
        site.url("/docs/c-main"),  # rel=canonical honoured
    }
    home = docs[site.url("/")]
    assert home.title == "Home" and home.media_type == "text/html; charset=utf-8"
    assert home.content is not None and b"<title>Home</title>" in home.content
    assert home.locator == site.url("/")
    assert site.hits("/private/secret") == 0, "robots.txt disallows /private/"
    assert all(not e.path.startswith("/elsewhere") for e in site.log)
    assert not [i for i in result.items if isinstance(i, Failure | Deleted)]


def test_unchanged_reread_sends_conditional_requests_and_downloads_no_bodies(
    site: LocalHttpServer, connector: WebConnector
) -> None:
    first = versions(read(connector))
    site.clear_log()
    again = read(connector, first.get)
    assert versions(again) == first
    page_paths = {"/", "/about", "/docs/a", "/docs/b?x=1", "/docs/c"}
    page_hits = [e for e in site.log if e.path in page_paths]
    assert {e.path for e in page_hits} == page_paths
    assert all(e.status == 304 and e.body_bytes == 0 for e in page_hits), page_hits
    assert all(d.content is None and d.fetch_ref is None for d in again.documents)
    assert {d.title for d in again.documents} >= {"Home", "Doc A"}


def test_a_changed_page_is_read_again(site: LocalHttpServer, connector: WebConnector) -> None:
    first = versions(read(connector))
    site.html("/docs/a", page("Doc A, revised", "/docs/b?x=1"), etag='"a-2"')
    again = read(connector, first.get)
    changed = [d for d in again.documents if d.content is not None]
    assert [d.object_id for d in changed] == [site.url("/docs/a")]
    assert changed[0].title == "Doc A, revised"
    assert changed[0].version != first[site.url("/docs/a")]


@pytest.mark.parametrize("status", [404, 410])
def test_a_vanished_page_is_an_explicit_delete(
    site: LocalHttpServer, connector: WebConnector, status: int
) -> None:
    first = versions(read(connector))
    site.route("/about", Reply(b"gone", status=status))
    again = read(connector, first.get)
    deleted = [i for i in again.items if isinstance(i, Deleted)]
    assert [i.object_id for i in deleted] == [site.url("/about")]
    assert all(i.inferred for i in deleted), "a 404/410 delete is inferred, not reported"
    assert site.url("/about") not in versions(again)


def test_a_never_seen_missing_page_is_not_reported(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    site.html("/", page("Home", "/nowhere"))
    result = read(make_web(start_urls=[site.url("/")]))
    assert site.hits("/nowhere") == 1
    assert not [i for i in result.items if isinstance(i, Deleted | Failure)]


def test_enumerate_lists_every_current_page(site: LocalHttpServer, connector: WebConnector) -> None:
    ids = set(versions(read(connector)))
    assert set(connector.enumerate()) == ids


def test_a_sitemap_failing_mid_listing_fails_enumerate_but_not_read(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    site.route("/sitemap-more.xml.gz", Reply(b"oops", status=500))
    connector = make_web(sitemaps=[site.url("/sitemap.xml")])
    with pytest.raises(TransientError, match=r"sitemap-more\.xml\.gz"):
        set(connector.enumerate())
    result = read(connector)
    failures = [i for i in result.items if isinstance(i, Failure)]
    assert [f.object_id for f in failures] == [site.url("/sitemap-more.xml.gz")]
    assert not failures[0].permanent
    assert site.url("/docs/a") in versions(result)  # the other sitemap still counts


def test_a_billion_laughs_sitemap_is_a_failure_not_a_hang(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    from test_web_sitemaps import BILLION_LAUGHS

    site.route("/sitemap-pages.xml", Reply(BILLION_LAUGHS, content_type="application/xml"))
    connector = make_web(sitemaps=[site.url("/sitemap.xml")])
    started = time.monotonic()
    result = read(connector)
    failures = [i for i in result.items if isinstance(i, Failure)]
    assert [(f.object_id, f.error_class, f.permanent) for f in failures] == [
        (site.url("/sitemap-pages.xml"), "unsafe_xml", True)
    ]
    with pytest.raises(FatalError, match=r"unsafe|DTD"):
        set(connector.enumerate())
    assert time.monotonic() - started < 5


def test_robots_disallow_everything(site: LocalHttpServer, make_web: MakeWeb) -> None:
    site.route(
        "/robots.txt", Reply(b"User-agent: HeadwaterTest\nDisallow: /\n", content_type="text/plain")
    )
    result = read(make_web(sitemaps=[site.url("/sitemap.xml")]))
    assert result.documents == []
    assert site.hits("/") == 0
    ignoring = read(make_web(sitemaps=[site.url("/sitemap.xml")], respect_robots=False))
    assert len(ignoring.documents) == 6  # /private/secret too


def test_robots_server_error_fails_the_run(site: LocalHttpServer, make_web: MakeWeb) -> None:
    site.route("/robots.txt", Reply(b"down", status=500))
    with pytest.raises(TransientError, match=r"robots\.txt"):
        read(make_web(start_urls=[site.url("/")]))


def test_redirects_are_followed_only_within_scope(site: LocalHttpServer, make_web: MakeWeb) -> None:
    outside = f"http://127.0.0.1:{site.port + 1}/away"
    site.route("/moved", Reply(status=308, headers={"Location": outside}))
    site.route("/temp", Reply(status=302, headers={"Location": outside}))
    site.route(
        "/sitemap.xml",
        Reply(urlset(site, "/old", "/moved", "/temp"), content_type="application/xml"),
    )
    connector = make_web(sitemaps=[site.url("/sitemap.xml")])
    result = read(connector)
    assert [d.object_id for d in result.documents] == [site.url("/docs/a")]  # /old -> /docs/a
    failures = [i for i in result.items if isinstance(i, Failure)]
    # A listed URL never held that moved out of scope is said, not silently skipped.
    assert [(f.object_id, f.error_class, f.permanent) for f in failures] == [
        (site.url("/moved"), "redirect_out_of_scope", True),
        (site.url("/temp"), "http_302", False),
    ]
    again = read(connector, {site.url("/moved"): "{}", site.url("/docs/a"): "x"}.get)
    assert [i.object_id for i in again.items if isinstance(i, Deleted)] == [site.url("/moved")]


def test_a_start_url_that_redirects_out_of_scope_is_said(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    """start_urls = ["http://…"] for a site that moved to https (another origin, so out
    of the default scope): validate said ok and every sync read nothing, silently."""
    elsewhere = f"http://localhost:{site.port}/about"  # another host: another origin
    site.route("/start", Reply(status=301, headers={"Location": elsewhere}))
    connector = make_web(start_urls=[site.url("/start")])
    with pytest.raises(ConfigError, match=r"redirects to .*outside the crawl scope"):
        connector.validate()
    (failure,) = [i for i in read(connector).items if isinstance(i, Failure)]
    assert (failure.object_id, failure.error_class) == (site.url("/start"), "redirect_out_of_scope")
    assert "`allow_prefixes`" in failure.message


def test_page_size_limit(site: LocalHttpServer, make_web: MakeWeb) -> None:
    site.html("/about", page("Big", text="x" * 5000))
    result = read(make_web(sitemaps=[site.url("/sitemap.xml")], max_page_bytes=2048))
    failures = [i for i in result.items if isinstance(i, Failure)]
    assert [(f.object_id, f.error_class, f.permanent) for f in failures] == [
        (site.url("/about"), "too_large", True)
    ]


def test_crawl_limits(site: LocalHttpServer, make_web: MakeWeb) -> None:
    shallow = read(make_web(start_urls=[site.url("/")], max_depth=0))
    assert [d.object_id for d in shallow.documents] == [site.url("/")]
    capped = make_web(start_urls=[site.url("/")], max_pages=2)
    assert len(read(capped).documents) == 2
    with pytest.raises(FatalError, match="max_pages"):
        set(capped.enumerate())
    denied = read(make_web(start_urls=[site.url("/")], deny_patterns=[r"/docs/"]))
    assert {d.object_id for d in denied.documents} == {site.url("/"), site.url("/about")}


def test_crawl_enumerate_fails_when_a_page_cannot_be_read(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    site.route("/docs/b", Reply(b"down", status=503))
    connector = make_web(start_urls=[site.url("/")])
    with pytest.raises(TransientError, match="could not be fetched"):
        set(connector.enumerate())


def test_meta_robots_noindex_is_followed_but_not_indexed(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    site.html(
        "/about", page("About", "/hidden-child", head='<meta name="robots" content="noindex">')
    )
    site.html("/hidden-child", page("Child"))
    ids = set(versions(read(make_web(start_urls=[site.url("/")]))))
    assert site.url("/about") not in ids and site.url("/hidden-child") in ids


def test_a_held_page_that_turns_noindex_is_deleted(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    """A sitemap-only source never reported a page that added `noindex`, and its
    enumeration still listed the URL: the page stayed searchable for good."""
    connector = make_web(sitemaps=[site.url("/sitemap.xml")])
    known = versions(read(connector))
    assert site.url("/about") in known
    site.html("/about", page("About", head='<meta name="robots" content="noindex">'))
    result = read(connector, known.get)
    gone = [i for i in result.items if isinstance(i, Deleted)]
    assert [(d.object_id, d.inferred) for d in gone] == [(site.url("/about"), True)]
    assert site.url("/about") not in versions(result)


def test_x_robots_tag_noindex_keeps_a_pdf_or_text_file_out(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    """X-Robots-Tag is how a PDF or a text file says noindex (it has no <meta>)."""
    site.route("/notes.txt", Reply(b"Plain notes.", content_type="text/plain"))
    site.route("/few.xml", Reply(urlset(site, "/notes.txt"), content_type="application/xml"))
    connector = make_web(sitemaps=[site.url("/few.xml")])
    known = versions(read(connector))
    assert site.url("/notes.txt") in known
    hidden = Reply(b"Plain notes.", content_type="text/plain", headers={"X-Robots-Tag": "noindex"})
    site.route("/notes.txt", hidden)
    result = read(connector, known.get)
    assert [i.object_id for i in result.items if isinstance(i, Deleted)] == [site.url("/notes.txt")]
    assert not result.documents


def test_a_noindex_copy_never_deletes_its_canonical_page(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    """A print copy says noindex and points its canonical at the real page: that says
    nothing about the real page, which stays (and is still read once per walk)."""
    head = (
        f'<meta name="robots" content="noindex"><link rel="canonical" href="{site.url("/about")}">'
    )
    site.html("/a-print", page("About (print)", head=head))
    site.route(
        "/two.xml", Reply(urlset(site, "/a-print", "/about"), content_type="application/xml")
    )
    connector = make_web(sitemaps=[site.url("/two.xml")])
    first = read(connector)
    assert set(versions(first)) == {site.url("/about")}
    again = read(connector, versions(first).get)
    assert not [i for i in again.items if isinstance(i, Deleted)]
    assert set(versions(again)) == {site.url("/about")}


def test_retry_after_is_honoured(site: LocalHttpServer, make_web: MakeWeb) -> None:
    calls: list[float] = []

    def busy_once(request: Request) -> Reply:
        calls.append(time.monotonic())
        if len(calls) == 1:
            return Reply(b"busy", status=429, headers={"Retry-After": "0.3"})
        return Reply(page("About").encode())

    site.route("/about", busy_once)
    result = read(make_web(sitemaps=[site.url("/sitemap.xml")], max_retry_wait=5.0))
    assert site.url("/about") in versions(result)
    assert len(calls) == 2 and calls[1] - calls[0] >= 0.3


def test_503_after_the_last_attempt_is_a_transient_failure(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    site.route("/about", Reply(b"down", status=503, headers={"Retry-After": "0"}))
    result = read(make_web(sitemaps=[site.url("/sitemap.xml")], max_attempts=3))
    failures = [i for i in result.items if isinstance(i, Failure)]
    assert [(f.object_id, f.error_class, f.permanent) for f in failures] == [
        (site.url("/about"), "transient", False)
    ]
    assert site.hits("/about") == 3


def test_requests_per_second_is_per_host(site: LocalHttpServer, make_web: MakeWeb) -> None:
    """Four fetch threads share one limiter: the requests span at least most of
    ``(n - 1) / rate`` (a missing limiter spans a few milliseconds). Arrival times at the
    server shift with scheduling, so single gaps are not compared: the limiter's exact
    schedule is pinned with a fake clock in the next test."""
    read(make_web(sitemaps=[site.url("/sitemap.xml")], requests_per_second=20.0, concurrency=4))
    starts = sorted(e.at for e in site.log)
    assert len(starts) >= 8
    assert starts[-1] - starts[0] >= 0.6 * (len(starts) - 1) / 20.0, starts


def test_the_host_rate_limiter_spaces_starts_per_host_across_threads() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)

    limiter = HostRateLimiter(4.0, clock=lambda: now[0], sleep=sleep)
    threads = [
        threading.Thread(target=limiter.wait, args=(host,))
        for host in ["https://a", "https://a", "https://b", "https://a", "https://b"]
    ]
    for thread in threads:
        thread.start()
        thread.join()  # in order, so the schedule is known; the lock is what threads share
    # a: 0, 0.25, 0.5 s; b: 0, 0.25 s, all computed at the same clock reading
    assert sorted(slept) == [0.25, 0.25, 0.5]
    now[0] = 101.0  # a second later every host's schedule is behind the clock: no wait
    limiter.wait("https://a")
    assert len(slept) == 3


def test_resume_skips_committed_work(site: LocalHttpServer, make_web: MakeWeb) -> None:
    connector = make_web(sitemaps=[site.url("/sitemap.xml")], checkpoint_every=2)
    full = read(connector)
    checkpoints = [i for i in full.items if not isinstance(i, SourceDocument | Failure | Deleted)]
    assert len(checkpoints) == 2 and full.final is None
    site.clear_log()
    resumed = collect(connector.read(ALL, checkpoints[-1], no_known))  # type: ignore[arg-type]
    assert [d.object_id for d in resumed.documents] == [site.url("/docs/c-main")]
    assert site.hits("/") == 0  # sitemap mode does not re-fetch what it resumes past


def test_sitemap_index_nesting(site: LocalHttpServer, make_web: MakeWeb) -> None:
    site.route(
        "/top.xml", Reply(sitemap_index(site, "/sitemap.xml"), content_type="application/xml")
    )
    assert len(read(make_web(sitemaps=[site.url("/top.xml")])).documents) == 5


def test_a_lost_link_cache_costs_downloads_not_pages(
    site: LocalHttpServer, make_web: MakeWeb, tmp_path: Path
) -> None:
    first = read(make_web(start_urls=[site.url("/")]))
    cache = tmp_path / "state" / "web" / "site.pages.sqlite"
    assert cache.exists()  # one file per source inside the workspace state dir
    cache.unlink()
    site.clear_log()
    again = read(make_web(start_urls=[site.url("/")]), versions(first).get)
    assert set(versions(again)) == set(versions(first))  # 304 without links: fetched again
    assert site.statuses("/about") == [304, 200]


def test_links_to_files_are_not_pages(site: LocalHttpServer, make_web: MakeWeb) -> None:
    site.html("/about", page("About", "/download", "/manual.txt"))
    site.route("/download", Reply(b"PK\x03\x04" * 100, content_type="application/zip"))
    site.route("/manual.txt", Reply(b"Plain manual text.", content_type="text/plain"))
    result = read(make_web(start_urls=[site.url("/")]))
    docs = {d.object_id: d for d in result.documents}
    assert site.hits("/files/logo.png") == 0  # an image extension is never requested
    assert site.hits("/download") == 1 and site.url("/download") not in docs
    manual = docs[site.url("/manual.txt")]
    assert manual.media_type == "text/plain" and manual.title == "manual.txt"
    assert not [i for i in result.items if isinstance(i, Failure)]


def test_the_servers_charset_reaches_the_parser(site: LocalHttpServer, make_web: MakeWeb) -> None:
    """A short page in KOI8-R or Shift_JIS without a <meta charset> defeats detection: the
    Content-Type's charset goes on with the media type, so the text is indexed as served."""
    russian, japanese = "Привет, как дела?", "こんにちは世界"
    body = f"<html><head><title>Ru</title></head><body><p>{russian}</p></body></html>"
    site.route("/ru", Reply(body.encode("koi8-r"), content_type="text/html; charset=koi8-r"))
    plain = Reply(japanese.encode("shift_jis"), content_type="text/plain; charset=Shift_JIS")
    site.route("/ja.txt", plain)
    site.route("/few.xml", Reply(urlset(site, "/ru", "/ja.txt"), content_type="application/xml"))
    docs = {d.object_id: d for d in read(make_web(sitemaps=[site.url("/few.xml")])).documents}
    ru, ja = docs[site.url("/ru")], docs[site.url("/ja.txt")]
    assert ru.media_type == "text/html; charset=koi8-r" and ru.title == "Ru"
    assert ru.content is not None and ja.content is not None
    assert parse(ru.content, name=ru.object_id, media_type=ru.media_type).text == russian
    assert parse(ja.content, name=ja.object_id, media_type=ja.media_type).text == japanese


def test_a_default_latin1_label_on_a_utf8_page_is_not_trusted(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    """Apache's AddDefaultCharset or Tomcat label every response ISO-8859-1; a body that is
    valid UTF-8 with non-ASCII bytes in it is UTF-8 (Latin-1 text almost never is)."""
    body = "<html><head><title>Fr</title></head><body><p>Déjà vu, crème brûlée.</p></body></html>"
    mislabelled = Reply(body.encode(), content_type="text/html; charset=ISO-8859-1")
    site.route("/fr", mislabelled)
    site.route("/few.xml", Reply(urlset(site, "/fr"), content_type="application/xml"))
    (doc,) = read(make_web(sitemaps=[site.url("/few.xml")])).documents
    assert doc.media_type == "text/html" and doc.content is not None
    assert parse(doc.content, name=doc.object_id, media_type=doc.media_type).text == (
        "Déjà vu, crème brûlée."
    )
