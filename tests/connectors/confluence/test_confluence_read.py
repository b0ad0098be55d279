"""The confluence connector against the fake: ACLs, windows, rate limits, validate()."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluence_support import T0, make, populate

from fakes.confluence import FakeConfluence
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError, TransientError
from headwater.types import Access, Checkpoint, Window

ALL = Window(None, FAR_FUTURE)


def test_access_comes_from_space_permissions_and_restrictions(
    site: FakeConfluence, tmp_path: Path
) -> None:
    ids = populate(site)
    docs = {
        d.object_id: d for d in collect(make(site, tmp_path).read(ALL, None, no_known)).documents
    }
    assert docs[ids["home"]].access == Access(
        users=("ann@example.com",), groups=("wiki:group:g-1",)
    )
    assert docs[ids["runbook"]].access == Access(users=("bob@example.com",))
    assert docs[ids["secret"]].access == Access(users=("ann@example.com",))
    assert docs[ids["news"]].metadata["content_type"] == "blogpost"
    # The page tree as a hierarchy path: space, ancestors root first, the page (by id).
    assert docs[ids["secret"]].metadata["hierarchy"] == f"ENG/{ids['guide']}/{ids['secret']}"
    assert docs[ids["runbook"]].metadata["hierarchy"] == f"OPS/{ids['runbook']}"


def test_restrictions_are_inherited_and_intersected(site: FakeConfluence, tmp_path: Path) -> None:
    ids = populate(site)
    site.content[ids["guide"]].read_users = ["acc-ann", "acc-bob"]
    site.content[ids["secret"]].read_users = ["acc-ann"]
    docs = {
        d.object_id: d for d in collect(make(site, tmp_path).read(ALL, None, no_known)).documents
    }
    assert docs[ids["guide"]].access == Access(users=("ann@example.com", "bob@example.com"))
    assert docs[ids["secret"]].access == Access(users=("ann@example.com",))
    site.content[ids["guide"]].read_users = []
    site.content[ids["guide"]].read_groups = ["eng-team"]  # a group at one level only
    docs = {
        d.object_id: d for d in collect(make(site, tmp_path).read(ALL, None, no_known)).documents
    }
    assert docs[ids["secret"]].access == Access(), "never wider than Confluence: nobody"


def test_a_windowed_run_reads_only_changes_and_fetches_lazily(
    site: FakeConfluence, tmp_path: Path
) -> None:
    ids = populate(site)
    first = collect(make(site, tmp_path).read(Window(None, T0.replace(minute=30)), None, no_known))
    assert len(first.documents) == 5 and first.final is not None
    assert site.body_reads() == 0, "a listing downloads no body"
    site.content[ids["guide"]].when = T0.replace(minute=40)
    window = Window(T0.replace(minute=30), T0.replace(minute=50))
    second = collect(make(site, tmp_path).read(window, first.final, no_known))
    assert [d.object_id for d in second.documents] == [ids["guide"]]
    cql = [c.query["cql"] for c in site.log if c.path.endswith("/content/search")][-1]
    assert 'lastmodified >= "2024-04-30 09:30"' in cql, cql  # a day of slack for time zones
    body = make(site, tmp_path).fetch(ids["guide"])
    assert b"How to build" in body and b"<title>Guide</title>" in body


def test_a_space_whose_permissions_changed_is_read_in_full(
    site: FakeConfluence, tmp_path: Path
) -> None:
    populate(site)
    first = collect(make(site, tmp_path).read(Window(None, T0.replace(minute=30)), None, no_known))
    window = Window(T0.replace(minute=30), T0.replace(minute=50))
    quiet = collect(make(site, tmp_path).read(window, first.final, no_known))
    assert quiet.documents == []
    site.spaces["OPS"]["perms"].append(("user", "acc-ann"))
    changed = collect(make(site, tmp_path).read(window, first.final, no_known))
    assert [d.metadata["space"] for d in changed.documents] == ["OPS"]
    assert changed.documents[0].access == Access(users=("ann@example.com", "bob@example.com"))
    state = json.loads(changed.final.cursor if changed.final else "{}")
    assert state["spaces"]["OPS"]["full_at"].startswith("2024-05-01T09:50")


@pytest.mark.parametrize("links", ["no_base", "site_relative"])
def test_search_next_links_without_base_or_with_the_context_are_followed(
    site: FakeConfluence, tmp_path: Path, links: str
) -> None:
    ids = populate(site)
    site.search_links = links  # ENG's four pages and posts take two search pages
    connector = make(site, tmp_path)
    docs = collect(connector.read(ALL, None, no_known)).documents
    assert sorted(d.object_id for d in docs) == sorted(ids.values())
    assert sorted(connector.enumerate()) == sorted(ids.values())


def test_a_429_with_retry_after_is_waited_out(site: FakeConfluence, tmp_path: Path) -> None:
    populate(site)
    site.throttle["/wiki/rest/api/content/search"] = 1
    started = time.monotonic()
    docs = collect(make(site, tmp_path).read(ALL, None, no_known)).documents
    assert len(docs) == 5
    assert time.monotonic() - started >= 1.0, "Retry-After: 1 must be honoured"
    assert [c.status for c in site.log if c.path.endswith("/search")][:2] == [429, 200]


def test_groups_lists_members_by_email(site: FakeConfluence, tmp_path: Path) -> None:
    populate(site)
    listed = list(make(site, tmp_path).groups())
    assert listed == [("wiki:group:g-1", ["ann@example.com", "bob@example.com"])]
    assert all(g.display_name for g in listed)  # the group's name travels as a label


@pytest.mark.timeout(30)  # a next link followed without its cursor loops forever
@pytest.mark.parametrize("from_base", [False, True])
def test_space_permission_pages_are_followed_from_the_site_root_or_the_base(
    site: FakeConfluence, tmp_path: Path, from_base: bool
) -> None:
    ids = populate(site)
    site.page_cap, site.v2_links_from_base = 1, from_base  # ENG's readers: three pages
    docs = {
        d.object_id: d for d in collect(make(site, tmp_path).read(ALL, None, no_known)).documents
    }
    assert docs[ids["home"]].access == Access(
        users=("ann@example.com",), groups=("wiki:group:g-1",)
    )


def test_groups_reads_every_page_when_the_server_caps_limit(
    site: FakeConfluence, tmp_path: Path
) -> None:
    populate(site)
    site.page_cap = 1  # one member per page, whatever `limit` asks for
    assert list(make(site, tmp_path).groups()) == [
        ("wiki:group:g-1", ["ann@example.com", "bob@example.com"])
    ]


def test_validate_names_token_scope_and_space(site: FakeConfluence, tmp_path: Path) -> None:
    populate(site)
    make(site, tmp_path).validate()
    with pytest.raises(CredentialError, match="`api_token`"):
        make(site, tmp_path, api_token="wrong").validate()
    with pytest.raises(ConfigError, match="'NOPE'"):
        make(site, tmp_path, spaces=["ENG", "NOPE"]).validate()
    site.deny.add("/wiki/api/v2/spaces/1/permissions")
    with pytest.raises(CredentialError, match=r"`read:space\.permission:confluence`"):
        make(site, tmp_path).validate()
    site.deny = {"/wiki/rest/api/content/search"}
    with pytest.raises(CredentialError, match="`search:confluence`"):
        make(site, tmp_path).validate()
    with pytest.raises(TransientError, match="`base_url`"):
        make(site, tmp_path, base_url="http://127.0.0.1:9").validate()


def test_resuming_at_a_space_boundary_decides_the_next_space_afresh(
    site: FakeConfluence, tmp_path: Path
) -> None:
    populate(site)
    first = collect(make(site, tmp_path).read(Window(None, T0.replace(minute=30)), None, no_known))
    site.spaces["ENG"]["perms"].append(("user", "acc-bob"))  # ENG is read in full, OPS not
    window = Window(T0.replace(minute=30), T0.replace(minute=50))
    second = collect(make(site, tmp_path).read(window, first.final, no_known))
    assert {d.metadata["space"] for d in second.documents} == {"ENG"}
    boundary = next(
        i
        for i in second.items
        if isinstance(i, Checkpoint)
        and json.loads(i.cursor)["at"] == {"space": 1, "full": True, "next": None}
    )
    resumed = collect(make(site, tmp_path).read(window, boundary, no_known))
    assert resumed.documents == [], "OPS is unchanged: ENG's full read must not carry over"
