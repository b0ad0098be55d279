"""The shipped conformance suite, run for the gmail connector against the fake."""

from __future__ import annotations

from pathlib import Path

import pytest
from gmail_support import make, populate

from fakes.gmail import FakeGmail
from headwater.connectors.gmail import GmailConnector
from headwater.connectors.testing import ConnectorConformance, ConnectorHarness


class TestGmailConformance(ConnectorConformance, connector=GmailConnector):
    @pytest.fixture
    def harness(self, gm: FakeGmail, tmp_path: Path) -> ConnectorHarness:
        populate(gm)
        return ConnectorHarness(
            make=lambda: make(gm, tmp_path),
            make_broken=lambda: make(gm, tmp_path, users=["ann@acme.com", "nobody@acme.com"]),
            make_failing_listing=lambda: _failing(gm, tmp_path),
            min_documents=4,
        )


def _failing(gm: FakeGmail, tmp_path: Path) -> GmailConnector:
    """The same API whose second mailbox's listing answers 500."""
    gm.broken.add("/gmail/v1/users/bob@acme.com/messages")
    return make(gm, tmp_path, retry_attempts=2)
