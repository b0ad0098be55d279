"""``watch = true`` on an imap source, against Dovecot: the scheduler holds IMAP IDLE on
the mailbox, and a message appended there is read (and a scope hint recorded with origin
``idle``) without waiting for ``refresh_every``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from imap_support import PASSWORD, Account, message

from headwater.scheduler.daemon import Scheduler


def wait_for(check: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"not in {timeout}s: {what}")


def test_a_new_message_is_heard_by_idle_and_read(
    account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HW_IMAP_PASSWORD", PASSWORD)
    account.append("INBOX", message("First", "Already there"))
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "mail"\ntype = "imap"\nhost = "127.0.0.1"\nport = {account.port}\n'
        f'ssl = false\nusername = "{account.username}"\npassword = "${{HW_IMAP_PASSWORD}}"\n'
        'watch = true\nrefresh_every = "1h"\naccess = { users = ["bob@example.org"] }\n'
    )
    scheduler = Scheduler(config)
    thread = threading.Thread(target=scheduler.serve, name="test-scheduler")
    thread.start()
    try:
        manifest = scheduler.rt.manifest
        wait_for(lambda: manifest.count_documents("mail") == 1, "the first run")
        wait_for(lambda: manifest.runs.latest("mail").status == "succeeded", "its end")  # type: ignore[union-attr]
        runs = len(manifest.runs.recent("mail"))
        account.append("INBOX", message("Second", "Arrived while idling"))
        wait_for(lambda: manifest.count_documents("mail") == 2, "the new message read")
        wait_for(lambda: manifest.hints.states()["mail"].read >= 1, "the hint marked read")
        assert len(manifest.runs.recent("mail")) == runs + 1  # one incremental sync
        assert manifest.hints.states()["mail"].last_origin == "idle"
    finally:
        scheduler.stop()
        thread.join(timeout=60)
    assert not thread.is_alive()
