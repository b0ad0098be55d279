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
from headwater.errors import ConfigError, LeaseLost
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


def test_group_labels_are_shown_and_never_matched(
    tmp_path: Path, manifest_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23 item 14: a group is its directory id; its name and mail are labels only.

    A new group given a deleted group's name and mail inherits none of its documents, and
    ``--explain`` shows each synced group's labels beside its stable principal.
    """
    config = workspace(tmp_path, manifest_url, "a")
    a = state(tmp_path, "a")
    old, new = principal("a", "0f1e"), principal("a", "9c2d")
    a.members = {old: ["u0@x.com"]}
    a.labels = {old: ("Engineering", "eng@x.com")}
    a.docs = {"a-1": Access(groups=(old,))}
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
        assert ws.manifest.groups.groups_of("u0@x.com") == [
            SyncedGroup(old, "a", "Engineering", "eng@x.com")
        ]
        assert visible(ws, "u0@x.com") == {"a-1"}
    runner, app = CliRunner(), register_commands()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("headwater.connectors.load_connector_class", lambda name: TYPES[name])
    args = ["search", "report", "--as", "u0@x.com", "--mode", "keyword", "--explain"]
    data = json.loads(runner.invoke(app, [*args, "--json"]).output)
    assert data["principals"]["synced_groups"] == [
        {"group": old, "source": "a", "display_name": "Engineering", "mail": "eng@x.com"}
    ]
    plain = runner.invoke(app, args)
    assert f"{old} Engineering <eng@x.com> (from a)" in plain.output, plain.output

    # The group is deleted; a new one takes its name and mail address, with u1 in it.
    a.members, a.labels = {new: ["u1@x.com"]}, {new: ("Engineering", "eng@x.com")}
    with Workspace.open(config, connector_types=TYPES) as ws:
        (report,) = ws.sync_permissions(["a"]).sources
        assert report.status == "succeeded"
        assert ws.manifest.groups.labels("a") == {new: ("Engineering", "eng@x.com")}
        assert visible(ws, "u1@x.com") == set()  # the ACL names the old group's id
        assert visible(ws, "u0@x.com") == set()
        # A listing without labels (or a relabelled group) leaves no stale label behind.
        a.labels = {}
        ws.sync_permissions(["a"])
        assert ws.manifest.groups.labels("a") == {}
        assert ws.manifest.groups.groups_of("u1@x.com") == [SyncedGroup(new, "a")]
        a.labels = {new: ("Platform\x07 ", None)}  # control characters never reach a screen
        ws.sync_permissions(["a"])
        assert ws.manifest.groups.groups_of("u1@x.com")[0].label == "Platform"
        ws.remove_source("a")
        assert ws.manifest.groups.labels("a") == {}


def test_nested_groups_are_expanded_transitively_at_search(
    tmp_path: Path, manifest_url: str
) -> None:
    """Issue 31 item 2: a member of a group nested (at any depth) in a document's group
    sees the document; a cycle is followed once; unnesting revokes at the next listing."""
    config = workspace(tmp_path, manifest_url, "a")
    a = state(tmp_path, "a")
    company, eng, platform = (principal("a", n) for n in ("company", "eng", "platform"))
    a.members = {company: [], eng: ["u1@x.com"], platform: ["u0@x.com"]}
    a.nested = {company: [eng], eng: [platform], platform: [company]}  # a cycle back to the top
    a.docs = {"all-hands": Access(groups=(company,)), "eng-only": Access(groups=(eng,))}
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
        assert ws.manifest.groups.subgroups("a") == {
            company: [eng],
            eng: [platform],
            platform: [company],
        }
        assert visible(ws, "u0@x.com") == {"all-hands", "eng-only"}
        assert visible(ws, "u1@x.com") == {"all-hands", "eng-only"}
        expanded = ws.manifest.groups.groups_of("u0@x.com")
        assert [(g.group, g.via) for g in expanded] == [
            (platform, None),
            (eng, platform),  # platform is a member of eng
            (company, eng),  # eng is a member of company (which is in platform: followed once)
        ]
        a.nested = {company: [eng]}  # platform leaves eng (and company leaves platform)
        ws.sync_permissions(["a"])
        assert visible(ws, "u0@x.com") == set()
        assert visible(ws, "u1@x.com") == {"all-hands", "eng-only"}
        ws.remove_source("a")
        assert ws.manifest.groups.subgroups("a") == {}


def test_explain_names_the_group_a_nested_membership_comes_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = workspace(tmp_path, None, "a")
    a = state(tmp_path, "a")
    company, eng = principal("a", "company"), principal("a", "eng")
    a.members, a.nested = {company: [], eng: ["u0@x.com"]}, {company: [eng]}
    a.docs = {"a-1": Access(groups=(company,))}
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
    runner, app = CliRunner(), register_commands()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("headwater.connectors.load_connector_class", lambda name: TYPES[name])
    args = ["search", "report", "--as", "u0@x.com", "--mode", "keyword", "--explain"]
    data = json.loads(runner.invoke(app, [*args, "--json"]).output)
    assert [r["title"] for r in data["results"]] == ["a-1"]
    assert data["principals"]["synced_groups"] == [
        {"group": eng, "source": "a"},
        {"group": company, "source": "a", "via": eng},
    ]
    assert f"{company} (from a, via {eng})" in runner.invoke(app, args).output


def test_aliases_make_one_person_of_several_names_at_search(
    tmp_path: Path, manifest_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31 item 1: ``[identity] aliases`` map each name to one canonical user; a
    search by any name runs as all of them (their principals and their synced groups),
    and changing the table takes effect without reading a source."""
    key = tmp_path.name
    STATE[f"{key}-a"] = a = AclSource()
    eng = principal("a", "eng")
    a.members = {eng: ["ann@corp.onmicrosoft.com"]}
    a.docs = {
        "by-email": Access(users=("ann@corp.com",)),
        "by-tenant-name": Access(users=("ann@corp.onmicrosoft.com",)),
        "by-login": Access(users=("github:ann",)),
        "by-group": Access(groups=(eng,)),
        "bob-only": Access(users=("bob@corp.com",)),
    }
    identity = (
        '[identity]\naliases = { "Ann@Corp.onmicrosoft.com" = "ann@corp.com", '
        '"github:ann" = "ann@corp.com" }\n'
    )
    sources = f'[[source]]\nid = "a"\ntype = "acl"\nname = "{key}-a"\n'
    config = write_config(tmp_path, manifest_url=manifest_url, sources=sources, extra=identity)
    with Workspace.open(config, connector_types=TYPES) as ws:
        ws.sync()
        reads = a.reads
        everything = {"by-email", "by-tenant-name", "by-login", "by-group"}
        for name in ("ann@corp.com", "github:ann", "ANN@corp.onmicrosoft.com"):
            assert visible(ws, name) == everything, name
        caller = ws.principals_of("github:ann")
        assert (caller.user, caller.aliases) == (
            "ann@corp.com",
            ("ann@corp.onmicrosoft.com", "github:ann"),
        )
        assert visible(ws, "bob@corp.com") == {"bob-only"}
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("headwater.connectors.load_connector_class", lambda name: TYPES[name])
    runner, app = CliRunner(), register_commands()
    result = runner.invoke(app, ["whois", "github:ann", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {
        "user": "ann@corp.com",
        "aliases": ["ann@corp.onmicrosoft.com", "github:ann"],
        "alias_origins": {
            "ann@corp.onmicrosoft.com": "[identity] aliases",
            "github:ann": "[identity] aliases",
        },
        "groups": [],
        "synced_groups": [{"group": eng, "source": "a"}],
        "principals": [
            f"group:{eng}",
            "public",
            "user:ann@corp.com",
            "user:ann@corp.onmicrosoft.com",
            "user:github:ann",
        ],
    }
    plain = runner.invoke(app, ["whois", "ann@corp.com"]).output
    assert "aliases ([identity]): ann@corp.onmicrosoft.com, github:ann" in plain
    assert f"group {eng}: from a, direct member" in plain
    # Without the table, each name is only itself: no source is read again.
    config.write_text(config.read_text().replace(identity, ""))
    with Workspace.open(config, connector_types=TYPES) as ws:
        assert visible(ws, "ann@corp.com") == {"by-email"}
        assert visible(ws, "github:ann") == {"by-login"}
    assert a.reads == reads


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('{ "a@x.com" = "b@x.com", "b@x.com" = "c@x.com" }', "which is itself an alias"),
        ('{ "A@x.com" = "b@x.com", "a@x.com" = "c@x.com" }', "is given for both"),
        ('{ "\\u212aim@x.com" = "kim@x.com" }', "compatibility characters"),
    ],
)
def test_bad_aliases_are_config_errors_naming_the_fix(
    tmp_path: Path, table: str, message: str
) -> None:
    config = write_config(
        tmp_path, manifest_url=None, sources="", extra=f"[identity]\naliases = {table}\n"
    )
    with pytest.raises(ConfigError, match=message):
        Workspace.open(config)
