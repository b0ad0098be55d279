"""The round trip for the message and file-sharing connectors (``message_cases``): slack,
teams and box on their fakes through ``roundtrip_run.round_trip``; gmail on its fake and
imap on the real Dovecot (a process, so this module is in the process tier) through
``vendor_run.mail_round_trip``, since a mail message is never edited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from roundtrip_run import round_trip
from vendor_run import dovecot, mail_round_trip, vendor_case

__all__ = ["dovecot", "vendor_case"]


@pytest.mark.parametrize("vendor_case", ["slack", "teams", "box"], indirect=True)
def test_round_trip_500_items_exact_counts(vendor_case: Any, tmp_path: Path) -> None:
    """500 items, 5 % deleted, edited and re-permissioned: exact counts everywhere."""
    round_trip(vendor_case, tmp_path)


@pytest.mark.parametrize("vendor_case", ["gmail", "imap"], indirect=True)
def test_mail_round_trip_500_messages_exact_counts(vendor_case: Any, tmp_path: Path) -> None:
    """500 messages, 5 % deleted and 5 % new: exact counts everywhere."""
    mail_round_trip(vendor_case, tmp_path)
