"""The confluence targeted read: a hint re-reads exactly the named pages by id (content
and ACL, restrictions included), never searches a space; a delete hint for a page that
still exists deletes nothing; one for a gone page tombstones it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluence_support import populate, workspace
from hinting import hinted, state_of

from fakes.confluence import FakeConfluence

CONTENT = re.compile(r"/wiki/rest/api/content/(\d+)")


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, site: FakeConfluence) -> None:
    monkeypatch.setenv("HW_TEST_CONFLUENCE_TOKEN", site.token)


def _content_asked(site: FakeConfluence) -> set[str]:
    return {m.group(1) for c in site.log if (m := CONTENT.match(c.path))}


def test_a_hint_reads_exactly_its_page_content_and_acl(
    site: FakeConfluence, tmp_path: Path
) -> None:
    ids = populate(site)
    with workspace(site, tmp_path) as ws:
        ws.sync(index=False)
        site.edit(ids["home"], "<p>Welcome, edited</p>")
        site.edit(ids["runbook"], "<p>Not hinted: not read</p>")
        site.content[ids["guide"]].read_users = ["acc-bob"]  # a restriction: no new version
        site.clear_log()
        read = hinted(ws, "wiki", [ids["home"], ids["guide"]])
        assert read.counts is not None and read.counts["changed"] == 2, read
        assert _content_asked(site) == {ids["home"], ids["guide"]}
        assert site.count("/wiki/rest/api/content/search") == 0, "a targeted read lists nothing"
        home = ws.manifest.document_by_object("wiki", ids["home"])
        assert home is not None and "edited" in ws.runtime.content_store.get(home.checksum or "")
        guide = ws.manifest.document_by_object("wiki", ids["guide"])
        assert guide is not None and guide.acl == ("user:bob@example.com",)
        assert state_of(ws, "wiki", ids["runbook"]) == ("active", 1)


def test_a_delete_hint_for_a_page_that_exists_deletes_nothing(
    site: FakeConfluence, tmp_path: Path
) -> None:
    ids = populate(site)
    with workspace(site, tmp_path) as ws:
        ws.sync(index=False)
        read = hinted(ws, "wiki", [ids["news"]], deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 0
        assert state_of(ws, "wiki", ids["news"]) == ("active", 1)


def test_a_delete_hint_for_a_gone_page_tombstones_it(site: FakeConfluence, tmp_path: Path) -> None:
    ids = populate(site)
    with workspace(site, tmp_path) as ws:
        ws.sync(index=False)
        site.delete(ids["news"])
        site.clear_log()
        read = hinted(ws, "wiki", [ids["news"]], deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 1
        state = state_of(ws, "wiki", ids["news"])
        assert state is not None and state[0] != "active"
        assert _content_asked(site) == {ids["news"]}
        assert site.count("/wiki/rest/api/content/search") == 0


def test_a_page_of_another_space_is_dropped(site: FakeConfluence, tmp_path: Path) -> None:
    ids = populate(site)
    site.add_space("HR", [("user", "acc-ann")])
    other = site.add("HR", "Salaries", "<p>Private</p>")
    with workspace(site, tmp_path) as ws:
        ws.sync(index=False)
        read = hinted(ws, "wiki", [other, ids["home"]])
        assert read.dropped == 1 and ws.manifest.document_by_object("wiki", other) is None
