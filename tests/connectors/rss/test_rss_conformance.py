"""The shipped connector conformance suite for the rss connector (three feed formats)."""

from __future__ import annotations

import pytest
from httpserver import LocalHttpServer, Reply, refused_port
from rss_feeds import MakeRss

from headwater.connectors.rss import RssConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestRssConformance(ConnectorConformance, connector=RssConnector):
    @pytest.fixture
    def harness(self, feeds: LocalHttpServer, make_rss: MakeRss) -> ConnectorHarness:
        urls = [feeds.url(p) for p in ("/rss2.xml", "/atom.xml", "/rss1.xml")]

        def failing() -> RssConnector:
            feeds.route("/atom.xml", Reply(b"down", status=503))  # the second of three
            return make_rss(urls=urls)

        return ConnectorHarness(
            make=lambda: make_rss(urls=urls),
            make_broken=lambda: make_rss(url=f"http://127.0.0.1:{refused_port()}/feed.xml"),
            make_failing_listing=failing,
        )


class TestRssLinkedPageConformance(ConnectorConformance, connector=RssConnector):
    @pytest.fixture
    def harness(self, feeds: LocalHttpServer, make_rss: MakeRss) -> ConnectorHarness:
        def failing() -> RssConnector:
            feeds.route("/rss2.xml", Reply(b"down", status=503))
            return make_rss(url=feeds.url("/rss2.xml"), fetch_linked_page=True)

        return ConnectorHarness(
            make=lambda: make_rss(url=feeds.url("/rss2.xml"), fetch_linked_page=True),
            make_broken=lambda: make_rss(url=feeds.url("/missing.xml")),
            make_failing_listing=failing,
        )
