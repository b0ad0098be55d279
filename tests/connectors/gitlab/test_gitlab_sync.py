"""The gitlab connector under the real sync runner, against the fake API: a re-sync reads
only what a commit changed (by compare) and what was updated since (issues, merge
requests); deletes arrive from the diff and from enumeration; a listing failing half
way deletes nothing; nested groups expand to the parent group's members.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from declared import use_declared_connectors
from gitlab_support import ENG, SECRET, SITE, populate, workspace

from fakes.gitlab import FakeGitlab, Item


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, gl: FakeGitlab) -> None:
    monkeypatch.setenv("HW_TEST_GITLAB_TOKEN", gl.token)  # `${ENV}` in headwater.toml
    use_declared_connectors(monkeypatch)  # the entry point pyproject.toml declares


def test_incremental_files_issues_and_deletes(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    with workspace(gl, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 8), first.counts
        gl.clear_log()
        quiet = ws.sync(index=False).runs[0]
        assert quiet.fetched == 0 and quiet.counts.changed == 0, quiet.counts
        assert gl.count("/api/v4/projects/acme%2Fsite/repository/tree") == 0  # head unmoved
        assert gl.count("/api/v4/projects/acme%2Fsite/repository/compare") == 0  # same head
        gl.commit(
            SITE,
            {
                "README.md": b"# Site\nHello again",  # changed
                "docs/guide.md": None,  # deleted
                "CHANGELOG.md": b"v1",  # added
            },
        )
        gl.commit(SECRET, {"src/a.py": None, "src/b.py": b"print('a')\n"})  # a rename
        now = datetime.now(UTC)
        gl.projects[SITE].issues[1].notes.append(("ann", "Fixed", False))
        gl.projects[SITE].issues[1].updated = now
        gl.projects[SITE].issues[1].state = "closed"
        gl.projects[SECRET].issues[2] = Item(2, "Incident 2", "Disk", updated=now)
        del gl.projects[SITE].merge_requests[1]  # deleted: only enumeration sees it
        gl.clear_log()
        third = ws.sync(index=False).runs[0]
        c = third.counts
        assert (c.new, c.changed, c.deleted) == (3, 2, 3), c
        # read compares; only enumeration lists the moved branch's tree (once)
        assert gl.count("/api/v4/projects/acme%2Fsite/repository/tree") == 1
        assert gl.count("/api/v4/projects/acme%2Fsite/repository/compare") == 1
        for oid in (f"{SITE}/-/blob/docs/guide.md", f"{SECRET}/-/blob/src/a.py"):
            record = ws.manifest.document_by_object("gl", oid)
            assert record is None or record.state != "active", oid
        assert ws.manifest.document_by_object("gl", f"{SECRET}/-/blob/src/b.py") is not None
        assert ws.manifest.document_by_object("gl", f"{SECRET}/-/issues/2") is not None
        gl.projects[SECRET].visibility = "public"  # readers changed: listed in full
        fourth = ws.sync(index=False).runs[0]
        assert (fourth.counts.changed, fourth.fetched) == (4, 0), fourth.counts
        record = ws.manifest.document_by_object("gl", f"{SECRET}/-/issues/1")
        assert record is not None and record.acl == ("public",)


def test_a_listing_failing_half_way_deletes_nothing(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    with workspace(gl, tmp_path, "page_size = 1\nretry_attempts = 2\n") as ws:
        assert ws.sync(index=False).runs[0].counts.new == 8
        del gl.projects[SITE].issues[2]
        gl.broken.add("/api/v4/projects/acme%2Feng%2Fsecret/issues")  # answers 500
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 0 and run.status != "succeeded", run
        assert ws.manifest.count_documents("gl", "active") == 8


def test_nested_groups_expand_to_the_parent_groups_members(gl: FakeGitlab, tmp_path: Path) -> None:
    populate(gl)
    with workspace(gl, tmp_path) as ws:
        ws.sync(index=False)
        record = ws.manifest.document_by_object("gl", f"{SECRET}/-/blob/notes.md")
        eng = f"gl:group:group:{ENG}"
        assert record is not None and record.acl == (f"group:{eng}", "user:gitlab:ann")
        # eve is a Developer of acme, the parent of eng: she reads eng's project
        assert eng in {g.group for g in ws.manifest.groups.groups_of("gitlab:eve")}
        assert eng in {g.group for g in ws.manifest.groups.groups_of("gitlab:cat")}
        assert eng not in {g.group for g in ws.manifest.groups.groups_of("gitlab:dan")}
