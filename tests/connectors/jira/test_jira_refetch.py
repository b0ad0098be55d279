"""The jira targeted read: a hint re-reads exactly the named issues by id (content and
ACL), never searches the projects; a delete hint for an issue that still exists deletes
nothing; one for a gone issue tombstones it; one for an issue the ``jql`` no longer
selects removes it from this source.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hinting import hinted, state_of
from jira_support import populate, workspace

from fakes.jira import FakeJira

ISSUE = re.compile(r"/rest/api/3/issue/(\d+)")


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, site: FakeJira) -> None:
    monkeypatch.setenv("HW_TEST_JIRA_TOKEN", site.token)


def _issues_asked(site: FakeJira) -> set[str]:
    return {m.group(1) for c in site.log if (m := ISSUE.match(c.path))}


def test_a_hint_reads_exactly_its_issue_content_and_acl(site: FakeJira, tmp_path: Path) -> None:
    ids = populate(site)
    with workspace(site, tmp_path) as ws:
        ws.sync(index=False)
        site.touch(ids["eng1"], description="Fails on Fridays too")
        site.touch(ids["eng2"], description="Not hinted: not read")
        site.projects["ENG"]["browse"] = [
            {"type": "group", "parameter": "jira-devs", "value": "g1"}
        ]
        site.clear_log()
        read = hinted(ws, "tickets", [ids["eng1"]])
        assert read.counts is not None and read.counts["changed"] == 1, read
        assert _issues_asked(site) == {ids["eng1"]}
        assert site.count("/rest/api/3/search") == 0, "a targeted read lists nothing"
        record = ws.manifest.document_by_object("tickets", ids["eng1"])
        assert record is not None and record.acl == ("group:tickets:group:g1",)
        assert "Fridays" in ws.runtime.content_store.get(record.checksum or "")


def test_a_delete_hint_for_an_issue_that_exists_deletes_nothing(
    site: FakeJira, tmp_path: Path
) -> None:
    ids = populate(site)
    with workspace(site, tmp_path) as ws:
        ws.sync(index=False)
        before = state_of(ws, "tickets", ids["ops1"])
        read = hinted(ws, "tickets", [ids["ops1"]], deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 0
        assert state_of(ws, "tickets", ids["ops1"]) == before == ("active", 1)


def test_a_delete_hint_for_a_gone_issue_tombstones_it(site: FakeJira, tmp_path: Path) -> None:
    ids = populate(site)
    with workspace(site, tmp_path) as ws:
        ws.sync(index=False)
        del site.issues[ids["ops1"]]
        site.clear_log()
        read = hinted(ws, "tickets", [ids["ops1"]], deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 1
        state = state_of(ws, "tickets", ids["ops1"])
        assert state is not None and state[0] != "active"
        assert _issues_asked(site) == {ids["ops1"]} and site.count("/rest/api/3/search") == 0


def test_an_issue_the_jql_no_longer_selects_leaves(site: FakeJira, tmp_path: Path) -> None:
    ids = populate(site)
    with workspace(site, tmp_path, 'jql = "issuetype = Bug"\n') as ws:
        ws.sync(index=False)
        assert state_of(ws, "tickets", ids["eng1"]) == ("active", 1)
        site.touch(ids["eng1"], issuetype="Task")
        read = hinted(ws, "tickets", [ids["eng1"], ids["eng3"]])
        assert read.counts is not None and read.counts["deleted"] == 1, read
        assert state_of(ws, "tickets", ids["eng3"]) == ("active", 1)


def test_an_issue_of_another_project_is_dropped(site: FakeJira, tmp_path: Path) -> None:
    ids = populate(site)
    site.add_project("HR", [{"type": "user", "parameter": "acc-ann"}])
    other = site.add("HR", "Salaries", "Private")
    with workspace(site, tmp_path) as ws:
        ws.sync(index=False)
        read = hinted(ws, "tickets", [other, ids["eng2"]])
        assert read.dropped == 1 and ws.manifest.document_by_object("tickets", other) is None
