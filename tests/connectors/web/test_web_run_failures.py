"""A web source whose configured roots are unusable fails the run (as ``validate`` would)
instead of succeeding with nothing read; ``in_scope`` follows allow_prefixes/deny_patterns."""

from __future__ import annotations

from pathlib import Path

import pytest
from httpserver import LocalHttpServer, Reply
from web_site import MakeWeb, page, urlset

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


def test_a_lasting_404_storm_stops_at_the_fraction_across_runs(
    site: LocalHttpServer, tmp_path: Path
) -> None:
    """Every page of a 10-page site answers 404, run after run (a broken deploy). The
    inferred deletes stop at 20% of the site in all: before, each run took 20% (or one
    page) more of what was left, so the storm emptied the source."""
    paths = [f"/storm/{n}" for n in range(10)]
    site.route("/storm.xml", Reply(urlset(site, *paths), content_type="application/xml"))
    for path in paths:
        site.html(path, page(f"Storm page {path[-1]}"), etag=f'"{path[-1]}"')
    with open_ws(tmp_path, f'sitemaps = ["{site.url("/storm.xml")}"]') as ws:
        assert ws.sync(index=False).runs[0].counts.new == 10
        for path in paths:
            site.route(path, Reply(b"not found", status=404))
        deleted = []
        for _ in range(5):
            run = ws.sync(index=False).runs[0]
            deleted.append(run.counts.deleted)
            assert run.status == "completed_with_errors"
            assert run.prune_blocked is not None
            assert "past prune_max_fraction" in str(run.prune_blocked["error"])
        assert deleted == [2, 0, 0, 0, 0]
        assert ws.manifest.count_documents("site") == 8
        assert "2 more were applied by earlier runs" in str(run.prune_blocked["error"])
        forced = ws.sync(index=False, force=True).runs[0]  # the operator confirms: all go
        assert (forced.status, forced.counts.deleted) == ("succeeded", 8)
        assert ws.manifest.count_documents("site") == 0


def test_inferred_deletes_within_the_fraction_apply_and_a_page_back_frees_its_share(
    site: LocalHttpServer, tmp_path: Path
) -> None:
    paths = [f"/calm/{n}" for n in range(10)]
    site.route("/calm.xml", Reply(urlset(site, *paths), content_type="application/xml"))
    for path in paths:
        site.html(path, page(f"Calm page {path[-1]}"), etag=f'"{path[-1]}"')
    with open_ws(tmp_path, f'sitemaps = ["{site.url("/calm.xml")}"]') as ws:
        ws.sync(index=False)
        site.route(paths[0], Reply(b"not found", status=404))
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.deleted) == ("succeeded", 1)
        site.route(paths[1], Reply(b"not found", status=404))  # 2 of 10 within the retention
        second = ws.sync(index=False).runs[0]
        assert (second.status, second.counts.deleted) == ("succeeded", 1)
        site.route(paths[2], Reply(b"gone", status=410))  # a third: past 20% of the site
        third = ws.sync(index=False).runs[0]
        assert (third.status, third.counts.deleted) == ("completed_with_errors", 0)
        site.html(paths[0], page("Calm page 0, back"), etag='"0b"')  # back: no longer gone
        fourth = ws.sync(index=False).runs[0]
        assert (fourth.counts.new, fourth.counts.deleted) == (1, 0)  # budget known at start
        fifth = ws.sync(index=False).runs[0]  # one inferred delete held of ten: room for one
        assert (fifth.status, fifth.counts.deleted) == ("succeeded", 1)
