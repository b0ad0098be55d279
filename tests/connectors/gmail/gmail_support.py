"""Shared setup for the gmail tests: a populated fake API and connector builders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.gmail import FakeGmail
from headwater.connectors.base import SourceContext
from headwater.connectors.gmail import GmailConnector, GmailOptions

ANN, BOB = "ann@acme.com", "bob@acme.com"


def raw(subject: str, body: str) -> bytes:
    return (
        f"From: x@example.com\r\nTo: y@acme.com\r\nSubject: {subject}\r\n"
        f"Content-Type: text/plain\r\n\r\n{body}\r\n"
    ).encode()


def populate(gm: FakeGmail) -> None:
    """Two mailboxes: ann's (inbox, a sent one, spam) and bob's (inbox)."""
    gm.add(ANN, "a1", raw("Welcome", "Hello Ann"), {"INBOX"})
    gm.add(ANN, "a2", raw("Report", "Quarterly numbers"), {"SENT"})
    gm.add(ANN, "a3", raw("Win money", "spam"), {"SPAM"})
    gm.add(BOB, "b1", raw("Invoice", "Pay by Friday"), {"INBOX"})
    gm.add(BOB, "b2", raw("Lunch", "Noon?"), {"INBOX"})


def make(gm: FakeGmail, tmp_path: Path, **overrides: Any) -> GmailConnector:
    values: dict[str, Any] = {
        "service_account_json": gm.key_json,
        "users": [ANN, BOB],
        "api_url": gm.url,
        "page_size": 1,
        "retry_attempts": 3,
        "retry_initial_wait": 0.0,
        "retry_max_wait": 0.0,
    } | overrides
    return GmailConnector(GmailOptions(**values), SourceContext(source_id="gm", state_dir=tmp_path))


@pytest.fixture
def gm() -> Iterator[FakeGmail]:
    with FakeGmail() as fake:
        yield fake
