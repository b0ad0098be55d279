"""The rss connector under the real sync runner: an entry that first appears with an old
date is still indexed, and an entry with a relative guid is found by the guid as written."""

from __future__ import annotations

from pathlib import Path

from httpserver import LocalHttpServer, Reply
from rss_feeds import RSS, rss2

from headwater import Workspace


def open_ws(tmp_path: Path, feed_url: str) -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "news"\ntype = "rss"\nurl = "{feed_url}"\n'
        'user_agent = "HeadwaterTest/1.0"\nrequests_per_second = 1000.0\n'
        "access = { public = true }\n"
    )
    return Workspace.open(config)


def test_an_entry_first_seen_with_an_old_date_is_indexed(
    http_server: LocalHttpServer, tmp_path: Path
) -> None:
    new = ("fresh", "Fresh post", "Mon, 06 Jan 2025 10:00:00 GMT")
    http_server.route("/feed.xml", Reply(rss2(http_server, new), content_type=RSS))
    with open_ws(tmp_path, http_server.url("/feed.xml")) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 1
        # A late entry dated long before the last sync (a back-dated post, a feed that
        # was down): the manifest has never held it, so its date must not hide it.
        late = ("late", "Late post", "Mon, 02 Jan 2023 10:00:00 GMT")
        http_server.route("/feed.xml", Reply(rss2(http_server, new, late), content_type=RSS))
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.new, run.counts.unchanged) == ("succeeded", 1, 0)
        assert ws.document(source="news", object_id="late")["state"] == "active"


def test_a_relative_guid_is_the_object_id_as_written(
    http_server: LocalHttpServer, tmp_path: Path
) -> None:
    feed = (
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
        b"<item><title>Relative</title><guid>posts/42</guid>"
        b"<pubDate>Mon, 06 Jan 2025 10:00:00 GMT</pubDate></item></channel></rss>"
    )
    http_server.route("/blog/feed.xml", Reply(feed, content_type=RSS))
    with open_ws(tmp_path, http_server.url("/blog/feed.xml")) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 1
        doc = ws.document(source="news", object_id="posts/42")
        assert doc["locator"] == http_server.url("/blog/posts/42")  # the link is resolved
