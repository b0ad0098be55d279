"""The sharepoint connector under the real sync runner, against the fake Graph: first
sync, a no-op re-sync that downloads nothing, an edit/add/delete/permission change through
delta, an expired deltaLink (410) recovered by a full resync, a delta that breaks half
way, and a 429 waited out.
"""

from __future__ import annotations

import time
from pathlib import Path

from fakes.sharepoint import SITE, TOKEN, FakeGraph
from headwater import Workspace
from headwater.connectors.sharepoint import SharepointConnector


def _workspace(url: str, tmp_path: Path) -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "sp"\ntype = "sharepoint"\nbase_url = "{url}/v1.0"\n'
        f'token = "{TOKEN}"\nsite = "{SITE}"\n'
        "page_size = 2\nretry_attempts = 3\nretry_initial_wait = 0.01\n"
        "prune_max_fraction = 0.9\n"
    )
    return Workspace.open(config, connector_types={"sharepoint": SharepointConnector})


def _acl(ws: Workspace, object_id: str) -> tuple[str, ...]:
    record = ws.manifest.document_by_object("sp", object_id)
    assert record is not None, object_id
    return record.acl


def test_sync_edit_add_delete_and_permission_change(graph: FakeGraph, tmp_path: Path) -> None:
    with _workspace(graph.url, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new, first.fetched) == ("succeeded", 4, 4), first
        assert _acl(ws, "lib1/i1") == ("user:ann@contoso.com",)
        downloads = graph.count("/download/")
        again = ws.sync(index=False).runs[0]
        assert (again.status, again.fetched, again.counts.new, again.counts.changed) == (
            "succeeded", 0, 0, 0,
        ), again  # fmt: skip
        assert graph.count("/download/") == downloads, "a no-op re-sync must download nothing"
        graph.put("lib1", "i1", "a.txt", "Alpha, edited and longer.\n")
        graph.put("lib2", "j3", "new.txt", "A new policy.\n")
        graph.delete("lib1", "i2")
        graph.share("lib1", "i3", [
            {"id": "p1", "roles": ["read"], "grantedToV2": {"group": {"id": "g1",
             "email": "Eng@contoso.com"}}},
            {"id": "p2", "roles": ["read"], "grantedToV2": {"siteGroup": {"id": "7",
             "displayName": "Team Members"}}},
            {"id": "p3", "roles": ["read"], "link": {"scope": "organization"}},
            {"id": "p4", "roles": ["read"], "link": {"scope": "users"},
             "grantedToIdentitiesV2": [{"user": {"email": "Cy@contoso.com"}}]},
        ])  # fmt: skip
        third = ws.sync(index=False).runs[0]
        c = third.counts
        assert (c.new, c.changed, c.deleted) == (1, 2, 1), c
        assert third.fetched == 2, "a permission change must not download the file"
        assert _acl(ws, "lib1/i3") == (
            "group:sp:group:g1", "group:sp:group:site:7",
            "group:sp:organization", "user:cy@contoso.com",
        )  # fmt: skip
        graph.share("lib1", "i3", [{"id": "p5", "link": {"scope": "anonymous"}}])
        fourth = ws.sync(index=False).runs[0]
        assert (fourth.counts.changed, fourth.fetched) == (1, 0), fourth
        assert _acl(ws, "lib1/i3") == ("public",)


