"""Fixtures for the web connector tests: the local site and a connector factory over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from httpserver import LocalHttpServer
from web_site import MakeWeb, build_site

from headwater.connectors.base import SourceContext
from headwater.connectors.web import WebConnector, WebOptions


@pytest.fixture
def site(http_server: LocalHttpServer) -> LocalHttpServer:
    build_site(http_server)
    return http_server


@pytest.fixture
def make_web(site: LocalHttpServer, tmp_path: Path) -> MakeWeb:
    """``make_web(sitemaps=[...], ...)``: fast-retrying options, a shared state dir."""

    def make(**options: Any) -> WebConnector:
        defaults: dict[str, Any] = {
            "max_attempts": 2,
            "max_retry_wait": 0.05,
            "requests_per_second": 1000.0,
            "user_agent": "HeadwaterTest/1.0",
        }
        opts = WebOptions(**{**defaults, **options})
        return WebConnector(opts, SourceContext(source_id="site", state_dir=tmp_path / "state"))

    return make
