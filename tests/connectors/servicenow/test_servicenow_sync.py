"""The servicenow connector under the real sync runner, against the fake Table API: an
edit arrives, a retired article is deleted by enumeration, criteria members can read; a
listing failing half way deletes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_api_sync import open_workspace, use_secret
from servicenow_support import populate

from fakes.servicenow import FakeServicenow
from headwater import Workspace


@pytest.fixture(autouse=True)
def _secret(monkeypatch: pytest.MonkeyPatch, sn: FakeServicenow) -> None:
    use_secret(monkeypatch, "HW_TEST_SN_PASSWORD", sn.token)  # `${ENV}` in headwater.toml


def workspace(sn: FakeServicenow, tmp_path: Path, extra: str = "") -> Workspace:
    return open_workspace(
        tmp_path,
        f'id = "sn"\ntype = "servicenow"\nbase_url = "{sn.url}"\nuser = "{sn.user}"\n'
        'password = "${HW_TEST_SN_PASSWORD}"\nknowledge_bases = ["IT", "HR"]\npage_size = 1\n'
        'window_overlap = "0s"\naccess = { groups = ["staff"] }\n'
        f"{extra}",
    )


def test_sync_edit_retire_and_readers(sn: FakeServicenow, tmp_path: Path) -> None:
    populate(sn)
    with workspace(sn, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new) == ("succeeded", 4), first.counts
        open_article = ws.manifest.document_by_object("sn", "kb_knowledge/a1")
        assert open_article is not None and open_article.acl == ("group:staff",)
        hr = ws.manifest.document_by_object("sn", "kb_knowledge/a4")
        assert hr is not None and len(hr.acl) == 1 and hr.acl[0].startswith("group:sn:group:")
        cats = {g.group for g in ws.manifest.groups.groups_of("cat@example.com")}
        assert hr.acl[0].removeprefix("group:") in cats
        anns = {g.group for g in ws.manifest.groups.groups_of("ann@example.com")}
        assert hr.acl[0].removeprefix("group:") not in anns
        rows = {r["sys_id"]: r for r in sn.tables["kb_knowledge"]}
        rows["a1"]["text"] = "<p>New body</p>"
        rows["a1"]["sys_updated_on"] = "2024-05-01 10:00:00"
        rows["a3"]["workflow_state"] = "retired"
        run = ws.sync(index=False).runs[0]
        assert (run.counts.changed, run.counts.deleted) == (1, 1), run.counts


def test_a_listing_failing_half_way_deletes_nothing(sn: FakeServicenow, tmp_path: Path) -> None:
    populate(sn)
    with workspace(sn, tmp_path, "retry_attempts = 2\n") as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        sn.tables["kb_knowledge"][0]["workflow_state"] = "retired"
        sn.broken_after["kb_knowledge"] = 1  # the next listing's second page answers 500
        sn.tables["kb_knowledge"][1]["sys_updated_on"] = "2024-05-01 11:00:00"
        sn.tables["kb_knowledge"][2]["sys_updated_on"] = "2024-05-01 11:01:00"
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 0 and run.status != "succeeded", run
        assert ws.manifest.count_documents("sn", "active") == 4
