"""The gdrive connector under the real sync runner, against the fake Drive API: first
sync, a no-op re-sync that downloads nothing, edits/adds/trash/remove/permission changes
through changes.list, an expired token recovered by a full enumeration, a listing that
breaks half way, and a 429 waited out.
"""

from __future__ import annotations

import time
from pathlib import Path

from fakes.gdrive import TOKEN, FakeDrive, google_error
from headwater import Workspace
from headwater.connectors.gdrive import GdriveConnector


def _workspace(url: str, tmp_path: Path) -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "gd"\ntype = "gdrive"\nbase_url = "{url}"\ntoken = "{TOKEN}"\n'
        "page_size = 2\nretry_attempts = 3\nretry_initial_wait = 0.01\n"
        "prune_max_fraction = 0.9\n"
    )
    return Workspace.open(config, connector_types={"gdrive": GdriveConnector})


def _content_requests(drive: FakeDrive) -> int:
    return sum(1 for r in drive.log if r.path.endswith("/export") or r.query.get("alt") == "media")


def _acl(ws: Workspace, object_id: str) -> tuple[str, ...]:
    record = ws.manifest.document_by_object("gd", object_id)
    assert record is not None
    return record.acl


def test_sync_edit_add_trash_remove_and_permission_change(drive: FakeDrive, tmp_path: Path) -> None:
    with _workspace(drive.url, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        assert (first.status, first.counts.new, first.fetched) == ("succeeded", 4, 4), first
        assert _acl(ws, "a") == ("user:ann@example.com",)
        assert _acl(ws, "d") == ("user:ann@example.com",)  # via permissions.list
        downloads = _content_requests(drive)
        again = ws.sync(index=False).runs[0]
        assert (again.status, again.fetched, again.counts.new, again.counts.changed) == (
            "succeeded", 0, 0, 0,
        ), again  # fmt: skip
        assert _content_requests(drive) == downloads, "a no-op re-sync must download nothing"
        drive.put("a", "a.txt", "Alpha, edited and longer.\n")
        drive.put("g", "g.txt", "A new file.\n")
        drive.trash("b")
        drive.remove("c")
        drive.share("d", [
            {"type": "group", "role": "reader", "emailAddress": "Eng@example.com"},
            {"type": "domain", "role": "reader", "domain": "example.com"},
            {"type": "anyone", "role": "reader"},
        ])  # fmt: skip
        third = ws.sync(index=False).runs[0]
        c = third.counts
        assert (c.new, c.changed, c.deleted) == (1, 2, 2), c
        assert third.fetched == 2, "a permission change must not download the file"
        assert _acl(ws, "d") == (
            "group:gd:domain:example.com", "group:gd:group:eng@example.com", "public",
        )  # fmt: skip
        assert ws.manifest.count_documents("gd", "active") == 3


def test_an_expired_changes_token_recovers_by_full_enumeration(
    drive: FakeDrive, tmp_path: Path
) -> None:
    with _workspace(drive.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        drive.put("h", "h.txt", "Added while the token expired.\n")
        drive.remove("a")
        drive.expire_tokens()  # the next changes.list answers 410 Gone
        run = ws.sync(index=False).runs[0]
        assert run.status == "succeeded", run
        assert (run.counts.new, run.counts.deleted) == (1, 1), run.counts
        assert any(r.path == "/drive/v3/changes" and r.status == 410 for r in drive.log)
        assert ws.manifest.document_by_object("gd", "h") is not None
        assert ws.manifest.count_documents("gd", "active") == 4
        drive.put("i", "i.txt", "After recovery, changes flow again.\n")
        calm = ws.sync(index=False).runs[0]
        assert (calm.counts.new, calm.fetched) == (1, 1), calm


def test_a_changes_token_refused_as_invalid_recovers_by_full_enumeration(
    drive: FakeDrive, tmp_path: Path
) -> None:
    """Drive refuses a stale token with 400 invalid at ``pageToken``, not only 410."""
    drive.token_refusal = 400
    with _workspace(drive.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        drive.put("h", "h.txt", "Added while the token expired.\n")
        drive.remove("a")
        drive.expire_tokens()
        run = ws.sync(index=False).runs[0]
        assert run.status == "succeeded", run
        assert (run.counts.new, run.counts.deleted) == (1, 1), run.counts
        assert any(r.path == "/drive/v3/changes" and r.status == 400 for r in drive.log)
        assert ws.manifest.count_documents("gd", "active") == 4


def test_a_listing_that_breaks_half_way_deletes_nothing(drive: FakeDrive, tmp_path: Path) -> None:
    with _workspace(drive.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        drive.expire_tokens()
        drive.broken = True  # files.list page 2 answers 500, every time
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.deleted) == ("failed", 0), run
        assert "HTTP 500" in (run.error or ""), run
        assert ws.manifest.count_documents("gd", "active") == 4
        drive.broken = False
        healed = ws.sync(index=False).runs[0]
        assert (healed.status, healed.counts.deleted) == ("succeeded", 0), healed


def test_a_429_with_retry_after_is_waited_out(drive: FakeDrive, tmp_path: Path) -> None:
    with _workspace(drive.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        drive.put("a", "a.txt", "Edited behind a rate limit.\n")
        drive.fail("/drive/v3/changes", 429, {"error": {"code": 429}}, Retry_After="1")
        started = time.monotonic()
        run = ws.sync(index=False).runs[0]
        assert time.monotonic() - started >= 1.0, "Retry-After: 1 was not honoured"
        assert (run.status, run.counts.changed) == ("succeeded", 1), run
        statuses = [r.status for r in drive.log if r.path == "/drive/v3/changes"]
        assert statuses[statuses.index(429) + 1] == 200, statuses  # the retry succeeded


def test_a_rate_limit_403_is_retried_not_a_credential_error(
    drive: FakeDrive, tmp_path: Path
) -> None:
    """Drive also rate limits with 403 userRateLimitExceeded (guides/limits): retried."""
    with _workspace(drive.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 4
        drive.put("a", "a.txt", "Edited behind a 403 rate limit.\n")
        body = google_error(403, "userRateLimitExceeded", "User Rate Limit Exceeded")
        drive.fail("/drive/v3/changes", 403, body)
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.changed) == ("succeeded", 1), run


def test_a_permission_sync_changes_acls_without_downloading(
    drive: FakeDrive, tmp_path: Path
) -> None:
    with _workspace(drive.url, tmp_path) as ws:
        ws.sync(index=False)
        downloads = _content_requests(drive)
        drive.share("a", [{"type": "user", "role": "reader", "emailAddress": "Bo@example.com"}])
        (report,) = ws.sync_permissions(["gd"]).sources
        assert (report.status, report.changed, report.groups) == ("succeeded", 1, None), report
        assert _content_requests(drive) == downloads, "a permission sync downloads nothing"
        assert _acl(ws, "a") == ("user:bo@example.com",)
        assert _acl(ws, "d") == ("user:ann@example.com",)  # unchanged, via permissions.list
