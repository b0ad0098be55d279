"""Fixtures for the rss connector tests: local feeds and a connector factory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from httpserver import LocalHttpServer
from rss_feeds import MakeRss, build_feeds

from headwater.connectors.base import SourceContext
from headwater.connectors.rss import RssConnector, RssOptions


@pytest.fixture
def feeds(http_server: LocalHttpServer) -> LocalHttpServer:
    build_feeds(http_server)
    return http_server


@pytest.fixture
def make_rss(feeds: LocalHttpServer, tmp_path: Path) -> MakeRss:
    def make(**options: Any) -> RssConnector:
        defaults: dict[str, Any] = {
            "max_attempts": 2,
            "max_retry_wait": 0.05,
            "requests_per_second": 1000.0,
            "user_agent": "HeadwaterTest/1.0",
        }
        opts = RssOptions(**{**defaults, **options})
        return RssConnector(opts, SourceContext(source_id="feeds", state_dir=tmp_path / "state"))

    return make
