"""The github connector against the fake: ACLs, ETags and 304, text, rate limits, validate()."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from github_support import PUBLIC, SECRET, T0, make, populate

from fakes.github import FakeGithub
from headwater.connectors.github._client import GithubClient
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError, ItemError, TransientError
from headwater.retry import RetryPolicy
from headwater.types import Access, Window

ALL = Window(None, FAR_FUTURE)


def test_access_from_visibility_collaborators_and_teams(gh: FakeGithub, tmp_path: Path) -> None:
    populate(gh)
    docs = {d.object_id: d for d in collect(make(gh, tmp_path).read(ALL, None, no_known)).documents}
    assert set(docs) == {f"{PUBLIC}/issues/1", f"{PUBLIC}/pulls/2", f"{SECRET}/issues/1",
                         f"{SECRET}/issues/2"}  # fmt: skip
    assert docs[f"{PUBLIC}/pulls/2"].access == Access(public=True)
    # users by login, never by their public email (bob keeps none, ann shows one): a
    # principal of its own kind, mapped to a person by [identity] aliases at search time;
    # the team is a group principal, named by its stable id
    assert docs[f"{SECRET}/issues/1"].access == Access(
        users=("github:ann", "github:bob"),
        groups=(f"gh:group:team:{gh.team_id('octo/core')}",),
    )
    assert docs[f"{PUBLIC}/pulls/2"].metadata["kind"] == "pull_request"


def test_a_private_repo_of_a_user_is_read_by_its_collaborators(
    gh: FakeGithub, tmp_path: Path
) -> None:
    """A user's repository has no teams: its teams listing answers 404."""
    gh.users.update({"ann": "Ann@Example.com"})
    gh.add_repo("ann/notes", private=True, collaborators=["ann"], user_owned=True)
    gh.add("ann/notes", "Todo", "Buy milk")
    connector = make(gh, tmp_path, repos=["ann/notes"])
    (doc,) = collect(connector.read(ALL, None, no_known)).documents
    assert doc.access == Access(users=("github:ann",))
    assert list(connector.groups()) == []


def test_fetch_has_comments_and_review_comments(gh: FakeGithub, tmp_path: Path) -> None:
    populate(gh)
    text = make(gh, tmp_path).fetch(f"{PUBLIC}/pulls/2").decode()
    assert text.startswith("# Fix the typo\n\nReplaces teh")
    assert "## ann on index.html" in text and "Also fix the title" in text
    assert "Confirmed" in make(gh, tmp_path).fetch(f"{PUBLIC}/issues/1").decode()


def test_an_unchanged_repo_answers_304_and_downloads_nothing(
    gh: FakeGithub, tmp_path: Path
) -> None:
    populate(gh)
    connector = lambda: make(gh, tmp_path, page_size=10)  # noqa: E731
    first = collect(connector().read(Window(None, T0.replace(minute=30)), None, no_known))
    window = Window(T0.replace(minute=30), T0.replace(minute=50))
    second = collect(connector().read(window, first.final, no_known))
    third = collect(connector().read(window, second.final, no_known))
    assert third.documents == [], "nothing changed"
    listings = [c for c in gh.log if c.path.endswith("/issues")]
    assert [c.status for c in listings[-2:]] == [304, 304], [c.status for c in listings]
    assert listings[-1].query["since"] == "2024-05-01T09:04:00Z"
    assert gh.content_reads() == 0, "the listing never downloads comments"
    gh.touch(SECRET, 1, body="Rotate every month")
    fourth = collect(connector().read(window, third.final, no_known))
    # the change, and the newest item again (``since`` is inclusive; the version gate skips it)
    assert [d.object_id for d in fourth.documents] == [f"{SECRET}/issues/2", f"{SECRET}/issues/1"]


def test_a_bare_window_is_exact(gh: FakeGithub, tmp_path: Path) -> None:
    populate(gh)
    got = collect(make(gh, tmp_path).read(Window(T0.replace(minute=2), T0.replace(minute=3)),
                                          None, no_known))  # fmt: skip
    assert [d.object_id for d in got.documents] == [f"{SECRET}/issues/1"]


def test_pull_requests_can_be_left_out(gh: FakeGithub, tmp_path: Path) -> None:
    populate(gh)
    connector = make(gh, tmp_path, include_pull_requests=False)
    ids = [d.object_id for d in collect(connector.read(ALL, None, no_known)).documents]
    assert f"{PUBLIC}/pulls/2" not in ids and len(ids) == 3
    assert set(connector.enumerate()) == set(ids)


def test_rate_limits_are_waited_out(gh: FakeGithub, tmp_path: Path) -> None:
    populate(gh)
    gh.throttle[f"/repos/{PUBLIC}/issues"] = 1  # secondary limit: 429 + Retry-After: 1
    started = time.monotonic()
    assert len(collect(make(gh, tmp_path).read(ALL, None, no_known)).documents) == 4
    assert time.monotonic() - started >= 1.0
    gh.primary_limited = 1  # primary limit: 403 + x-ratelimit-remaining: 0 + reset
    assert len(list(make(gh, tmp_path).enumerate())) == 4
    statuses = [c.status for c in gh.log if c.path == f"/repos/{PUBLIC}/issues"]
    assert statuses[statuses.index(403) + 1] == 200, statuses


