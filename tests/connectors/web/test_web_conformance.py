"""The shipped connector conformance suite, run for both web modes over a local site."""

from __future__ import annotations

import pytest
from httpserver import LocalHttpServer, refused_port
from web_site import MakeWeb

from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestWebSitemapConformance(ConnectorConformance):
    @pytest.fixture
    def harness(self, site: LocalHttpServer, make_web: MakeWeb) -> ConnectorHarness:
        return ConnectorHarness(
            make=lambda: make_web(sitemaps=[site.url("/sitemap.xml")], checkpoint_every=2),
            make_broken=lambda: make_web(sitemaps=[f"http://127.0.0.1:{refused_port()}/s.xml"]),
        )


class TestWebCrawlConformance(ConnectorConformance):
    @pytest.fixture
    def harness(self, site: LocalHttpServer, make_web: MakeWeb) -> ConnectorHarness:
        return ConnectorHarness(
            make=lambda: make_web(start_urls=[site.url("/")], checkpoint_every=2, concurrency=2),
            make_broken=lambda: make_web(start_urls=[site.url("/missing")]),
        )
