"""The slack connector under the real sync runner, against the fake Slack: first sync, a
no-op re-sync that reads no history before ``oldest``, an edit, an add, a reply moving
``latest_reply``, deletes (explicit and by enumeration), a private channel's membership
change, a history listing that breaks half way, and a 429 waited out.
"""

from __future__ import annotations

import time
from pathlib import Path

from fakes.slack import TOKEN, FakeSlack
from headwater import Workspace
from headwater.connectors.slack import SlackConnector


def _workspace(url: str, tmp_path: Path, extra: str = "") -> Workspace:
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "sl"\ntype = "slack"\nbase_url = "{url}/api"\n'
        f'token = "{TOKEN}"\n'
        "page_size = 2\nretry_attempts = 3\nretry_initial_wait = 0.01\n"
        "prune_max_fraction = 0.9\n" + extra
    )
    return Workspace.open(config, connector_types={"slack": SlackConnector})


def _acl(ws: Workspace, object_id: str) -> tuple[str, ...]:
    record = ws.manifest.document_by_object("sl", object_id)
    assert record is not None, object_id
    return record.acl


def _state(ws: Workspace, object_id: str) -> str:
    record = ws.manifest.document_by_object("sl", object_id)
    assert record is not None, object_id
    return record.state


def _day(ts: str) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(float(ts)))


def _root(slack: FakeSlack, cid: str) -> str:
    return next(ts for ts, m in slack.channels[cid].messages.items() if m.replies)


def test_first_sync_and_a_no_op_resync(slack: FakeSlack, tmp_path: Path) -> None:
    root = _root(slack, "C1")
    with _workspace(slack.url, tmp_path) as ws:
        first = ws.sync(index=False).runs[0]
        # C1: day 0, day 1, one thread; C2: day 0, one thread
        assert (first.status, first.counts.new) == ("succeeded", 5), first
        assert _acl(ws, f"C1/thread/{root}") == ("group:sl:workspace",)
        assert _acl(ws, f"C1/{_day(root)}") == ("group:sl:workspace",)
        assert _acl(ws, f"C2/{_day(root)}") == (
            "user:ann@acme.com", "user:bob@acme.com", "user:slack:u1", "user:slack:u2",
        )  # fmt: skip
        newest = {cid: max(c.messages, key=float) for cid, c in slack.channels.items()}
        mark = len(slack.log)
        again = ws.sync(index=False).runs[0]
        c = again.counts
        assert (again.status, c.new, c.changed, c.deleted) == ("succeeded", 0, 0, 0), again
        history = [r for r in slack.log[mark:] if r.path == "/api/conversations.history"]
        pruning = [r for r in history if r.query["oldest"] != newest[r.query["channel"]]]
        # the only other history reads are enumerate()'s, from the horizon (pruning):
        # read() itself asked for nothing older than each channel's `oldest`
        horizon = (time.time() - 90 * 86400) // 86400 * 86400  # that day's midnight, UTC
        assert all(float(r.query["oldest"]) == horizon for r in pruning), pruning
        assert len(history) - len(pruning) == 2, history  # one per channel
        replies = [r for r in slack.log[mark:] if r.path == "/api/conversations.replies"]
        assert len(replies) == 2 and all(r.query["limit"] == "1" for r in replies), replies
        assert not any("cursor" in r.query for r in replies), replies  # the root only


def test_edit_add_reply_and_deletes_arrive(slack: FakeSlack, tmp_path: Path) -> None:
    root, secret = _root(slack, "C1"), _root(slack, "C2")
    lone = next(ts for ts, m in slack.channels["C1"].messages.items() if _day(ts) != _day(root))
    with _workspace(slack.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
        slack.edit("C1", root, "Who owns billing (and invoices)?")  # the root is `edited`
        slack.reply("C2", secret, "U2", "Thanks, reviewing now.")  # latest_reply moves
        slack.post("C1", "U1", "A brand new day.", day=2)  # an add
        run = ws.sync(index=False).runs[0]
        c = run.counts
        assert (run.status, c.new, c.changed, c.deleted) == ("succeeded", 1, 2, 0), run
        slack.remove("C1", root)  # the root leaves a tombstone: an explicit Deleted
        del slack.channels["C2"].messages[secret]  # gone entirely: thread_not_found
        slack.remove("C1", lone)  # day 1's only message: gone from enumeration
        gone = ws.sync(index=False).runs[0]
        assert (gone.status, gone.counts.deleted) == ("succeeded", 3), gone
        assert _state(ws, f"C2/thread/{secret}") == "deleted"
        assert _state(ws, f"C1/thread/{root}") == "deleted"
        assert _state(ws, f"C1/{_day(lone)}") == "deleted"
        assert ws.manifest.count_documents("sl", "active") == 3


def test_a_private_channel_membership_change_changes_the_acl(
    slack: FakeSlack, tmp_path: Path
) -> None:
    secret = _root(slack, "C2")
    with _workspace(slack.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
        slack.channels["C2"].members.append("U3")
        reads = slack.count("/api/conversations.replies")
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.changed, run.counts.new) == ("succeeded", 2, 0), run
        both = ("user:ann@acme.com", "user:bob@acme.com", "user:cy@acme.com",
                "user:slack:u1", "user:slack:u2", "user:slack:u3")  # fmt: skip
        assert _acl(ws, f"C2/thread/{secret}") == both
        assert _acl(ws, f"C2/{_day(secret)}") == both
        assert slack.count("/api/conversations.replies") - reads == 2, "no thread re-read"
        slack.channels["C2"].members.remove("U1")
        ws.sync(index=False)
        assert _acl(ws, f"C2/{_day(secret)}") == (
            "user:bob@acme.com", "user:cy@acme.com", "user:slack:u2", "user:slack:u3",
        )  # fmt: skip


def test_every_channel_means_those_the_app_is_in(slack: FakeSlack, tmp_path: Path) -> None:
    """conversations.list shows every public channel; history of one the app was not
    invited to answers ``not_in_channel``: with ``channels = []`` it is left out."""
    slack.channel("C3", "random", ["U1", "U2", "U3"])
    slack.channels["C3"].app_member = False
    slack.post("C3", "U1", "Nobody invited the app here.")
    with _workspace(slack.url, tmp_path) as ws:
        ws.validate("sl")
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.new) == ("succeeded", 5), run
        assert not any(r.query.get("channel") == "C3" for r in slack.log
                       if r.path == "/api/conversations.history")  # fmt: skip