def test_an_expired_delta_link_recovers_by_full_resync(graph: FakeGraph, tmp_path: Path) -> None:
    with _workspace(graph.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        graph.put("lib1", "i9", "late.txt", "Added while the token expired.\n")
        graph.delete("lib2", "j1")
        graph.expire_tokens()  # every saved deltaLink answers 410 resyncRequired
        run = ws.sync(index=False).runs[0]
        assert run.status == "succeeded", run
        assert (run.counts.new, run.counts.deleted) == (1, 1), run.counts
        assert sum(1 for r in graph.log if r.status == 410) == 2  # one per library
        assert ws.manifest.count_documents("sp", "active") == 4
        graph.put("lib2", "j4", "after.txt", "Changes flow again.\n")
        calm = ws.sync(index=False).runs[0]
        assert (calm.counts.new, calm.fetched) == (1, 1), calm


def test_permissions_in_the_deprecated_shape_and_claims_login_names_are_read(
    graph: FakeGraph, tmp_path: Path
) -> None:
    """Permissions that carry only ``grantedTo``/``grantedToIdentities`` (the deprecated
    identitySet shape), and a site user named only by its claims ``loginName``."""
    graph.share("lib1", "i1", [
        {"id": "p1", "roles": ["read"], "grantedTo": {"user": {"id": "u1",
         "displayName": "Ann", "email": "Ann@contoso.com"}}},
        {"id": "p2", "roles": ["read"], "link": {"scope": "users", "type": "view"},
         "grantedToIdentities": [{"user": {"id": "u3", "email": "cy@contoso.com"}}]},
        {"id": "p3", "roles": ["write"], "grantedToV2": {"siteUser": {"id": "7",
         "displayName": "Dee", "loginName": "i:0#.f|membership|Dee@contoso.com"}}},
    ])  # fmt: skip
    with _workspace(graph.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        assert _acl(ws, "lib1/i1") == (
            "user:ann@contoso.com", "user:cy@contoso.com", "user:dee@contoso.com",
        )  # fmt: skip


def test_a_delta_that_breaks_half_way_deletes_nothing(graph: FakeGraph, tmp_path: Path) -> None:
    with _workspace(graph.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        graph.expire_tokens()
        graph.broken = True  # the resync's second page answers 500, every time
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.deleted) == ("failed", 0), run
        assert ws.manifest.count_documents("sp", "active") == 4
        graph.broken = False
        healed = ws.sync(index=False).runs[0]
        assert (healed.status, healed.counts.deleted) == ("succeeded", 0), healed


def test_a_429_with_retry_after_is_waited_out(graph: FakeGraph, tmp_path: Path) -> None:
    with _workspace(graph.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        graph.put("lib1", "i1", "a.txt", "Edited behind a throttle.\n")
        graph.fail("/v1.0/drives/lib1/root/delta", 429, graph_body(), Retry_After="1")
        started = time.monotonic()
        run = ws.sync(index=False).runs[0]
        assert time.monotonic() - started >= 1.0, "Retry-After: 1 was not honoured"
        assert (run.status, run.counts.changed) == ("succeeded", 1), run
        statuses = [r.status for r in graph.log if r.path == "/v1.0/drives/lib1/root/delta"]
        assert statuses[statuses.index(429) + 1] == 200, statuses  # the retry succeeded


def graph_body() -> dict[str, object]:
    return {"error": {"code": "TooManyRequests", "message": "Please retry after"}}


def test_a_permission_sync_changes_acls_and_groups_without_downloading(
    graph: FakeGraph, tmp_path: Path
) -> None:
    graph.groups["g1"] = ("Eng@contoso.com", ["Bob@contoso.com"])
    with _workspace(graph.url, tmp_path) as ws:
        ws.sync()
        assert ws.search("alpha", user="bob@contoso.com", mode="keyword") == []
        downloads = graph.count("/download/")
        graph.share("lib1", "i1", [
            {"id": "p1", "roles": ["read"], "grantedToV2": {"group": {"id": "g1",
             "email": "Eng@contoso.com"}}},
        ])  # fmt: skip
        (report,) = ws.sync_permissions(["sp"]).sources
        assert (report.status, report.checked, report.changed) == ("succeeded", 4, 1), report
        assert report.groups is not None and report.groups.memberships == 1
        assert graph.count("/download/") == downloads, "a permission sync downloads nothing"
        assert _acl(ws, "lib1/i1") == ("group:sp:group:g1",)
        hits = ws.search("alpha", user="bob@contoso.com", mode="keyword")  # via synced eng
        assert [h["locator"].rsplit("/", 1)[-1] for h in hits] == ["a.txt"], hits


def test_a_new_group_given_an_old_groups_mail_inherits_none_of_its_files(
    graph: FakeGraph, tmp_path: Path
) -> None:
    """Groups are named by object id: a mail address can be changed and given to another."""
    graph.groups["g1"] = ("Eng@contoso.com", ["Bob@contoso.com"])
    graph.share("lib1", "i1", [
        {"id": "p1", "roles": ["read"], "grantedToV2": {"group": {"id": "g1",
         "email": "Eng@contoso.com", "displayName": "Engineering"}}},
    ])  # fmt: skip
    with _workspace(graph.url, tmp_path) as ws:
        ws.sync()
        assert _acl(ws, "lib1/i1") == ("group:sp:group:g1",)
        assert len(ws.search("alpha", user="bob@contoso.com", mode="keyword")) == 1
        # g1 is deleted; a new group g9 is given its address (the file still names g1).
        graph.groups = {"g9": ("Eng@contoso.com", ["Eve@contoso.com"])}
        ws.sync()  # a content sync lists the groups again
        assert ws.manifest.groups.members("sp") == {"sp:group:g9": ["eve@contoso.com"]}
        assert ws.search("alpha", user="eve@contoso.com", mode="keyword") == []
        assert ws.search("alpha", user="bob@contoso.com", mode="keyword") == []
