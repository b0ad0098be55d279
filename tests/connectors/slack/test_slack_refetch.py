"""The slack targeted read: a hint re-reads exactly the named thread or day document
(``conversations.info`` for the channel and its members, then ``conversations.replies``
or one bounded ``conversations.history``), never lists channels; a delete hint for a
document that still exists deletes nothing; one for a gone thread or an emptied day
tombstones it; a channel the source does not read is dropped. A signed ``message``
event names the documents it touched.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from pathlib import Path

from hinting import hinted, state_of

from fakes.slack import TOKEN, FakeSlack
from headwater import Workspace
from headwater.connectors.slack import SlackConnector
from headwater.connectors.slack._messages import day_of
from headwater.hints.vendors import read_webhook


def _workspace(url: str, tmp_path: Path, extra: str = "") -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "sl"\ntype = "slack"\nbase_url = "{url}/api"\n'
        f'token = "{TOKEN}"\npage_size = 2\nretry_attempts = 3\nretry_initial_wait = 0.01\n' + extra
    )
    return Workspace.open(config, connector_types={"slack": SlackConnector})


def _root(slack: FakeSlack, cid: str) -> str:
    return next(ts for ts, m in slack.channels[cid].messages.items() if m.replies)


def _methods(slack: FakeSlack) -> list[tuple[str, str]]:
    with slack.lock:
        return [(c.path.removeprefix("/api/"), c.query.get("ts", "")) for c in slack.log]


def test_a_hint_reads_exactly_its_thread_and_day(slack: FakeSlack, tmp_path: Path) -> None:
    with _workspace(slack.url, tmp_path) as ws:
        ws.sync(index=False)
        root, secret = _root(slack, "C1"), _root(slack, "C2")
        slack.reply("C1", root, "U1", "Payments moved to Team Ledger.")
        slack.reply("C2", secret, "U2", "Not hinted: not read.")
        slack.channels["C2"].members = ["U1"]  # bob leaves the private channel
        day = day_of(root)
        slack.log.clear()
        read = hinted(ws, "sl", [f"C1/thread/{root}", f"C2/{day}"])
        assert read.counts is not None and read.counts["changed"] == 2, read
        called = _methods(slack)
        assert ("conversations.replies", root) in called
        assert {m for m, _ in called} <= {"conversations.info", "conversations.members",
                                         "conversations.replies", "conversations.history",
                                         "users.info"}, called  # fmt: skip
        assert all(ts == root for m, ts in called if m == "conversations.replies")
        assert sum(m == "conversations.history" for m, _ in called) == 1  # the one day
        thread = ws.manifest.document_by_object("sl", f"C1/thread/{root}")
        assert thread is not None
        assert "Team Ledger" in ws.runtime.content_store.get(thread.checksum or "")
        private = ws.manifest.document_by_object("sl", f"C2/{day}")
        assert private is not None and private.acl == ("user:ann@acme.com", "user:slack:u1")
        assert state_of(ws, "sl", f"C2/thread/{secret}") == ("active", 1)


def test_a_delete_hint_for_a_document_that_exists_deletes_nothing(
    slack: FakeSlack, tmp_path: Path
) -> None:
    with _workspace(slack.url, tmp_path) as ws:
        ws.sync(index=False)
        root = _root(slack, "C1")
        ids = [f"C1/thread/{root}", f"C1/{day_of(root)}"]
        read = hinted(ws, "sl", ids, deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 0
        assert [state_of(ws, "sl", i) for i in ids] == [("active", 1), ("active", 1)]


def test_a_delete_hint_for_a_gone_thread_or_day_tombstones_it(
    slack: FakeSlack, tmp_path: Path
) -> None:
    with _workspace(slack.url, tmp_path) as ws:
        ws.sync(index=False)
        root = _root(slack, "C1")
        day = day_of(root)
        slack.remove("C1", root)  # a root with replies: a tombstone stays in history
        for ts, message in list(slack.channels["C1"].messages.items()):
            if not message.replies and day_of(ts) == day:
                slack.remove("C1", ts)
        read = hinted(ws, "sl", [f"C1/thread/{root}", f"C1/{day}"], deleted=True)
        assert read.counts is not None and read.counts["deleted"] == 2, read
        for object_id in (f"C1/thread/{root}", f"C1/{day}"):
            state = state_of(ws, "sl", object_id)
            assert state is not None and state[0] != "active"


def test_a_channel_the_source_does_not_read_is_dropped(slack: FakeSlack, tmp_path: Path) -> None:
    with _workspace(slack.url, tmp_path, 'channels = ["general"]\n') as ws:
        ws.sync(index=False)
        secret = _root(slack, "C2")
        read = hinted(ws, "sl", [f"C2/thread/{secret}", "C9/2024-01-01"])
        assert read.dropped == 2
        assert ws.manifest.document_by_object("sl", f"C2/thread/{secret}") is None


def _signed(event: dict[str, object], secret: str = "s3cret") -> tuple[dict[str, str], bytes]:
    body = json.dumps({"type": "event_callback", "event": event}).encode()
    stamp = str(int(time.time()))
    mac = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256)
    headers = {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": "v0=" + mac.hexdigest()}
    return headers, body


def test_a_message_event_names_its_day_or_its_thread() -> None:
    ts, root = "1714554000.000100", "1714550400.000200"  # 2024-05-01 09:00 and 08:00 UTC
    cases = [
        ({"type": "message", "channel": "C1", "ts": ts}, ("C1/2024-05-01",)),
        ({"type": "message", "channel": "C1", "ts": ts, "thread_ts": root},
         ("C1/thread/" + root, "C1/2024-05-01")),
        ({"type": "message", "subtype": "message_changed", "channel": "C1",
          "message": {"ts": root, "thread_ts": root}}, ("C1/thread/" + root, "C1/2024-05-01")),
        ({"type": "message", "subtype": "message_deleted", "channel": "C1", "deleted_ts": ts,
          "previous_message": {"ts": ts}}, ("C1/2024-05-01",)),
    ]  # fmt: skip
    for event, ids in cases:
        headers, body = _signed(event)
        verdict = read_webhook("slack", "s3cret", headers, {}, body, time.time())
        assert verdict is not None and verdict.status == 202
        assert (verdict.object_ids, verdict.scope) == (ids, False), event
    headers, body = _signed({"type": "member_left_channel", "channel": "C2", "user": "U2"})
    verdict = read_webhook("slack", "s3cret", headers, {}, body, time.time())
    assert verdict is not None and (verdict.object_ids, verdict.scope) == ((), True)
