"""GitHub hints against the fake API: a webhook's issue is read alone (its text, its
comments, its repo's readers), a deleted issue (410) is tombstoned only once GitHub says
so, and a hint for a repo the source does not list is dropped.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from github_support import PUBLIC, SECRET, populate, workspace

from fakes.github import FakeGithub
from headwater.hints.queue import queue, read_due
from headwater.manifest.hints import DELETED

NOW = timedelta(0)
ITEM = re.compile(r"/repos/([^/]+/[^/]+)/(issues|pulls)/(\d+)(/comments)?")


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, gh: FakeGithub) -> None:
    monkeypatch.setenv("HW_TEST_GITHUB_TOKEN", gh.token)


def items_read(gh: FakeGithub) -> set[str]:
    """The issues whose item or comments the connector requested."""
    found = set()
    for call in gh.log:
        m = ITEM.fullmatch(call.path)
        if m:
            found.add(f"{m.group(1)}#{m.group(3)}")
    return found


def test_a_hint_reads_only_its_issue_and_a_delete_waits_for_github(
    gh: FakeGithub, tmp_path: Path
) -> None:
    populate(gh)
    with workspace(gh, tmp_path, 'window_overlap = "0s"\n') as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        gh.touch(SECRET, 1, body="Rotate every month")
        gh.touch(SECRET, 2, body="Root cause: BGP")  # changed too, but not hinted
        gh.clear_log()
        queue(ws.runtime, "gh", [f"{SECRET}/issues/1"], origin="github", debounce=NOW)
        read = read_due(ws.runtime, "gh")
        assert read is not None and read.mode == "targeted" and read.counts is not None
        assert read.counts["changed"] == 1, read.counts
        assert items_read(gh) == {f"{SECRET}#1"}
        assert not any(c.path.endswith("/issues") for c in gh.log), "no listing was asked"
        record = ws.manifest.document_by_object("gh", f"{SECRET}/issues/1")
        assert record is not None and "user:github:ann" in record.acl
        # "deleted" said by a hint, while GitHub still has the issue: nothing is deleted
        queue(ws.runtime, "gh", [f"{PUBLIC}/issues/1"], kind=DELETED, origin="github",
              debounce=NOW)  # fmt: skip
        read = read_due(ws.runtime, "gh")
        assert read is not None and read.counts is not None and read.counts["deleted"] == 0
        kept = ws.manifest.document_by_object("gh", f"{PUBLIC}/issues/1")
        assert kept is not None and kept.state == "active"
        gh.gone.add((PUBLIC, 1))  # now GitHub answers 410 Gone
        queue(ws.runtime, "gh", [f"{PUBLIC}/issues/1"], kind=DELETED, origin="github",
              debounce=NOW)  # fmt: skip
        read = read_due(ws.runtime, "gh")
        assert read is not None and read.counts is not None and read.counts["deleted"] == 1
        gone = ws.manifest.document_by_object("gh", f"{PUBLIC}/issues/1")
        assert gone is not None and gone.state == "deleted"


def test_a_hint_for_a_repo_the_source_does_not_list_is_dropped(
    gh: FakeGithub, tmp_path: Path
) -> None:
    populate(gh)
    with workspace(gh, tmp_path) as ws:
        ws.sync(index=False)
        gh.clear_log()
        queue(ws.runtime, "gh", ["octo/other/issues/1", "not-an-id"], origin="github",
              debounce=NOW)  # fmt: skip
        read = read_due(ws.runtime, "gh")
        assert read is not None and read.dropped == 2 and gh.log == []
        assert ws.manifest.hints.states()["gh"].dropped == 2
