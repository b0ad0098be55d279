"""The shipped connector conformance suite, run for the imap connector against Dovecot."""

from __future__ import annotations

from pathlib import Path

import pytest
from imap_support import Account, make_connector, message

from headwater.connectors.imap import ImapConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness
from ports import free_port


class TestImapConformance(ConnectorConformance, connector=ImapConnector):
    @pytest.fixture
    def harness(self, account: Account, tmp_path: Path) -> ConnectorHarness:
        account.create("Archive")
        for i in range(4):
            account.append("INBOX", message(f"Note {i}", f"Body of note {i}.\n"))
        account.append("Archive", message("Old", "An archived note.\n"))
        refused = free_port()
        return ConnectorHarness(
            make=lambda: make_connector(
                account, tmp_path, mailboxes=["INBOX", "Archive"], batch_size=2
            ),
            make_broken=lambda: make_connector(account, tmp_path, port=refused),
            # A mailbox that vanished after the first one was read: the read raises.
            make_failing_listing=lambda: make_connector(
                account, tmp_path, mailboxes=["INBOX", "Gone", "Archive"], batch_size=2
            ),
        )
