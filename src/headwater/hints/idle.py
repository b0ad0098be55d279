"""``watch = true`` on an ``imap`` source: IMAP IDLE (RFC 2177) on each watched mailbox.

One thread per mailbox keeps a read-only connection (``IMAPClient``, a maintained
client) in IDLE. An untagged ``EXISTS`` (a message arrived), ``EXPUNGE`` (one was
removed) or ``FETCH`` (flags) calls ``on_change``, which the watcher turns into a scope
hint: the sync that reads it is the connector's incremental read (one ``EXAMINE`` and one
``UID SEARCH`` above the last UID), so a new message is searchable within seconds. IDLE
is restarted every ``RENEW_S`` (servers may end an IDLE after 30 minutes); a dropped
connection is retried after ``RETRY_S``, and a scope hint is queued on every reconnect,
since changes while disconnected were not heard.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

from imapclient import IMAPClient

log = logging.getLogger("headwater.hints")

CHECK_S = 0.5  # how long one idle_check waits: also how fast ``stop`` is heard
RENEW_S = 25 * 60
RETRY_S = 5.0
CHANGES = (b"EXISTS", b"EXPUNGE", b"FETCH")


class MailboxIdler:
    """A thread holding IDLE on one mailbox until ``stop``."""

    def __init__(
        self, address: Any, mailbox: str, on_change: Callable[[], None], stop: threading.Event
    ) -> None:
        self.address = address  # the connector's ImapAddress
        self.mailbox = mailbox
        self.on_change = on_change
        self.stop = stop
        self.thread = threading.Thread(
            target=self._loop, name=f"headwater-idle-{mailbox}", daemon=True
        )

    def start(self) -> MailboxIdler:
        """Start the thread."""
        self.thread.start()
        return self

    def join(self) -> None:
        """Wait for the thread (after ``stop`` was set)."""
        self.thread.join(timeout=30)

    def _loop(self) -> None:
        first = True
        while not self.stop.is_set():
            try:
                self._session(reconnected=not first)
            except Exception as exc:  # the server went away: listen again shortly
                log.warning(
                    "IDLE on %s of %s failed (%s); retrying in %.0f s",
                    self.mailbox,
                    self.address.where,
                    exc,
                    RETRY_S,
                )
            first = False
            self.stop.wait(RETRY_S)

    def _client(self) -> IMAPClient:
        a = self.address
        context = ssl.create_default_context() if a.use_ssl or a.starttls else None
        client = IMAPClient(a.host, port=a.port, ssl=a.use_ssl, ssl_context=context,
                            timeout=a.timeout)  # fmt: skip
        if a.starttls:
            client.starttls(context)
        client.login(a.username, a.password)
        return client

    def _session(self, *, reconnected: bool) -> None:
        client = self._client()
        try:
            client.select_folder(self.mailbox, readonly=True)
            if reconnected:
                self.on_change()  # what happened while disconnected was not heard
            while not self.stop.is_set():
                client.idle()
                started = time.monotonic()
                changed = False
                while not self.stop.is_set() and time.monotonic() - started < RENEW_S:
                    responses = client.idle_check(timeout=CHECK_S)
                    if any(len(r) > 1 and r[1] in CHANGES for r in responses):
                        changed = True
                        break
                client.idle_done()
                if changed:
                    self.on_change()
        finally:
            try:
                client.logout()
            except Exception:  # already gone
                log.debug("IMAP logout failed", exc_info=True)
