"""Graph change-notification subscriptions kept alive against the fake Graph, on a fake
clock: one per library is created with the source's ``clientState``; nothing is sent
while they are fresh; each is renewed by PATCH inside its margin before expiry; a failed
renewal is logged, shown in ``status`` and retried after its backoff; a subscription Graph
lost (expired while the scheduler was down) is created again; a real ``headwater run``
creates them at its first cycle.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fakes.sharepoint import SITE, TOKEN, FakeGraph
from headwater import Workspace
from headwater.connectors.sharepoint import SharepointConnector
from headwater.errors import ConfigError
from headwater.hints.subscriptions import keep_subscriptions, retry_wait

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
HOOK = "https://hooks.example.com/v1/hooks/sp"


class Clock:
    """A clock the test moves; the fake Graph reads it too."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _workspace(url: str, tmp_path: Path) -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "sp"\ntype = "sharepoint"\nbase_url = "{url}/v1.0"\n'
        f'token = "{TOKEN}"\nsite = "{SITE}"\nretry_attempts = 2\nretry_initial_wait = 0.01\n'
        f'webhook_secret = "s3cret"\nnotification_url = "{HOOK}"\n'
        'subscription_lifetime = "2h"\n'
    )
    return Workspace.open(config, connector_types={"sharepoint": SharepointConnector})


def _calls(graph: FakeGraph, method: str) -> list[str]:
    with graph.lock:
        return [c.path for c in graph.log if c.method == method and "/subscriptions" in c.path]


def test_subscriptions_are_created_renewed_and_retried(
    graph: FakeGraph, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    graph.now = clock
    with _workspace(graph.url, tmp_path) as ws:
        kept = keep_subscriptions(ws.runtime, clock())
        assert sorted(kept.created) == ["sp:lib1", "sp:lib2"]
        subs = list(graph.subscriptions.values())
        assert {s["resource"] for s in subs} == {"drives/lib1/root", "drives/lib2/root"}
        assert {(s["clientState"], s["notificationUrl"]) for s in subs} == {("s3cret", HOOK)}
        states = {s.scope: s for s in ws.manifest.subscriptions.states("sp")}
        assert states["lib1"].expires_at == T0 + timedelta(hours=2)

        clock.now = T0 + timedelta(minutes=80)  # 40 min left: outside the 30 min margin
        assert keep_subscriptions(ws.runtime, clock()).renewed == []
        assert _calls(graph, "PATCH") == []

        clock.now = T0 + timedelta(minutes=95)  # 25 min left: renew
        assert sorted(keep_subscriptions(ws.runtime, clock()).renewed) == ["sp:lib1", "sp:lib2"]
        assert len(_calls(graph, "PATCH")) == 2 and len(_calls(graph, "POST")) == 2
        renewed = ws.manifest.subscriptions.states("sp")[0]
        assert renewed.expires_at == clock.now + timedelta(hours=2)
        assert renewed.vendor_id == states[renewed.scope].vendor_id  # the same one, extended

        clock.now += timedelta(minutes=100)
        graph.fail("/v1.0/subscriptions", 503, {"error": {"code": "serviceNotAvailable"}},
                   times=-1)  # fmt: skip
        with caplog.at_level(logging.ERROR, logger="headwater.hints"):
            assert sorted(keep_subscriptions(ws.runtime, clock()).failed) == ["sp:lib1", "sp:lib2"]
        assert "could not be renewed" in caplog.text
        report = ws.status().as_dict()
        (row,) = [s for s in report["sources"] if s["id"] == "sp"]
        failing = row["subscriptions"][0]
        assert failing["failures"] == 1 and "503" in failing["last_error"]
        assert failing["retry_at"] == (clock.now + retry_wait(1)).isoformat()
        json.dumps(report)

        graph.faults.clear()
        clock.now += timedelta(seconds=30)  # before the retry: nothing is sent
        patches = len(_calls(graph, "PATCH"))
        assert keep_subscriptions(ws.runtime, clock()).renewed == []
        assert len(_calls(graph, "PATCH")) == patches
        clock.now += retry_wait(1)
        assert len(keep_subscriptions(ws.runtime, clock()).renewed) == 2
        state = ws.manifest.subscriptions.states("sp")[0]
        assert (state.failures, state.last_error, state.retry_at) == (0, None, None)


def test_a_subscription_graph_lost_is_created_again(graph: FakeGraph, tmp_path: Path) -> None:
    clock = Clock()
    graph.now = clock
    with _workspace(graph.url, tmp_path) as ws:
        keep_subscriptions(ws.runtime, clock())
        before = {s.scope: s.vendor_id for s in ws.manifest.subscriptions.states("sp")}
        clock.now = T0 + timedelta(hours=3)  # the scheduler was down: both expired
        kept = keep_subscriptions(ws.runtime, clock())
        assert sorted(kept.renewed) == ["sp:lib1", "sp:lib2"]
        after = {s.scope: s for s in ws.manifest.subscriptions.states("sp")}
        assert all(after[scope].vendor_id != before[scope] for scope in before)
        assert all(not graph.expired(s.vendor_id) for s in after.values())
        assert len(_calls(graph, "POST")) == 4  # two lost, two created again


def test_notification_url_needs_https_a_secret_and_a_subscribing_type(tmp_path: Path) -> None:
    base = ('[workspace]\ntenant = "acme"\n[embedder]\ntype = "fake"\ndimension = 8\n'
            '[[index]]\nname = "main"\ntype = "sqlite"\n'
            '[[source]]\nid = "sp"\ntype = "sharepoint"\ntoken = "t"\nsite = "s"\n')  # fmt: skip
    for extra, expected in (
        (f'notification_url = "{HOOK}"\n', "needs `webhook_secret`"),
        ('webhook_secret = "x"\nnotification_url = "http://hooks.example.com/"\n', "https://"),
    ):
        config = tmp_path / "headwater.toml"
        config.write_text(base + extra)
        with pytest.raises(ConfigError, match=expected):
            Workspace.open(config, connector_types={"sharepoint": SharepointConnector})


def test_headwater_run_creates_the_subscriptions(graph: FakeGraph, tmp_path: Path) -> None:
    """The scheduler (a real ``headwater run`` process) keeps them from its first cycle."""
    config = tmp_path / "headwater.toml"
    _workspace(graph.url, tmp_path).close()  # writes the config, migrates the manifest
    env = dict(os.environ, HF_HUB_OFFLINE="1",
               PYTHONPATH=str(Path(__file__).resolve().parents[3] / "src"))  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "headwater", "-c", str(config), "run"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(graph.subscriptions) < 2 and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()[1][-3000:]
            time.sleep(0.1)
        assert {s["resource"] for s in graph.subscriptions.values()} == {
            "drives/lib1/root", "drives/lib2/root"}  # fmt: skip
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr[-3000:]
    with _workspace(graph.url, tmp_path) as ws:
        states = ws.manifest.subscriptions.states("sp")
    assert {s.vendor_id for s in states} == set(graph.subscriptions)
