"""The jira connector against the fake: ACLs, ADF, windows, rate limits, validate()."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from jira_support import T0, make, populate

from fakes.jira import FakeJira
from headwater.connectors.jira._adf import adf_to_text
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.types import Access, Checkpoint, Window

ALL = Window(None, FAR_FUTURE)


def _docs(site: FakeJira, tmp_path: Path) -> dict[str, object]:
    return {
        d.object_id: d for d in collect(make(site, tmp_path).read(ALL, None, no_known)).documents
    }


def test_access_from_permission_scheme_roles_and_security_level(
    site: FakeJira, tmp_path: Path
) -> None:
    ids = populate(site)
    docs = {
        d.object_id: d for d in collect(make(site, tmp_path).read(ALL, None, no_known)).documents
    }
    group, qa = "tickets:group:g1", "tickets:group:g2"  # named by groupId, not by name
    # group + role actors (a user and a group) + the reporter of this issue (emails as
    # Jira writes them: the gate normalizes them)
    assert docs[ids["eng1"]].access == Access(
        users=("Ann@Example.com", "cat@example.com"), groups=(group, qa)
    )
    assert docs[ids["eng2"]].access == Access(users=("cat@example.com",), groups=(group, qa))
    # a security level replaces the scheme: its user and the issue's assignee
    assert docs[ids["eng3"]].access == Access(users=("Ann@Example.com", "bob@example.com"))
    # the project lead and a named user
    assert docs[ids["ops1"]].access == Access(users=("bob@example.com", "cat@example.com"))
    assert docs[ids["eng1"]].title == "ENG-1: Build breaks"
    assert docs[ids["eng1"]].metadata["issue_type"] == "Bug"


def test_a_group_holder_is_named_by_its_id_whatever_its_name(
    site: FakeJira, tmp_path: Path
) -> None:
    """PermissionHolder: "As a group's name can change, use of value is recommended"."""
    ids = populate(site)
    site.projects["OPS"]["browse"] = [{"type": "group", "value": "g1"}]  # no `parameter`
    docs = {
        d.object_id: d for d in collect(make(site, tmp_path).read(ALL, None, no_known)).documents
    }
    assert docs[ids["ops1"]].access == Access(groups=("tickets:group:g1",))
    # g1 is renamed and a new group g7 takes its old name: g1 keeps its issues, g7 gets none
    site.groups["g1"] = ("jira-devs-old", site.groups["g1"][1])
    site.groups["g7"] = ("jira-devs", ["acc-cat"])
    site.projects["OPS"]["browse"] = [{"type": "group", "parameter": "jira-devs-old"}]
    connector = make(site, tmp_path)  # a new connector: nothing cached
    docs = {d.object_id: d for d in collect(connector.read(ALL, None, no_known)).documents}
    assert docs[ids["ops1"]].access == Access(groups=("tickets:group:g1",))
    assert ("tickets:group:g7", ["cat@example.com"]) in list(connector.groups())


def test_fetch_renders_description_and_comments(site: FakeJira, tmp_path: Path) -> None:
    ids = populate(site)
    site.comment(ids["eng2"], "Bob", "Reviewed")
    text = make(site, tmp_path).fetch(ids["eng2"]).decode()
    assert text.startswith("# ENG-2: Write docs\n\nDocument the API")
    assert "Comment by Ann" in text and "Started on it" in text and "Reviewed" in text
    assert (
        "Reviewed" not in make(site, tmp_path, include_comments=False).fetch(ids["eng2"]).decode()
    )


def test_adf_to_text_keeps_structure() -> None:
    doc = {"type": "doc", "content": [
        {"type": "heading", "attrs": {"level": 2}, "content": [{"type": "text", "text": "Steps"}]},
        {"type": "bulletList", "content": [
            {"type": "listItem", "content": [{"type": "paragraph", "content": [
                {"type": "text", "text": "ask "},
                {"type": "mention", "attrs": {"text": "@ann"}}]}]},
            {"type": "listItem", "content": [{"type": "paragraph", "content": [
                {"type": "inlineCard", "attrs": {"url": "https://x.example/1"}}]}]}]},
        {"type": "paragraph", "content": [{"type": "text", "text": "a"},
                                          {"type": "hardBreak"}, {"type": "text", "text": "b"}]},
    ]}  # fmt: skip
    assert adf_to_text(doc) == "## Steps\n\n- ask @ann\n- https://x.example/1\n\na\nb"
    assert adf_to_text(None) == ""


def test_a_windowed_run_reads_only_changes(site: FakeJira, tmp_path: Path) -> None:
    ids = populate(site)
    first = collect(make(site, tmp_path).read(Window(None, T0.replace(minute=30)), None, no_known))
    assert len(first.documents) == 4 and site.content_reads() == 0, "the listing reads no body"
    site.issues[ids["eng2"]].updated = T0.replace(minute=40)
    window = Window(T0.replace(minute=30), T0.replace(minute=50))
    second = collect(make(site, tmp_path).read(window, first.final, no_known))
    assert [d.object_id for d in second.documents] == [ids["eng2"]]
    jql = [c.query["jql"] for c in site.log if c.path.endswith("/search/jql")][-1]
    assert 'updated >= "2024/04/30 09:30"' in jql, jql


def test_a_project_whose_browsers_changed_is_read_in_full(site: FakeJira, tmp_path: Path) -> None:
    populate(site)
    first = collect(make(site, tmp_path).read(Window(None, T0.replace(minute=30)), None, no_known))
    window = Window(T0.replace(minute=30), T0.replace(minute=50))
    assert collect(make(site, tmp_path).read(window, first.final, no_known)).documents == []
    site.projects["OPS"]["browse"].append({"type": "anyone"})
    changed = collect(make(site, tmp_path).read(window, first.final, no_known)).documents
    assert [d.metadata["key"] for d in changed] == ["OPS-1"]
    assert changed[0].access is not None and changed[0].access.public


def test_the_jql_filter_narrows_the_issues(site: FakeJira, tmp_path: Path) -> None:
    ids = populate(site)
    got = collect(make(site, tmp_path, jql="issuetype = Bug").read(ALL, None, no_known))
    assert [d.object_id for d in got.documents] == [ids["eng1"], ids["eng3"]]
    with pytest.raises(ValueError, match="ORDER BY"):
        make(site, tmp_path, jql="issuetype = Bug ORDER BY created")


def test_search_pages_without_is_last_are_all_read(site: FakeJira, tmp_path: Path) -> None:
    ids = populate(site)
    site.omit_is_last = True  # only `nextPageToken` says another page follows
    connector = make(site, tmp_path)  # page_size 2: ENG's three issues take two pages
    docs = collect(connector.read(ALL, None, no_known)).documents
    assert sorted(d.object_id for d in docs) == sorted(ids.values())
    assert sorted(connector.enumerate()) == sorted(ids.values())


def test_a_429_with_retry_after_is_waited_out(site: FakeJira, tmp_path: Path) -> None:
    populate(site)
    site.throttle["/rest/api/3/search/jql"] = 1
    started = time.monotonic()
    assert len(collect(make(site, tmp_path).read(ALL, None, no_known)).documents) == 4
    assert time.monotonic() - started >= 1.0, "Retry-After: 1 must be honoured"
    assert [c.status for c in site.log if c.path.endswith("/jql")][:2] == [429, 200]


def test_groups_lists_members_by_email(site: FakeJira, tmp_path: Path) -> None:
    populate(site)
    listed = list(make(site, tmp_path).groups())
    assert listed == [("tickets:group:g1", ["Ann@Example.com", "bob@example.com"])]
    assert [g.display_name for g in listed] == [site.groups["g1"][0]]  # the name: a label


def test_validate_names_token_scope_project_and_jql(site: FakeJira, tmp_path: Path) -> None:
    populate(site)
    make(site, tmp_path).validate()
    with pytest.raises(CredentialError, match="`api_token`"):
        make(site, tmp_path, api_token="wrong").validate()
    with pytest.raises(ConfigError, match="'NOPE'"):
        make(site, tmp_path, projects=["ENG", "NOPE"]).validate()
    with pytest.raises(ConfigError, match="`jql`"):
        make(site, tmp_path, jql="labels in (docs").validate()
    site.deny.add("/rest/api/3/project/ENG/permissionscheme")
    with pytest.raises(CredentialError, match="`manage:jira-project`"):
        make(site, tmp_path).validate()
    with pytest.raises(TransientError, match="`base_url`"):
        make(site, tmp_path, base_url="http://127.0.0.1:9").validate()


def test_resuming_at_a_project_boundary_decides_the_next_project_afresh(
    site: FakeJira, tmp_path: Path
) -> None:
    populate(site)
    first = collect(make(site, tmp_path).read(Window(None, T0.replace(minute=30)), None, no_known))
    site.projects["ENG"]["browse"].append({"type": "anyone"})  # ENG is read in full, OPS not
    window = Window(T0.replace(minute=30), T0.replace(minute=50))
    second = collect(make(site, tmp_path).read(window, first.final, no_known))
    assert {d.metadata["project"] for d in second.documents} == {"ENG"}
    boundary = next(
        i
        for i in second.items
        if isinstance(i, Checkpoint)
        and json.loads(i.cursor)["at"] == {"project": 1, "full": True, "token": None}
    )
    resumed = collect(make(site, tmp_path).read(window, boundary, no_known))
    assert resumed.documents == [], "OPS is unchanged: ENG's full read must not carry over"
