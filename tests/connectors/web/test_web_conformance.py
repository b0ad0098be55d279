"""The shipped connector conformance suite, run for both web modes over a local site."""

from __future__ import annotations

import pytest
from httpserver import LocalHttpServer, Reply, refused_port
from web_site import MakeWeb

from headwater.connectors.testing import ConnectorConformance, ConnectorHarness
from headwater.connectors.web import WebConnector


class TestWebSitemapConformance(ConnectorConformance, connector=WebConnector):
    @pytest.fixture
    def harness(self, site: LocalHttpServer, make_web: MakeWeb) -> ConnectorHarness:
        def failing() -> WebConnector:
            site.route("/sitemap-more.xml.gz", Reply(b"down", status=500))  # a nested one
            return make_web(sitemaps=[site.url("/sitemap.xml")], checkpoint_every=2)

        return ConnectorHarness(
            make=lambda: make_web(sitemaps=[site.url("/sitemap.xml")], checkpoint_every=2),
            make_broken=lambda: make_web(sitemaps=[f"http://127.0.0.1:{refused_port()}/s.xml"]),
            make_failing_listing=failing,
        )


class TestWebCrawlConformance(ConnectorConformance, connector=WebConnector):
    @pytest.fixture
    def harness(self, site: LocalHttpServer, make_web: MakeWeb) -> ConnectorHarness:
        def failing() -> WebConnector:
            site.route("/about", Reply(b"down", status=500))  # its links are unknown now
            return make_web(start_urls=[site.url("/")], checkpoint_every=2, concurrency=2)

        return ConnectorHarness(
            make=lambda: make_web(start_urls=[site.url("/")], checkpoint_every=2, concurrency=2),
            make_broken=lambda: make_web(start_urls=[site.url("/missing")]),
            make_failing_listing=failing,
        )
