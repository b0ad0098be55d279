"""The gitlab connector against the fake API: ACL mapping, nested groups, validate's
messages, a 429 storm, an ACL that cannot be read, and listings that resume or relist."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from gitlab_support import ACME, ENG, OPS, SECRET, SITE, make, populate

from fakes.gitlab import FakeGitlab
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError
from headwater.types import Checkpoint, Failure, SourceDocument, Window

EVERYTHING = Window(None, FAR_FUTURE)


def _docs(gl: FakeGitlab, tmp_path: Path, **kw: object) -> dict[str, SourceDocument]:
    result = collect(make(gl, tmp_path, **kw).read(EVERYTHING, None, no_known))
    return {d.object_id: d for d in result.documents}


def group(gid: int) -> str:
    return f"gl:group:group:{gid}"


def test_acl_maps_visibility_members_and_groups(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    docs = _docs(gl, tmp_path, include_wiki=True)
    assert sorted(docs) == [
        "acme/eng/secret/-/blob/notes.md",
        "acme/eng/secret/-/blob/src/a.py",
        "acme/eng/secret/-/issues/1",
        "acme/site/-/blob/README.md",
        "acme/site/-/blob/docs/guide.md",
        "acme/site/-/issues/1",
        "acme/site/-/issues/2",
        "acme/site/-/merge_requests/1",
        "acme/site/-/wikis/home",
    ]
    assert all(d.access is not None and d.access.public for o, d in docs.items() if SITE in o)
    secret = docs[f"{SECRET}/-/issues/1"].access
    assert secret is not None and not secret.public
    # ann is a Developer; dan a Guest (Guests cannot read code): left out. The project's
    # namespace group eng reads it; ops is invited as Guest only: left out.
    assert secret.users == ("gitlab:ann",)  # by username, never the public email
    assert secret.groups == (group(ENG),)
    closed = docs[f"{SITE}/-/issues/2"]
    assert closed.metadata["state"] == "closed"  # closed is not deleted


def test_internal_projects_are_private_unless_configured(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    gl.projects[SITE].visibility = "internal"
    access = _docs(gl, tmp_path)[f"{SITE}/-/issues/1"].access
    assert access is not None and not access.public and access.groups == (group(ACME),)
    again = _docs(gl, tmp_path, internal_as_public=True)[f"{SITE}/-/issues/1"].access
    assert again is not None and again.public


def test_an_invited_group_at_reporter_reads(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    gl.projects[SECRET].shares[OPS] = 20
    access = _docs(gl, tmp_path)[f"{SECRET}/-/issues/1"].access
    assert access is not None and access.groups == (group(ENG), group(OPS))


def test_groups_list_members_and_nest_parents(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    gl.projects[SECRET].shares[OPS] = 30
    listed = {g.principal: g for g in make(gl, tmp_path).groups()}
    assert set(listed) == {group(ACME), group(ENG), group(OPS)}
    eng = listed[group(ENG)]
    # cat is a Reporter, bob a Maintainer (with no public email: named all the same)
    assert list(eng.members) == ["gitlab:bob", "gitlab:cat"]
    assert eng.subgroups == (group(ACME),), "acme's members inherit into eng"
    assert eng.display_name == "acme/eng"
    acme = listed[group(ACME)]
    assert list(acme.members) == ["gitlab:eve"] and acme.subgroups == ()  # dan: Guest
    assert list(listed[group(OPS)].members) == ["gitlab:ann"]


def test_members_email_in_an_administrators_view(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    gl.admin_view = True
    gl.users[2]["email"] = "bob@corp.example"
    listed = {g.principal: g for g in make(gl, tmp_path).groups()}
    # the account's email, as the instance records it, names the member too
    members = sorted(listed[group(ENG)].members)
    assert members == ["bob@corp.example", "gitlab:bob", "gitlab:cat"]


def test_validate_names_token_scope_project_and_branch(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    make(gl, tmp_path).validate()
    with pytest.raises(CredentialError, match=r"401.*`token`"):
        make(gl, tmp_path, token="glpat-wrong").validate()
    gl.scopes = {"read_user"}
    with pytest.raises(CredentialError, match=r"insufficient_scope.*`read_api`"):
        make(gl, tmp_path).validate()
    gl.scopes = {"read_api"}
    with pytest.raises(ConfigError, match=r"`projects`: no project 'acme/nope'"):
        make(gl, tmp_path, projects=["acme/nope"]).validate()
    gl.hidden.add(SECRET)
    with pytest.raises(ConfigError, match=r"no project 'acme/eng/secret' visible"):
        make(gl, tmp_path).validate()
    gl.hidden.clear()
    with pytest.raises(ConfigError, match=r"`branch`: project 'acme/site' has no branch 'dev'"):
        make(gl, tmp_path, branch="dev").validate()


def test_a_429_storm_is_waited_out(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    expected = set(_docs(gl, tmp_path))
    gl.clear_log()
    gl.rate_limited = 12
    connector = make(gl, tmp_path, retry_attempts=20)
    got = {d.object_id for d in collect(connector.read(EVERYTHING, None, no_known)).documents}
    assert got == expected
    assert sum(1 for c in gl.log if c.status == 429) == 12


def test_retry_after_is_honoured(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    gl.rate_limited, gl.retry_after = 1, "1"
    connector = make(gl, tmp_path, retry_max_wait=5.0, projects=[SITE], include_files=False)
    began = time.monotonic()
    docs = collect(connector.read(EVERYTHING, None, no_known)).documents
    assert time.monotonic() - began >= 1.0, "Retry-After was not waited out"
    assert len(docs) == 3 and [c.status for c in gl.log[:2]] == [429, 200]


def test_an_unreadable_acl_fails_the_project_closed(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    gl.broken.add(f"/api/v4/projects/{SECRET.replace('/', '%2F')}/members")
    result = collect(make(gl, tmp_path, retry_attempts=2).read(EVERYTHING, None, no_known))
    assert not any(SECRET in d.object_id for d in result.documents)
    failures = [i for i in result.items if isinstance(i, Failure)]
    assert [(f.object_id, f.prefix, f.error_class) for f in failures] == [
        (f"{SECRET}/-/", True, "acl_unavailable")
    ]
    assert failures[0].covers(f"{SECRET}/-/blob/notes.md")
    assert not failures[0].covers(f"{SITE}/-/blob/README.md")


def test_a_gone_commit_relists_the_tree(gl: FakeGitlab, tmp_path: Path) -> None:
    """The saved commit was force-pushed away and collected: compare answers 404, so the
    branch's tree is listed again rather than trusting a diff that cannot be had."""
    populate(gl)
    first = collect(make(gl, tmp_path).read(EVERYTHING, None, no_known))
    assert first.final is not None
    project = gl.projects[SITE]
    old = project.head
    gl.commit(SITE, {"docs/guide.md": b"# Guide\nNew steps"})
    del project.commits[old]
    gl.clear_log()
    again = collect(make(gl, tmp_path).read(EVERYTHING, first.final, no_known))
    compares = [c.status for c in gl.log if c.path.endswith("/repository/compare")]
    assert compares == [404]
    files = {
        d.object_id for d in again.documents if "/-/blob/" in d.object_id and SITE in d.object_id
    }
    assert files == {f"{SITE}/-/blob/README.md", f"{SITE}/-/blob/docs/guide.md"}


def test_an_expired_page_token_restarts_the_tree_listing(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    full = collect(make(gl, tmp_path).read(EVERYTHING, None, no_known))
    mid = next(
        i for i in full.items
        if isinstance(i, Checkpoint) and "page_token" in json.loads(i.cursor)["at"].get("next", "")
    )  # fmt: skip
    gl.expire_page_tokens()
    gl.clear_log()
    resumed = collect(make(gl, tmp_path).read(EVERYTHING, mid, no_known))
    trees = [c.status for c in gl.log if c.path.endswith("/repository/tree")]
    assert trees[0] == 400 and 200 in trees
    ids = [d.object_id for d in resumed.documents]
    assert f"{SITE}/-/blob/README.md" in ids, "the listing restarted from the first page"
    assert len(ids) == len(set(ids))
