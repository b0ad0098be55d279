"""A web source whose configured roots are unusable fails the run (as ``validate`` would)
instead of succeeding with nothing read; ``in_scope`` follows allow_prefixes/deny_patterns."""

from __future__ import annotations

from pathlib import Path

import pytest
from httpserver import LocalHttpServer, Reply
from web_site import MakeWeb

from headwater import Workspace
from headwater.connectors.base import Scoped
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError
from headwater.types import Window


def open_ws(tmp_path: Path, roots: str) -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "site"\ntype = "web"\n{roots}\n'
        'user_agent = "HeadwaterTest/1.0"\nrequests_per_second = 1000.0\n'
        "max_attempts = 1\naccess = { public = true }\n"
    )
    return Workspace.open(config)


def test_a_sitemap_that_404s_fails_the_run(site: LocalHttpServer, tmp_path: Path) -> None:
    missing = site.url("/no-such-sitemap.xml")
    with open_ws(tmp_path, f'sitemaps = ["{missing}"]') as ws:
        run = ws.sync(index=False).runs[0]
    assert run.status == "failed"
    assert run.error is not None and "no-such-sitemap.xml" in run.error and "404" in run.error


def test_a_start_url_blocked_by_robots_fails_the_run(
    site: LocalHttpServer, tmp_path: Path, make_web: MakeWeb
) -> None:
    site.route(
        "/robots.txt", Reply(b"User-agent: HeadwaterTest\nDisallow: /\n", content_type="text/plain")
    )
    with open_ws(tmp_path, f'start_urls = ["{site.url("/")}"]') as ws:
        run = ws.sync(index=False).runs[0]
    assert run.status == "failed"
    assert run.error is not None and "robots.txt" in run.error and "start_urls" in run.error
    with pytest.raises(ConfigError, match=r"robots\.txt"):
        collect(make_web(start_urls=[site.url("/")]).read(Window(None, FAR_FUTURE), None, no_known))


def test_in_scope_follows_prefixes_and_deny_patterns(
    site: LocalHttpServer, make_web: MakeWeb
) -> None:
    connector = make_web(
        sitemaps=[site.url("/sitemap.xml")],
        allow_prefixes=[site.url("/docs/")],
        deny_patterns=["/docs/old/"],
    )
    assert isinstance(connector, Scoped)
    assert connector.in_scope(site.url("/docs/a"))
    assert not connector.in_scope(site.url("/docs/old/a"))
    assert not connector.in_scope(site.url("/about"))
