"""``permissions_every`` in the scheduler: a due source gets a permission-only sync.

The ``acl`` test connector (``tests/acl_connector.py``) holds documents with an ACL each
and lists those ACLs through ``permissions()``; it counts the documents whose content it reads, so a test
can tell a permission sync (no reads) from a content sync.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from acl_connector import STATE, AclConnector, AclSource
from headwater import Workspace
from headwater.clock import utcnow
from headwater.runtime import Runtime
from headwater.scheduler.daemon import PERMISSIONS, Scheduler
from headwater.types import Access
from workspace_helpers import write_config


def opener(path: Path) -> Workspace:
    return Workspace.open(path, connector_types={"acl": AclConnector})


def runtime_opener(path: Path) -> Runtime:
    return Runtime.open(path, connector_types={"acl": AclConnector})


def config_with(tmp_path: Path, manifest_url: str | None, extra: str) -> tuple[Path, AclSource]:
    name = f"{tmp_path.name}-p"
    STATE[name] = AclSource(docs={"d1": Access(users=("a@x.com",))})
    source = f'[[source]]\nid = "p"\ntype = "acl"\nname = "{name}"\n{extra}'
    return write_config(tmp_path, manifest_url=manifest_url, sources=source), STATE[name]


def test_run_once_runs_a_due_permission_sync_after_the_content_sync(
    tmp_path: Path, manifest_url: str
) -> None:
    config, state = config_with(
        tmp_path, manifest_url, 'refresh_every = "1h"\npermissions_every = "15m"\n'
    )
    scheduler = Scheduler(config, once=True, open_runtime=runtime_opener)
    assert scheduler.serve() == 0
    assert [(o.source_id, o.kind, o.status) for o in scheduler.outcomes] == [
        ("p", "sync", "succeeded"),
        ("p", PERMISSIONS, "succeeded"),
    ]
    assert (state.reads, state.listings) == (1, 1)

    state.docs["d1"] = Access(users=("b@x.com",))  # a@ loses d1, b@ gains it
    with opener(config) as ws:  # the last permission sync was 20 minutes ago
        ws.schedule_store().set_permissions_done("p", utcnow() - timedelta(minutes=20))
    again = Scheduler(config, once=True, open_runtime=runtime_opener)
    assert again.serve() == 0  # content is not due for an hour; permissions are
    assert [(o.kind, o.status) for o in again.outcomes] == [(PERMISSIONS, "succeeded")]
    assert (state.reads, state.listings) == (1, 2)  # no content read
    with opener(config) as ws:
        assert [r["title"] for r in ws.search("budget", user="b@x.com", mode="keyword")] == ["d1"]
        assert ws.search("budget", user="a@x.com", mode="keyword") == []
        status = {s["id"]: s for s in ws.status().as_dict()["sources"]}
        assert status["p"]["lease"] is None  # no run holds it now
        ws.manifest.runs.leases.acquire("p", "other-host:1:x", 60)  # a run in progress
        lease = {s["id"]: s for s in ws.status().as_dict()["sources"]}["p"]["lease"]
        assert lease["owner"] == "other-host:1:x" and lease["expires_at"] is not None


def test_a_source_without_permissions_every_gets_no_permission_sync(tmp_path: Path) -> None:
    config, state = config_with(tmp_path, None, 'refresh_every = "1h"\n')
    scheduler = Scheduler(config, once=True, open_runtime=runtime_opener)
    assert scheduler.serve() == 0
    assert [o.kind for o in scheduler.outcomes] == ["sync"]
    assert state.listings == 0


def test_a_restarted_scheduler_remembers_the_last_permission_sync(
    tmp_path: Path, manifest_url: str
) -> None:
    """The time is in the manifest: a new scheduler (a restart) does not run every
    permission sync again at once, and runs it when ``permissions_every`` has passed."""
    config, state = config_with(
        tmp_path, manifest_url, 'refresh_every = "1h"\npermissions_every = "15m"\n'
    )
    first = Scheduler(config, once=True, open_runtime=runtime_opener)
    assert first.serve() == 0
    assert state.listings == 1
    with opener(config) as ws:
        (done,) = ws.schedule_store().permissions_done().values()
        assert abs((utcnow() - done).total_seconds()) < 60
        status = {s["id"]: s for s in ws.status().as_dict()["sources"]}["p"]
        assert status["paused"] is False  # the row written for the time is not a pause

    restarted = Scheduler(config, once=True, open_runtime=runtime_opener)
    assert restarted.serve() == 0
    assert restarted.outcomes == [] and state.listings == 1  # nothing due after a restart

    with opener(config) as ws:
        ws.schedule_store().set_permissions_done("p", utcnow() - timedelta(minutes=16))
    later = Scheduler(config, once=True, open_runtime=runtime_opener)
    assert later.serve() == 0
    assert [o.kind for o in later.outcomes] == [PERMISSIONS] and state.listings == 2
