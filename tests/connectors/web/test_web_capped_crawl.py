"""A crawl capped by `max_pages` is incomplete by configuration, not by a fault: the run
succeeds, deletes nothing, and its report says why in a note (issue 28, item 8)."""

from __future__ import annotations

from pathlib import Path

from httpserver import LocalHttpServer

from headwater import Workspace


def test_a_capped_crawl_is_a_note_not_a_failure_on_every_run(
    site: LocalHttpServer, tmp_path: Path
) -> None:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "site"\ntype = "web"\nstart_urls = ["{site.url("/")}"]\n'
        'max_pages = 2\nuser_agent = "HeadwaterTest/1.0"\nrequests_per_second = 1000.0\n'
        "max_attempts = 1\naccess = { public = true }\n"
    )
    with Workspace.open(config) as ws:
        for _ in range(2):  # before: completed_with_errors, failed 1, run after run
            run = ws.sync(index=False).runs[0]
            assert (run.status, run.counts.failed) == ("succeeded", 0), run.as_dict()
            report = run.as_dict()
            assert report["deletes"] == "capped"
            assert "max_pages = 2" in report["note"] and "raise `max_pages`" in report["note"]
        assert ws.failures("site") == []
        assert ws.status().as_dict()["sources"][0]["documents"] == 2
