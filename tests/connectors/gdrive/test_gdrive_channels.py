"""Drive push channels kept alive against the fake Drive API, on a fake clock: one channel
per scope is opened by changes.watch with the source's token; nothing is sent while it is
fresh; inside its margin a new channel is opened and the old one stopped (channels.stop
with its id and resourceId); a failed renewal keeps the old channel, is shown in
``status`` and retried; the scheduler's keeper runs a pass at most once a minute.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from fakes.gdrive import TOKEN, FakeDrive
from headwater import Workspace
from headwater.connectors.gdrive import GdriveConnector
from headwater.hints.subscriptions import SubscriptionKeeper, keep_subscriptions, retry_wait

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/v1/hooks/gd"


class Clock:
    """A clock the test moves; the fake Drive reads it too."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _workspace(url: str, tmp_path: Path, extra: str = "") -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "gd"\ntype = "gdrive"\nbase_url = "{url}"\ntoken = "{TOKEN}"\n'
        "retry_attempts = 2\nretry_initial_wait = 0.01\n"
        f'webhook_secret = "s3cret"\nnotification_url = "{HOOK}"\n'
        'subscription_lifetime = "1h"\n' + extra
    )
    return Workspace.open(config, connector_types={"gdrive": GdriveConnector})


def _watches(drive: FakeDrive) -> int:
    with drive.lock:
        return sum(r.path == "/drive/v3/changes/watch" for r in drive.log)


def test_channels_are_opened_replaced_and_the_old_ones_stopped(
    drive: FakeDrive, tmp_path: Path
) -> None:
    clock = Clock()
    drive.now = clock
    with _workspace(drive.url, tmp_path, 'shared_drives = ["sd1"]\n') as ws:
        assert keep_subscriptions(ws.runtime, clock()).created == ["gd:sd1"]
        (channel,) = drive.channels.values()
        assert (channel["token"], channel["address"], channel["driveId"]) == ("s3cret", HOOK, "sd1")
        (state,) = ws.manifest.subscriptions.states("gd")
        assert state.vendor_id == channel["id"] and state.resource_id == channel["resourceId"]
        assert state.expires_at == T0 + timedelta(hours=1)

        clock.now = T0 + timedelta(minutes=40)  # 20 min left: outside the 15 min margin
        assert keep_subscriptions(ws.runtime, clock()).renewed == []
        assert _watches(drive) == 1

        clock.now = T0 + timedelta(minutes=50)
        assert keep_subscriptions(ws.runtime, clock()).renewed == ["gd:sd1"]
        assert drive.stopped == [channel["id"]]
        (fresh,) = drive.channels.values()
        (state,) = ws.manifest.subscriptions.states("gd")
        assert state.vendor_id == fresh["id"] != channel["id"]
        assert state.expires_at == clock.now + timedelta(hours=1)


def test_a_failed_renewal_keeps_the_old_channel_and_is_retried(
    drive: FakeDrive, tmp_path: Path
) -> None:
    clock = Clock()
    drive.now = clock
    with _workspace(drive.url, tmp_path) as ws:
        keep_subscriptions(ws.runtime, clock())
        (first,) = ws.manifest.subscriptions.states("gd")
        clock.now = T0 + timedelta(minutes=50)
        drive.fail("/drive/v3/changes/watch", 500, times=-1)
        assert keep_subscriptions(ws.runtime, clock()).failed == ["gd:"]
        (state,) = ws.manifest.subscriptions.states("gd")
        assert (state.vendor_id, state.failures) == (first.vendor_id, 1)
        assert drive.stopped == [] and list(drive.channels) == [first.vendor_id]
        (row,) = [s for s in ws.status().as_dict()["sources"] if s["id"] == "gd"]
        assert row["subscriptions"][0]["last_error"] and row["subscriptions"][0]["failures"] == 1
        drive.faults.clear()
        clock.now += retry_wait(1)
        assert keep_subscriptions(ws.runtime, clock()).renewed == ["gd:"]
        assert drive.stopped == [first.vendor_id]


def test_the_scheduler_keeper_runs_a_pass_at_most_once_a_minute(
    drive: FakeDrive, tmp_path: Path
) -> None:
    clock = Clock()
    drive.now = clock
    with _workspace(drive.url, tmp_path) as ws:
        keeper = SubscriptionKeeper()
        keeper.tick(ws.runtime, ["gd"], clock())
        assert _watches(drive) == 1
        clock.now = T0 + timedelta(minutes=50)  # due, but within a minute of the last pass?
        keeper.tick(ws.runtime, ["gd"], T0 + timedelta(seconds=30))
        assert _watches(drive) == 1
        keeper.tick(ws.runtime, ["gd"], clock())
        assert _watches(drive) == 2 and len(drive.stopped) == 1
        keeper.tick(ws.runtime, [], clock() + timedelta(minutes=5))  # no such source: nothing
        assert _watches(drive) == 2
