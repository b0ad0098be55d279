"""The confluence connector under the real sync runner, against the fake site: a no-op
re-sync downloads no body; an edit, an add, a delete and a permission change arrive; a
search that fails half way deletes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluence_support import populate, workspace

from fakes.confluence import FakeConfluence


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, site: FakeConfluence) -> None:
    monkeypatch.setenv("HW_TEST_CONFLUENCE_TOKEN", site.token)  # `${ENV}` in headwater.toml


def test_sync_edit_add_delete_and_permission_change(site: FakeConfluence, tmp_path: Path) -> None:
    ids = populate(site)
    with workspace(site, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new, first.fetched) == ("succeeded", 5, 5)
        reads = site.body_reads()
        again = ws.sync(index=False).runs[0]
        assert (again.counts.unchanged, again.fetched) == (0, 0), again.counts
        assert site.body_reads() == reads, "a no-op re-sync must download no body"
        site.edit(ids["home"], "<p>Welcome, edited and longer</p>")
        added = site.add("OPS", "Pager", "<p>Who is on call</p>")
        site.delete(ids["news"])
        third = ws.sync(index=False).runs[0]
        c = third.counts
        assert (c.new, c.changed, c.deleted) == (1, 1, 1), c
        assert site.body_reads() == reads + 2
        assert ws.manifest.document_by_object("wiki", added) is not None
        site.spaces["OPS"]["perms"] = [("user", "acc-ann")]  # bob loses OPS, ann gains it
        fourth = ws.sync(index=False).runs[0]
        assert (fourth.counts.changed, fourth.fetched) == (2, 0), fourth.counts
        record = ws.manifest.document_by_object("wiki", ids["runbook"])
        assert record is not None and record.acl == ("user:ann@example.com",)


def test_a_restriction_change_arrives_with_the_acl_refresh(
    site: FakeConfluence, tmp_path: Path
) -> None:
    ids = populate(site)
    with workspace(site, tmp_path, 'acl_refresh_every = "0s"\n') as ws:
        ws.sync(index=False)
        site.content[ids["guide"]].read_users = ["acc-bob"]  # lastmodified does not move
        run = ws.sync(index=False).runs[0]
        assert (run.counts.changed, run.fetched) == (2, 0), run.counts  # guide and its child
        guide = ws.manifest.document_by_object("wiki", ids["guide"])
        child = ws.manifest.document_by_object("wiki", ids["secret"])
        assert guide is not None and guide.acl == ("user:bob@example.com",)
        assert child is not None and child.acl == (), "ann-only below bob-only: nobody"


def test_a_search_failing_half_way_deletes_nothing(site: FakeConfluence, tmp_path: Path) -> None:
    populate(site)
    with workspace(site, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
        site.fail_paged_search = True  # the enumeration's second page answers 500
        site.delete(next(iter(site.content)))
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.deleted) == ("completed_with_errors", 0), run
        assert ws.manifest.count_documents("wiki", "active") == 5
