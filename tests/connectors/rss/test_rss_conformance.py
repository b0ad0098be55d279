"""The shipped connector conformance suite for the rss connector (three feed formats)."""

from __future__ import annotations

import pytest
from httpserver import LocalHttpServer, refused_port
from rss_feeds import MakeRss

from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestRssConformance(ConnectorConformance):
    @pytest.fixture
    def harness(self, feeds: LocalHttpServer, make_rss: MakeRss) -> ConnectorHarness:
        urls = [feeds.url(p) for p in ("/rss2.xml", "/atom.xml", "/rss1.xml")]
        return ConnectorHarness(
            make=lambda: make_rss(urls=urls),
            make_broken=lambda: make_rss(url=f"http://127.0.0.1:{refused_port()}/feed.xml"),
        )


class TestRssLinkedPageConformance(ConnectorConformance):
    @pytest.fixture
    def harness(self, feeds: LocalHttpServer, make_rss: MakeRss) -> ConnectorHarness:
        return ConnectorHarness(
            make=lambda: make_rss(url=feeds.url("/rss2.xml"), fetch_linked_page=True),
            make_broken=lambda: make_rss(url=feeds.url("/missing.xml")),
        )
