"""The rss connector against real local feeds: formats, windows, conditional GET, pages."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import pytest
from httpserver import LocalHttpServer, Reply, refused_port
from rss_feeds import RSS, RSS2_ITEMS, MakeRss, rss2

from headwater.connectors.rss import RssOptions
from headwater.connectors.testing import FAR_FUTURE, ReadResult, collect, no_known
from headwater.errors import ConfigError, CredentialError, FatalError, ItemError, TransientError
from headwater.pipeline.parse import parse
from headwater.types import Checkpoint, Failure, KnownVersions, SourceDocument, Window

ALL = Window(None, FAR_FUTURE)


def read(
    connector: object,
    window: Window = ALL,
    checkpoint: Checkpoint | None = None,
    known: KnownVersions = no_known,
) -> ReadResult:
    return collect(connector.read(window, checkpoint, known))  # type: ignore[attr-defined]


def held(object_id: str) -> str | None:
    """A manifest that already holds every entry (the window then filters them all)."""
    return "held"


def by_id(result: ReadResult) -> dict[str, SourceDocument]:
    return {d.object_id: d for d in result.documents}


def test_rss2(feeds: LocalHttpServer, make_rss: MakeRss) -> None:
    docs = by_id(read(make_rss(url=feeds.url("/rss2.xml"))))
    assert list(docs) == ["post-1", "post-2", "post-3"]  # oldest first
    one = docs["post-1"]
    assert one.title == "Post one" and one.locator == feeds.url("/posts/post-1")
    assert one.updated_at == datetime(2025, 1, 6, 10, tzinfo=UTC)
    assert one.sequence == int(one.updated_at.timestamp()) * 1_000_000
    assert one.media_type == "text/html" and one.content is not None
    assert b"Summary of Post one." in one.content and b"<title>Post one</title>" in one.content
    assert one.metadata["feed"] == feeds.url("/rss2.xml") and one.metadata["tags"] == ["news"]
    assert one.version.startswith("sha256:")


def test_atom(feeds: LocalHttpServer, make_rss: MakeRss) -> None:
    docs = by_id(read(make_rss(url=feeds.url("/atom.xml"))))
    assert list(docs) == ["urn:blog:1", "urn:blog:2"]
    first, second = docs["urn:blog:1"], docs["urn:blog:2"]
    assert first.content is not None and b"<b>first</b> atom entry" in first.content
    assert second.content is not None and b"Plain summary, two." in second.content
    assert second.updated_at == datetime(2025, 3, 2, 12, tzinfo=UTC)


def test_rss1(feeds: LocalHttpServer, make_rss: MakeRss) -> None:
    docs = read(make_rss(url=feeds.url("/rss1.xml"))).documents
    assert [d.title for d in docs] == ["RDF one"]
    assert docs[0].object_id == feeds.url("/posts/rdf-1")
    assert docs[0].updated_at == datetime(2025, 2, 1, 8, tzinfo=UTC)


def test_window_filtering(feeds: LocalHttpServer, make_rss: MakeRss) -> None:
    connector = make_rss(urls=[feeds.url("/rss2.xml"), feeds.url("/atom.xml")])
    window = Window(datetime(2025, 1, 6, 10, tzinfo=UTC), datetime(2025, 3, 1, 12, tzinfo=UTC))
    assert list(by_id(read(connector, window, known=held))) == ["post-2", "post-3", "urn:blog:1"]
    # Entries the manifest never held are read whatever their date, except those dated
    # after the window's end (the next run reads them).
    assert list(by_id(read(connector, window))) == ["post-1", "post-2", "post-3", "urn:blog:1"]


def test_an_undated_entry_is_in_every_window(feeds: LocalHttpServer, make_rss: MakeRss) -> None:
    feed = rss2(feeds, ("dated", "Dated", "Mon, 06 Jan 2025 10:00:00 GMT"))
    feed = feed.replace(
        b"</channel>",
        b"<item><guid isPermaLink='false'>undated</guid><title>U</title></item></channel>",
    )
    feeds.route("/mixed.xml", Reply(feed, content_type=RSS))
    window = Window(datetime(2030, 1, 1, tzinfo=UTC), FAR_FUTURE)
    docs = read(make_rss(url=feeds.url("/mixed.xml")), window, known=held).documents
    assert [(d.object_id, d.updated_at, d.sequence) for d in docs] == [("undated", None, None)]


def test_an_id_twice_in_one_feed_is_read_from_its_newest_entry(
    feeds: LocalHttpServer, make_rss: MakeRss
) -> None:
    feed = rss2(
        feeds,
        ("dup", "Newer", "Tue, 07 Jan 2025 10:00:00 GMT"),
        ("dup", "Older", "Mon, 06 Jan 2025 10:00:00 GMT"),
    )
    feeds.route("/dup.xml", Reply(feed, content_type=RSS))
    docs = read(make_rss(url=feeds.url("/dup.xml"))).documents
    assert [(d.object_id, d.title) for d in docs] == [("dup", "Newer")]


def test_an_html_title_is_indexed_as_text(feeds: LocalHttpServer, make_rss: MakeRss) -> None:
    """Atom `type="html"` titles (and RSS titles with escaped markup) are HTML: their tags
    and entities must not show in the title of every search result."""
    atom = (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        "<title>F</title><id>urn:f</id><updated>2025-01-01T00:00:00Z</updated>"
        '<entry><id>urn:1</id><title type="html">Q&amp;amp;A: &lt;em&gt;tips&lt;/em&gt;</title>'
        "<updated>2025-01-01T00:00:00Z</updated><summary>Body.</summary></entry></feed>"
    )
    feeds.route("/html-title.xml", Reply(atom.encode(), content_type="application/atom+xml"))
    (doc,) = read(make_rss(url=feeds.url("/html-title.xml"))).documents
    assert doc.title == "Q&A: tips"
    assert doc.content is not None and b"<title>Q&amp;A: tips</title>" in doc.content


def test_conditional_get_on_the_feed(feeds: LocalHttpServer, make_rss: MakeRss) -> None:
    connector = make_rss(urls=[feeds.url("/rss2.xml"), feeds.url("/atom.xml")])
    first = read(connector)
    assert first.final is not None and len(first.documents) == 5
    feeds.clear_log()
    second = read(connector, checkpoint=first.final)
    assert second.documents == []
    assert feeds.statuses() == [304, 304] and feeds.body_bytes() == 0
    assert feeds.log[0].headers["if-none-match"] == '"r2-1"'
    assert feeds.log[1].headers["if-modified-since"] == "Sun, 02 Mar 2025 12:00:00 GMT"
    items = (*RSS2_ITEMS, ("post-4", "Post four", "Thu, 09 Jan 2025 10:00:00 GMT"))
    feeds.route("/rss2.xml", Reply(rss2(feeds, *items), content_type=RSS, etag='"r2-2"'))
    third = read(connector, checkpoint=second.final)
    assert [d.object_id for d in third.documents] == ["post-1", "post-2", "post-3", "post-4"]
    versions = {d.object_id: d.version for d in first.documents}
    assert all(versions[d.object_id] == d.version for d in third.documents[:3])


def test_entries_dated_after_the_window_keep_the_feed_unconditional(
    feeds: LocalHttpServer, make_rss: MakeRss
) -> None:
    connector = make_rss(url=feeds.url("/rss2.xml"))
    early = Window(None, datetime(2025, 1, 7, 12, tzinfo=UTC))
    first = read(connector, early)
    assert [d.object_id for d in first.documents] == ["post-1", "post-2"]
    feeds.clear_log()
    later = Window(early.end, FAR_FUTURE)
    second = read(connector, later, first.final, known=held)
    assert feeds.statuses() == [200]  # post-3 was ahead of the first window: no 304
    assert [d.object_id for d in second.documents] == ["post-3"]


def test_fetch_linked_page(feeds: LocalHttpServer, make_rss: MakeRss) -> None:
    connector = make_rss(url=feeds.url("/rss2.xml"), fetch_linked_page=True)
    docs = read(connector).documents
    assert all(d.content is None for d in docs)
    assert [d.fetch_ref for d in docs] == [feeds.url(f"/posts/post-{n}") for n in (1, 2, 3)]
    assert feeds.hits("/posts/post-1") == 0  # nothing fetched until the core asks
    assert b"Full text of post-2." in connector.fetch(docs[1].fetch_ref or "")
    summary = by_id(read(make_rss(url=feeds.url("/rss2.xml"))))
    assert summary["post-1"].version != docs[0].version  # switching modes re-indexes
    with pytest.raises(ItemError) as caught:
        connector.fetch(feeds.url("/posts/gone"))
    assert caught.value.error_class == "http_404" and caught.value.permanent


def test_a_linked_page_is_decoded_by_the_charset_it_is_served_in(
    feeds: LocalHttpServer, make_rss: MakeRss
) -> None:
    russian = "Привет, как дела?"
    body = f"<html><head><title>Ru</title></head><body><p>{russian}</p></body></html>"
    feeds.route("/ru", Reply(body.encode("koi8-r"), content_type="text/html; charset=koi8-r"))
    connector = make_rss(url=feeds.url("/rss2.xml"), fetch_linked_page=True)
    page = connector.fetch(feeds.url("/ru"))
    assert parse(page, name="ru", media_type="text/html").text == russian
    assert connector.fetch(feeds.url("/posts/post-2")).startswith(b"<")  # UTF-8: as served


def test_a_billion_laughs_feed_is_refused_at_once(
    feeds: LocalHttpServer, make_rss: MakeRss
) -> None:
    levels = [f'<!ENTITY l{n} "{f"&l{n - 1};" * 10}">' for n in range(1, 10)]
    evil = (
        f'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY l0 "lol">{"".join(levels)}]>'
        "<rss version='2.0'><channel><title>&l9;</title></channel></rss>"
    ).encode()
    feeds.route("/evil.xml", Reply(evil, content_type=RSS))
    started = time.monotonic()
    with pytest.raises(FatalError, match="entities"):
        read(make_rss(url=feeds.url("/evil.xml")))
    with pytest.raises(ConfigError, match="not a usable feed"):
        make_rss(url=feeds.url("/evil.xml")).validate()
    assert time.monotonic() - started < 5


def test_a_feed_failure_fails_the_run_so_no_window_is_lost(
    feeds: LocalHttpServer, make_rss: MakeRss
) -> None:
    feeds.route("/down.xml", Reply(b"down", status=503))
    connector = make_rss(urls=[feeds.url("/rss2.xml"), feeds.url("/down.xml")])
    stream = connector.read(ALL, None, no_known)
    items = []
    with pytest.raises(TransientError):
        for item in stream:
            items.append(item)
    assert isinstance(items[-1], Checkpoint) and len(items) == 4  # feed one is committed
    feeds.route("/gone.xml", Reply(b"gone", status=410))
    with pytest.raises(FatalError, match="410"):
        read(make_rss(url=feeds.url("/gone.xml")))
    feeds.route("/private.xml", Reply(b"no", status=401))
    with pytest.raises(CredentialError, match="401"):
        read(make_rss(url=feeds.url("/private.xml")))


def test_an_entry_without_id_or_link_is_a_failure(
    feeds: LocalHttpServer, make_rss: MakeRss
) -> None:
    feed = rss2(feeds, ("ok", "Fine", "Mon, 06 Jan 2025 10:00:00 GMT"))
    feed = feed.replace(b"</channel>", b"<item><title>Nameless</title></item></channel>")
    feeds.route("/nameless.xml", Reply(feed, content_type=RSS))
    result = read(make_rss(url=feeds.url("/nameless.xml")))
    failures = [i for i in result.items if isinstance(i, Failure)]
    assert [(f.error_class, f.permanent) for f in failures] == [("no_id", True)]
    assert [d.object_id for d in result.documents] == ["ok"]


def test_validate_messages(feeds: LocalHttpServer, make_rss: MakeRss) -> None:
    feeds.route("/401.xml", Reply(b"", status=401))
    feeds.route("/403.xml", Reply(b"", status=403))
    port = refused_port()
    cases = [
        ("/401.xml", CredentialError, "401 Unauthorized"),
        ("/403.xml", CredentialError, "403 Forbidden"),
        ("/404.xml", ConfigError, "404 Not Found"),
        ("/posts/post-1", ConfigError, "not an RSS or Atom feed"),
        (None, TransientError, f"connection to 127.0.0.1:{port} refused"),
    ]
    for path, kind, fragment in cases:
        url = feeds.url(path) if path else f"http://127.0.0.1:{port}/feed.xml"
        with pytest.raises(kind) as caught:
            make_rss(url=url).validate()
        assert type(caught.value) is kind and fragment in str(caught.value)
        assert "`url`" in str(caught.value) and "\n" not in str(caught.value)
    make_rss(urls=[feeds.url("/rss2.xml"), feeds.url("/atom.xml")]).validate()


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({}, "set `url`"),
        ({"url": "feed.xml"}, "not an http(s) URL"),
        ({"urls": ["file:///x"]}, "not an http"),
    ],
)
def test_option_errors(options: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        RssOptions(**options)  # type: ignore[arg-type]


def test_a_feed_over_the_size_limit_fails_the_run(
    feeds: LocalHttpServer, make_rss: MakeRss
) -> None:
    items = [(f"p{n}", f"Post {n}", "Mon, 06 Jan 2025 10:00:00 GMT") for n in range(20)]
    feeds.route("/big.xml", Reply(rss2(feeds, *items), content_type=RSS))
    with pytest.raises(FatalError, match="max_feed_bytes"):
        read(make_rss(url=feeds.url("/big.xml"), max_feed_bytes=1024))