def test_a_secondary_limit_without_headers_waits_a_minute(gh: FakeGithub) -> None:
    """A 403 naming a secondary rate limit, with no retry-after: wait, not a credential error."""
    gh.add_repo(PUBLIC)
    client = GithubClient(gh.url, token=gh.token, timeout=5.0, user_agent="test",
                          policy=RetryPolicy(attempts=1))  # fmt: skip
    gh.secondary_limited = 1
    with pytest.raises(TransientError, match="secondary rate limit") as caught:
        client.page(f"/repos/{PUBLIC}/issues", permission="Issues: read")
    assert caught.value.retry_after == 60.0
    assert client.page(f"/repos/{PUBLIC}/issues", permission="Issues: read").status == 200


def test_an_issue_deleted_before_its_fetch_is_an_item_error(gh: FakeGithub, tmp_path: Path) -> None:
    """GitHub answers 410 Gone for an issue deleted from a repo the token reads."""
    populate(gh)
    gh.gone.add((SECRET, 2))
    with pytest.raises(ItemError, match="gone") as caught:
        make(gh, tmp_path).fetch(f"{SECRET}/issues/2")
    assert caught.value.error_class == "not_found"


def test_groups_lists_team_members(gh: FakeGithub, tmp_path: Path) -> None:
    populate(gh)
    listed = list(make(gh, tmp_path).groups())
    assert listed == [(f"gh:group:team:{gh.team_id('octo/core')}", ["github:ann", "github:cat"])]
    assert [g.display_name for g in listed] == ["octo/core"]  # org/team name: a label


def test_a_renamed_team_keeps_its_principal_and_a_new_team_with_its_old_slug_gets_none(
    gh: FakeGithub, tmp_path: Path
) -> None:
    populate(gh)
    core = f"gh:group:team:{gh.team_id('octo/core')}"
    gh.team_ids["octo/platform"] = gh.team_ids.pop("octo/core")  # core is renamed
    gh.teams["octo/platform"] = gh.teams.pop("octo/core")
    gh.repos[SECRET]["teams"] = ["platform"]
    gh.teams["octo/core"] = ["bob"]  # a new team takes the old slug, with no access
    connector = make(gh, tmp_path)
    docs = collect(connector.read(ALL, None, no_known)).documents
    secret = next(d for d in docs if d.object_id == f"{SECRET}/issues/1")
    assert secret.access is not None and secret.access.groups == (core,)
    assert list(connector.groups()) == [(core, ["github:ann", "github:cat"])]


def test_validate_names_token_permission_and_repo(gh: FakeGithub, tmp_path: Path) -> None:
    populate(gh)
    make(gh, tmp_path).validate()
    with pytest.raises(CredentialError, match="`token`"):
        make(gh, tmp_path, token="wrong").validate()
    with pytest.raises(ConfigError, match="'octo/nope'"):
        make(gh, tmp_path, repos=[PUBLIC, "octo/nope"]).validate()
    gh.deny.add(f"/repos/{SECRET}/issues")
    with pytest.raises(CredentialError, match="`Issues: read`"):
        make(gh, tmp_path).validate()
    with pytest.raises(TransientError, match="`base_url`"):
        make(gh, tmp_path, base_url="http://127.0.0.1:9").validate()


def test_enumerate_reuses_unchanged_pages_by_etag(gh: FakeGithub, tmp_path: Path) -> None:
    populate(gh)
    ids = {f"{PUBLIC}/issues/1", f"{PUBLIC}/pulls/2", f"{SECRET}/issues/1", f"{SECRET}/issues/2"}
    assert set(make(gh, tmp_path).enumerate()) == ids
    gh.clear_log()
    assert set(make(gh, tmp_path).enumerate()) == ids
    assert [c.status for c in gh.log] == [304, 200, 304, 200], "only last pages are re-read"
    added = gh.add(SECRET, "Incident 8", "Disk full")  # a new page after a full last page
    del gh.repos[PUBLIC]["items"][1]
    assert set(make(gh, tmp_path).enumerate()) == (ids - {f"{PUBLIC}/issues/1"}) | {
        f"{SECRET}/issues/{added}"
    }


def test_identity_kind_names_another_instances_logins(gh: FakeGithub, tmp_path: Path) -> None:
    """A GitHub Enterprise Server's logins are not github.com's: its own prefix."""
    populate(gh)
    docs = collect(make(gh, tmp_path, identity_kind="ghe").read(ALL, None, no_known)).documents
    secret = next(d for d in docs if d.object_id == f"{SECRET}/issues/1")
    assert secret.access is not None and secret.access.users == ("ghe:ann", "ghe:bob")
    with pytest.raises(ValueError, match="identity_kind"):
        make(gh, tmp_path, identity_kind="GH:E")
