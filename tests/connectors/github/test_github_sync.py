"""The github connector under the real sync runner, against the fake API: a no-op re-sync
downloads no text (and its listing answers 304); an edit, a comment, an add, a delete and a
visibility change arrive; a listing failing half way deletes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from github_support import PUBLIC, SECRET, populate, workspace

from fakes.github import FakeGithub


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, gh: FakeGithub) -> None:
    monkeypatch.setenv("HW_TEST_GITHUB_TOKEN", gh.token)  # `${ENV}` in headwater.toml


def test_sync_edit_comment_add_delete_and_visibility_change(gh: FakeGithub, tmp_path: Path) -> None:
    populate(gh)
    with workspace(gh, tmp_path, 'window_overlap = "0s"\n') as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new, first.fetched) == ("succeeded", 4, 4)
        reads = gh.content_reads()
        ws.sync(index=False)
        gh.clear_log()
        again = ws.sync(index=False).runs[0]
        assert again.fetched == 0 and gh.content_reads() == 0, again.counts
        assert gh.content_reads() == 0 < reads
        listed = [c.status for c in gh.log if c.query.get("sort") == "updated"]
        assert listed == [304, 304], "an unchanged repo's listing must answer 304"
        gh.touch(PUBLIC, 1, body="The word 'teh', twice")
        gh.repos[SECRET]["items"][2].comments.append(("ann", "Fixed by a TTL change"))
        gh.touch(SECRET, 2)
        added = gh.add(SECRET, "Incident 8", "Disk full")
        del gh.repos[PUBLIC]["items"][2]
        third = ws.sync(index=False).runs[0]
        c = third.counts
        assert (c.new, c.changed, c.deleted) == (1, 2, 1), c
        assert ws.manifest.document_by_object("gh", f"{SECRET}/issues/{added}") is not None
        gh.repos[SECRET]["private"] = False  # the repo is made public
        fourth = ws.sync(index=False).runs[0]
        assert (fourth.counts.changed, fourth.fetched) == (3, 0), fourth.counts
        record = ws.manifest.document_by_object("gh", f"{SECRET}/issues/1")
        assert record is not None and record.acl == ("public",)


def test_a_listing_failing_half_way_deletes_nothing(gh: FakeGithub, tmp_path: Path) -> None:
    populate(gh)
    with workspace(gh, tmp_path, "page_size = 1\nmax_attempts = 2\n") as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        del gh.repos[PUBLIC]["items"][1]
        gh.broken.add(f"/repos/{SECRET}/issues")  # the second repo's listing answers 500
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 0 and run.status != "succeeded", run
        assert ws.manifest.count_documents("gh", "active") == 4


def test_a_collaborator_with_a_padded_login_fails_only_that_repos_items(
    gh: FakeGithub, tmp_path: Path
) -> None:
    populate(gh)
    with workspace(gh, tmp_path, 'window_overlap = "0s"\n') as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        secret = ws.manifest.document_by_object("gh", f"{SECRET}/issues/1")
        core = f"group:gh:group:team:{gh.team_id('octo/core')}"
        assert secret is not None and secret.acl == (core, "user:github:ann", "user:github:bob")
        gh.repos[SECRET]["collaborators"].append("cat ")  # never trimmed into cat
        gh.touch(PUBLIC, 1, body="The word 'teh', twice")
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.changed, run.counts.failed) == (
            "completed_with_errors", 1, 2,
        ), run  # fmt: skip
        failures = ws.failures("gh")
        assert {f.object_id for f in failures} == {f"{SECRET}/issues/1", f"{SECRET}/issues/2"}
        assert all(f.error_class == "invalid_principal" for f in failures)
        assert all("'github:cat '" in f.message for f in failures), failures[0].message
        withheld = ws.manifest.document_by_object("gh", f"{SECRET}/issues/1")
        assert withheld is not None and withheld.acl == ()  # nobody, not the old readers
        gh.repos[SECRET]["collaborators"].remove("cat ")  # the repo's readers are valid again
        fixed = ws.sync(index=False).runs[0]
        assert (fixed.status, fixed.counts.failed, fixed.fetched) == ("succeeded", 0, 0), fixed
        assert ws.failures("gh") == []
        record = ws.manifest.document_by_object("gh", f"{SECRET}/issues/1")
        assert record is not None and record.acl == (core, "user:github:ann", "user:github:bob")


def test_a_collaborator_removed_right_after_the_first_sync_loses_the_items(
    gh: FakeGithub, tmp_path: Path
) -> None:
    """The repo's listing URL is the same as the first run's and answers 304: the new
    readers must still reach every item (an ETag proves the listing, not the ACL)."""
    populate(gh)
    with workspace(gh, tmp_path, 'window_overlap = "0s"\n') as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        gh.repos[SECRET]["collaborators"].remove("ann")
        gh.teams["octo/core"] = ["cat"]
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.changed, run.fetched) == ("succeeded", 2, 0), run
        record = ws.manifest.document_by_object("gh", f"{SECRET}/issues/2")
        assert record is not None
        core = f"group:gh:group:team:{gh.team_id('octo/core')}"
        assert record.acl == (core, "user:github:bob")