def test_a_user_users_info_does_not_know_is_named_by_id(slack: FakeSlack, tmp_path: Path) -> None:
    """users.info answers ``user_not_found`` for a user gone from the workspace (or of
    another one, in a shared channel): the message is kept, the member is named by id
    (``slack:UGONE``, which an ``[identity]`` alias can give to a person), never an email."""
    ts = slack.post("C1", "UGONE", "A note from someone who has left.", day=2)
    slack.channels["C2"].members.append("UGONE")
    with _workspace(slack.url, tmp_path) as ws:
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.new) == ("succeeded", 6), run
        record = ws.manifest.document_by_object("sl", f"C1/{_day(ts)}")
        assert record is not None and record.checksum is not None
        assert "UGONE: A note from someone who has left." in ws.content_store.get(record.checksum)
        assert _acl(ws, f"C2/{_day(_root(slack, 'C2'))}") == (
            "user:ann@acme.com", "user:bob@acme.com",
            "user:slack:u1", "user:slack:u2", "user:slack:ugone",
        )  # fmt: skip


def test_a_history_listing_that_breaks_half_way_deletes_nothing(
    slack: FakeSlack, tmp_path: Path
) -> None:
    with _workspace(slack.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
        slack.remove("C1", _root(slack, "C1"))
        slack.broken = True  # enumerate()'s second history page answers 500, every time
        run = ws.sync(index=False).runs[0]
        assert run.counts.deleted == 1, run  # only the explicit thread delete
        assert ws.manifest.count_documents("sl", "active") >= 4
        assert all(_state(ws, f"C1/{_day(ts)}") == "active" for ts in slack.channels["C1"].messages)


def test_a_429_with_retry_after_is_waited_out(slack: FakeSlack, tmp_path: Path) -> None:
    with _workspace(slack.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
        slack.post("C1", "U2", "Posted behind a rate limit.", day=2)
        body = {"ok": False, "error": "ratelimited"}
        slack.fail("/api/conversations.history", 429, body, Retry_After="1")
        started = time.monotonic()
        run = ws.sync(index=False).runs[0]
        assert time.monotonic() - started >= 1.0, "Retry-After: 1 was not honoured"
        assert (run.status, run.counts.new) == ("succeeded", 1), run
        statuses = [r.status for r in slack.log if r.path == "/api/conversations.history"]
        assert statuses[statuses.index(429) + 1] == 200, statuses  # the retry succeeded


def test_a_passing_ok_false_error_with_http_200_is_retried(
    slack: FakeSlack, tmp_path: Path
) -> None:
    """internal_error: "likely due to a transient issue on our end" (HTTP 200, ok: false)."""
    with _workspace(slack.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
        slack.post("C1", "U2", "Posted while Slack hiccuped.", day=2)
        slack.fail("/api/conversations.history", 200, {"ok": False, "error": "internal_error"})
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.new) == ("succeeded", 1), run
        assert run.error is None, run


def test_documents_older_than_the_horizon_are_reported_present(
    slack: FakeSlack, tmp_path: Path
) -> None:
    root = _root(slack, "C1")
    with _workspace(slack.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
    slack.remove("C1", root)  # deleted, but by now older than the (shortened) horizon
    with _workspace(slack.url, tmp_path, "history_days = 2\n") as ws:
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.deleted) == ("succeeded", 0), run
        assert run.prune is not None and run.prune["status"] == "done", run.prune
        assert run.prune["candidates"] == 0, run.prune  # enumerate() listed every document
        assert ws.manifest.count_documents("sl", "active") == 5
        assert _state(ws, f"C1/thread/{root}") == "active"
        assert _state(ws, f"C1/{_day(root)}") == "active"


def test_a_message_added_to_a_day_read_before_keeps_the_day_whole(
    slack: FakeSlack, tmp_path: Path
) -> None:
    day = max(_day(ts) for ts in slack.channels["C1"].messages)
    with _workspace(slack.url, tmp_path) as ws:
        assert ws.sync(index=False).runs[0].counts.new == 5
        slack.post("C1", "U1", "Late addition to the standup day.", day=1)
        run = ws.sync(index=False).runs[0]
        assert (run.status, run.counts.new, run.counts.changed) == ("succeeded", 0, 1), run
        record = ws.manifest.document_by_object("sl", f"C1/{day}")
        assert record is not None and record.checksum is not None
        text = ws.content_store.get(record.checksum)
        assert "Tomorrow's standup is moved." in text, text  # read before `oldest`
        assert "Late addition to the standup day." in text, text
