"""RSS 2.0, RSS 1.0 and Atom feeds for the rss connector tests, served locally."""

from __future__ import annotations

from collections.abc import Callable

from httpserver import LocalHttpServer, Reply

from headwater.connectors.rss import RssConnector

RSS = "application/rss+xml"


def rss2(server: LocalHttpServer, *items: tuple[str, str, str]) -> bytes:
    """Items are (guid, title, pubDate); each links to /posts/<guid>."""
    body = "".join(
        f"<item><guid isPermaLink='false'>{guid}</guid><title>{title}</title>"
        f"<link>{server.url('/posts/' + guid)}</link><pubDate>{date}</pubDate>"
        f"<description>Summary of {title}.</description>"
        f"<category>news</category><author>ann@example.org (Ann)</author></item>"
        for guid, title, date in items
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel>'
        f"<title>Local news</title><link>{server.url('/')}</link>"
        f"<description>News</description>{body}</channel></rss>"
    ).encode()


def atom(server: LocalHttpServer) -> bytes:
    return f"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom blog</title><id>urn:blog</id>
<updated>2025-03-02T12:00:00Z</updated>
<entry><id>urn:blog:1</id><title>Atom one</title><updated>2025-03-01T12:00:00Z</updated>
<link href="{server.url("/posts/atom-1")}"/>
<content type="html">&lt;p&gt;The &lt;b&gt;first&lt;/b&gt; atom entry.&lt;/p&gt;</content></entry>
<entry><id>urn:blog:2</id><title>Atom two</title><updated>2025-03-02T12:00:00Z</updated>
<link href="{server.url("/posts/atom-2")}"/><summary>Plain summary, two.</summary></entry>
</feed>""".encode()


def rss1(server: LocalHttpServer) -> bytes:
    return f"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
 xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel rdf:about="{server.url("/rss1.xml")}"><title>RDF site</title>
<link>{server.url("/")}</link><description>RDF</description></channel>
<item rdf:about="{server.url("/posts/rdf-1")}"><title>RDF one</title>
<link>{server.url("/posts/rdf-1")}</link><description>First RDF item.</description>
<dc:date>2025-02-01T08:00:00Z</dc:date></item>
</rdf:RDF>""".encode()


RSS2_ITEMS = (
    ("post-1", "Post one", "Mon, 06 Jan 2025 10:00:00 GMT"),
    ("post-2", "Post two", "Tue, 07 Jan 2025 10:00:00 GMT"),
    ("post-3", "Post three", "Wed, 08 Jan 2025 10:00:00 GMT"),
)


def build_feeds(server: LocalHttpServer) -> None:
    server.route("/rss2.xml", Reply(rss2(server, *RSS2_ITEMS), content_type=RSS, etag='"r2-1"'))
    server.route(
        "/atom.xml",
        Reply(
            atom(server),
            content_type="application/atom+xml",
            last_modified="Sun, 02 Mar 2025 12:00:00 GMT",
        ),
    )
    server.route("/rss1.xml", Reply(rss1(server), content_type="application/rdf+xml"))
    for name in ("post-1", "post-2", "post-3", "atom-1", "atom-2", "rdf-1"):
        server.html(
            f"/posts/{name}",
            f"<html><head><title>{name}</title></head>"
            f"<body><p>Full text of {name}.</p></body></html>",
        )


MakeRss = Callable[..., RssConnector]
