"""The zendesk connector under the real sync runner, against the fake API: an edit, a
draft and an archived article arrive; segment members can read; a listing failing half
way deletes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_api_sync import open_workspace, use_secret
from zendesk_support import T0, populate

from fakes.zendesk import FakeZendesk
from headwater import Workspace


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, zd: FakeZendesk) -> None:
    use_secret(monkeypatch, "HW_TEST_ZENDESK_TOKEN", zd.token)  # `${ENV}` in headwater.toml


def workspace(zd: FakeZendesk, tmp_path: Path, extra: str = "") -> Workspace:
    return open_workspace(
        tmp_path,
        f'id = "zd"\ntype = "zendesk"\nbase_url = "{zd.url}"\nemail = "{zd.user}"\n'
        f'token = "${{HW_TEST_ZENDESK_TOKEN}}"\n{extra}',
    )


def test_sync_edit_draft_archive_and_segment_readers(zd: FakeZendesk, tmp_path: Path) -> None:
    populate(zd)
    with workspace(zd, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 4), first.counts
        record = ws.manifest.document_by_object("zd", "articles/102")
        assert record is not None and record.acl == ("group:zd:group:segment:2",)
        vip = {g.group for g in ws.manifest.groups.groups_of("bob@example.com")}
        assert "zd:group:segment:2" in vip
        assert "zd:group:segment:2" not in {
            g.group for g in ws.manifest.groups.groups_of("cat@example.com")
        }
        zd.articles[101].body = "<p>Click reset, then confirm.</p>"
        zd.articles[101].updated = T0.replace(minute=20)
        zd.articles[102].draft = True
        zd.articles[102].updated = T0.replace(minute=21)
        zd.articles[103].archived = True  # only enumeration sees it
        run = ws.sync(index=False).runs[0]
        assert (run.counts.changed, run.counts.deleted) == (1, 2), run.counts


def test_a_listing_failing_half_way_deletes_nothing(zd: FakeZendesk, tmp_path: Path) -> None:
    populate(zd)
    with workspace(zd, tmp_path, "retry_attempts = 2\n") as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        zd.articles[101].archived = True
        zd.broken.add("/api/v2/help_center/articles")  # enumeration answers 500
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 0 and run.status != "succeeded", run
        assert ws.manifest.count_documents("zd", "active") == 4
