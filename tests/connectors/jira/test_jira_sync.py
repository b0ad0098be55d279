"""The jira connector under the real sync runner, against the fake site: a no-op re-sync
downloads no issue body; an edit, a comment, an add, a delete and a permission change
arrive; an enumeration failing half way deletes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from jira_support import populate, workspace

from fakes.jira import FakeJira


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, site: FakeJira) -> None:
    monkeypatch.setenv("HW_TEST_JIRA_TOKEN", site.token)  # `${ENV}` in headwater.toml


def test_sync_edit_comment_add_delete_and_permission_change(site: FakeJira, tmp_path: Path) -> None:
    ids = populate(site)
    with workspace(site, tmp_path, 'window_overlap = "0s"\n') as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new, first.fetched) == ("succeeded", 4, 4)
        reads = site.content_reads()
        again = ws.sync(index=False).runs[0]
        assert again.fetched == 0 and site.content_reads() == reads, "a no-op must read no body"
        site.touch(ids["eng1"], description="The build fails on Mondays and Fridays")
        site.comment(ids["eng2"], "Bob", "Reviewed and merged")
        added = site.add("OPS", "Renew certificate", "Before June")
        del site.issues[ids["ops1"]]
        third = ws.sync(index=False).runs[0]
        c = third.counts
        assert (c.new, c.changed, c.deleted) == (1, 2, 1), c
        assert ws.manifest.document_by_object("tickets", added) is not None
        site.projects["ENG"]["browse"] = [{"type": "group", "parameter": "jira-devs"}]
        fourth = ws.sync(index=False).runs[0]
        assert (fourth.counts.changed, fourth.fetched) == (2, 0), fourth.counts  # not ENG-3
        record = ws.manifest.document_by_object("tickets", ids["eng2"])
        assert record is not None and record.acl == ("group:tickets:group:g1",)


def test_a_security_level_change_arrives_with_the_acl_refresh(
    site: FakeJira, tmp_path: Path
) -> None:
    ids = populate(site)
    with workspace(site, tmp_path, 'acl_refresh_every = "0s"\n') as ws:
        ws.sync(index=False)
        site.levels["10100"] = [{"type": "user", "parameter": "acc-cat"}]
        run = ws.sync(index=False).runs[0]
        assert (run.counts.changed, run.fetched) == (1, 0), run.counts
        record = ws.manifest.document_by_object("tickets", ids["eng3"])
        assert record is not None and record.acl == ("user:cat@example.com",)


def test_an_enumeration_failing_half_way_deletes_nothing(site: FakeJira, tmp_path: Path) -> None:
    ids = populate(site)
    with workspace(site, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        site.fail_paged_search = True  # the enumeration's second page (of ENG) answers 500
        del site.issues[ids["ops1"]]
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.deleted) == ("completed_with_errors", 0), run
        assert ws.manifest.count_documents("tickets", "active") == 4
