"""Group sync, expansion at search and permission-only sync, end to end.

A test connector (``acl``) holds documents with an ACL each and its own groups, named
per source (``"{source}:group:{name}"``), so ``eng`` of source ``a`` is not ``eng`` of
``b``. Searches pass only the user's email: their groups come from the synced memberships.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from acl_connector import STATE, AclConnector, AclOptions, AclSource
from headwater import Workspace
from headwater.cli.app import register_commands
from headwater.clock import utcnow
from headwater.connectors.base import (
    GroupListing,
    PermissionListing,
)
from headwater.errors import LeaseLost
from headwater.manifest import schema as t
from headwater.manifest.groups import SyncedGroup
from headwater.manifest.store import Manifest
from headwater.pipeline.embed.fake import FakeEmbedder
from headwater.types import Access
from workspace_helpers import write_config

USERS = [f"u{n}@x.com" for n in range(5)]
GROUP_NAMES = ["eng", "ops", "all"]


TYPES = {"acl": AclConnector}


def principal(source: str, name: str) -> str:
    return f"{source}:group:{name}"


def workspace(tmp_path: Path, manifest_url: str | None, *names: str) -> Path:
    key = tmp_path.name
    sources = "".join(f'[[source]]\nid = "{n}"\ntype = "acl"\nname = "{key}-{n}"\n' for n in names)
    for n in names:
        STATE[f"{key}-{n}"] = AclSource()
    return write_config(tmp_path, manifest_url=manifest_url, sources=sources)


def state(tmp_path: Path, name: str) -> AclSource:
    return STATE[f"{tmp_path.name}-{name}"]


def visible(ws: Workspace, user: str) -> set[str]:
    return {r["title"] for r in ws.search("report", user=user, k=500, mode="keyword")}


def expected(sources: dict[str, AclSource], user: str) -> set[str]:
    found = set()
    for src in sources.values():
        for object_id, access in src.docs.items():
            if user in access.users or any(user in src.members.get(g, []) for g in access.groups):
                found.add(object_id)
    return found


def randomize(rng: random.Random, name: str, src: AclSource, docs: int) -> None:
    src.members = {
        principal(name, g): sorted(rng.sample(USERS, rng.randint(0, 3))) for g in GROUP_NAMES
    }
    src.docs = {}
    for n in range(docs):
        groups = tuple(
            sorted(principal(name, g) for g in rng.sample(GROUP_NAMES, rng.randint(0, 2)))
        )
        users = tuple(sorted(rng.sample(USERS, rng.randint(0, 1))))
        src.docs[f"{name}-{n}"] = Access(users=users, groups=groups)


def test_the_test_connector_declares_both_listings() -> None:
    connector = AclConnector(AclOptions(name="probe"))
    assert isinstance(connector, GroupListing)
    assert isinstance(connector, PermissionListing)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_search_by_email_sees_exactly_what_synced_groups_allow(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    config = workspace(tmp_path, None, "a", "b")
    sources = {n: state(tmp_path, n) for n in ("a", "b")}
    for name, src in sources.items():
        randomize(rng, name, src, 12)
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
        for user in USERS:
            assert visible(ws, user) == expected(sources, user), user
        # New memberships and ACLs; one permission sync makes every index agree.
        for name, src in sources.items():
            old_docs = set(src.docs)
            randomize(rng, name, src, 12)
            assert set(src.docs) == old_docs
        ws.sync_permissions()
        for user in USERS:
            assert visible(ws, user) == expected(sources, user), user


def test_eng_of_one_source_is_not_eng_of_another(tmp_path: Path, manifest_url: str) -> None:
    config = workspace(tmp_path, manifest_url, "a", "b")
    a, b = state(tmp_path, "a"), state(tmp_path, "b")
    a.members = {principal("a", "eng"): ["u0@x.com"]}
    b.members = {principal("b", "eng"): ["u1@x.com"]}
    a.docs = {"a-doc": Access(groups=(principal("a", "eng"),))}
    b.docs = {"b-doc": Access(groups=(principal("b", "eng"),))}
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
        assert visible(ws, "U0@x.com") == {"a-doc"}  # the email is normalized
        assert visible(ws, "u1@x.com") == {"b-doc"}
        assert visible(ws, "u2@x.com") == set()
        # A caller's own --group adds to the synced ones, never replaces them.
        found = {
            r["title"]
            for r in ws.search(
                "report", user="u0@x.com", groups=[principal("b", "eng")], mode="keyword"
            )
        }
        assert found == {"a-doc", "b-doc"}


def test_a_revoked_membership_and_acl_go_after_one_permission_sync_without_embedding(
    tmp_path: Path, manifest_url: str
) -> None:
    config = workspace(tmp_path, manifest_url, "a")
    a = state(tmp_path, "a")
    eng = principal("a", "eng")
    a.members = {eng: ["u0@x.com", "u1@x.com"]}
    a.docs = {"a-1": Access(groups=(eng,)), "a-2": Access(users=("u2@x.com",))}
    embedder = FakeEmbedder(32)
    with Workspace.open(config, connector_types=TYPES, embedder=embedder) as ws:
        ws.sync()
        assert visible(ws, "u1@x.com") == {"a-1"}
        assert visible(ws, "u2@x.com") == {"a-2"}
        reads, calls = a.reads, embedder.calls
        a.members = {eng: ["u0@x.com"]}  # u1 leaves eng
        a.docs["a-2"] = Access(users=("u3@x.com",))  # u2 loses a-2, u3 gains it
        result = ws.sync_permissions(["a"])
        (report,) = result.sources
        assert (report.status, report.checked, report.changed) == ("succeeded", 2, 1)
        assert report.groups is not None and report.groups.memberships == 1
        assert a.reads == reads  # no content read
        assert embedder.calls == calls  # nothing embedded
        assert visible(ws, "u1@x.com") == set()
        assert visible(ws, "u0@x.com") == {"a-1"}
        assert visible(ws, "u2@x.com") == set()
        assert visible(ws, "u3@x.com") == {"a-2"}
        record = ws.manifest.document_by_object("a", "a-2")
        assert record is not None and record.revision == 2  # an ACL-only revision
        assert embedder.calls == calls


def test_source_remove_forgets_its_memberships(tmp_path: Path) -> None:
    config = workspace(tmp_path, None, "a", "b")
    state(tmp_path, "a").members = {principal("a", "eng"): ["u0@x.com"]}
    state(tmp_path, "b").members = {principal("b", "eng"): ["u0@x.com"]}
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
        assert {g.source_id for g in ws.manifest.groups.groups_of("u0@x.com")} == {"a", "b"}
        ws.remove_source("b")
        assert ws.manifest.groups.groups_of("u0@x.com") == [SyncedGroup("a:group:eng", "a")]
        assert ws.manifest.groups.members("b") == {}


def test_a_failed_group_listing_keeps_the_last_memberships(tmp_path: Path) -> None:
    config = workspace(tmp_path, None, "a")
    a = state(tmp_path, "a")
    a.members = {principal("a", "eng"): ["u0@x.com"]}
    a.docs = {"a-1": Access(groups=(principal("a", "eng"),))}
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
        a.groups_fail = True
        (report,) = ws.sync_permissions().sources
        assert report.status == "failed"
        assert report.error is not None and "the directory is down" in report.error
        assert visible(ws, "u0@x.com") == {"a-1"}


def test_search_explain_shows_the_principals_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = workspace(tmp_path, None, "a", "b")
    a, b = state(tmp_path, "a"), state(tmp_path, "b")
    a.members = {principal("a", "eng"): ["u0@x.com"]}
    b.members = {principal("b", "eng"): ["u0@x.com"], principal("b", "ops"): ["u1@x.com"]}
    a.docs = {"a-1": Access(groups=(principal("a", "eng"),))}
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
    runner, app = CliRunner(), register_commands()  # import every command module first
    monkeypatch.chdir(tmp_path)
    # Config validation resolves the test's connector type; patched only for this test.
    monkeypatch.setattr("headwater.connectors.load_connector_class", lambda name: TYPES[name])
    args = ["search", "report", "--as", "u0@x.com", "--group", "extra", "--mode", "keyword"]
    result = runner.invoke(app, [*args, "--json", "--explain"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [r["title"] for r in data["results"]] == ["a-1"]
    assert data["principals"] == {
        "user": "u0@x.com",
        "groups": ["extra"],
        "synced_groups": [
            {"group": "a:group:eng", "source": "a"},
            {"group": "b:group:eng", "source": "b"},
        ],
        "principals": [
            "group:a:group:eng",
            "group:b:group:eng",
            "group:extra",
            "public",
            "user:u0@x.com",
        ],
    }
    plain = runner.invoke(app, [*args, "--explain"])
    assert plain.exit_code == 0, plain.output
    assert "a:group:eng (from a)" in plain.output and "b:group:eng (from b)" in plain.output
    assert "principals" not in json.loads(runner.invoke(app, [*args, "--json"]).output)


def test_cli_sync_permissions_reports_per_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = workspace(tmp_path, None, "a")
    a = state(tmp_path, "a")
    a.members = {principal("a", "eng"): ["u0@x.com"]}
    a.docs = {"a-1": Access(groups=(principal("a", "eng"),))}
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
    reads = a.reads
    a.docs["a-1"] = Access(users=("u1@x.com",))
    runner, app = CliRunner(), register_commands()  # import every command module first
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("headwater.connectors.load_connector_class", lambda name: TYPES[name])
    monkeypatch.setattr("headwater.runtime.sources.load_connector_class", lambda name: TYPES[name])
    result = runner.invoke(app, ["sync", "a", "--permissions", "--json"])
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.output)["sources"]
    assert (report["status"], report["checked"], report["changed"]) == ("succeeded", 1, 1)
    assert report["groups"]["memberships"] == 1
    assert a.reads == reads
    with Workspace.open(config, connector_types=TYPES) as ws:
        assert visible(ws, "u0@x.com") == set()
        assert visible(ws, "u1@x.com") == {"a-1"}


def test_a_group_deleted_in_the_source_is_gone_after_a_permission_sync(
    tmp_path: Path, manifest_url: str
) -> None:
    config = workspace(tmp_path, manifest_url, "a")
    a = state(tmp_path, "a")
    eng, ops = principal("a", "eng"), principal("a", "ops")
    a.members = {eng: ["u0@x.com"], ops: ["u1@x.com"]}
    a.docs = {"a-1": Access(groups=(eng,)), "a-2": Access(groups=(ops,))}
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
        assert visible(ws, "u1@x.com") == {"a-2"}
        del a.members[ops]  # the whole group is deleted in the source
        (report,) = ws.sync_permissions(["a"]).sources
        assert report.status == "succeeded" and report.groups is not None
        assert (report.groups.groups, report.groups.memberships) == (1, 1)
        assert ws.manifest.groups.members("a") == {eng: ["u0@x.com"]}
        assert ws.manifest.groups.groups_of("u1@x.com") == []
        assert visible(ws, "u1@x.com") == set()
        assert visible(ws, "u0@x.com") == {"a-1"}


def test_a_stale_owner_cannot_replace_the_group_listing(manifest_url: str) -> None:
    manifest = Manifest.open(manifest_url)
    try:
        manifest.ensure_source("a", "acl")
        leases, eng = manifest.runs.leases, principal("a", "eng")
        stale = leases.acquire("a", "host-a:1", 60)
        manifest.groups.replace("a", [(eng, ["u0@x.com"])], lease=stale)
        with manifest.engine.begin() as conn:  # time passes: the lease expires unrenewed
            conn.execute(
                update(t.leases)
                .where(t.leases.c.source_id == "a")
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
        fresh = leases.acquire("a", "host-b:2", 60)
        with pytest.raises(LeaseLost, match="taken over"):
            manifest.groups.replace("a", [(eng, ["u9@x.com"])], lease=stale)
        assert manifest.groups.members("a") == {eng: ["u0@x.com"]}  # nothing written
        manifest.groups.replace("a", [(eng, ["u1@x.com"])], lease=fresh)
        assert manifest.groups.members("a") == {eng: ["u1@x.com"]}
    finally:
        manifest.close()


def test_a_lookalike_in_a_permission_listing_withholds_the_document(
    tmp_path: Path, manifest_url: str
) -> None:
    config = workspace(tmp_path, manifest_url, "a")
    a = state(tmp_path, "a")
    a.docs = {"a-1": Access(users=("u0@x.com",)), "a-2": Access(users=("u1@x.com",))}
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
        assert visible(ws, "u0@x.com") == {"a-1"}
        a.docs["a-1"] = Access(users=("u\uff10@x.com",))  # fullwidth 0: NFKC reads u0
        a.docs["a-2"] = Access(users=("u2@x.com",))  # u1 revoked in the same listing
        (report,) = ws.sync_permissions(["a"]).sources
        assert report.status == "succeeded" and report.changed == 2, report
        (rejected,) = report.rejected
        assert rejected.startswith("a-1: ") and "compatibility characters" in rejected
        assert visible(ws, "u0@x.com") == set()  # withheld, not served under the old ACL
        assert visible(ws, "u1@x.com") == set() and visible(ws, "u2@x.com") == {"a-2"}
        record = ws.manifest.document_by_object("a", "a-1")
        assert record is not None and record.acl == ()
