"""The ``vendor_case`` fixture of the round trip's vendor modules
(``test_roundtrip_vendors.py``, ``test_roundtrip_messages.py``): a case's fake, started
in this process and filled directly (no HTTP calls to fill it), or for imap an account
on the real Dovecot of ``tests/connectors/imap`` (one per session); ``mail_round_trip``,
the round trip of sources whose items never change; and ``feed_round_trip``, the one of
a feed, whose entries are never deleted.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from httpserver import LocalHttpServer
from message_cases import BoxCase, GmailCase, ImapCase, MailCase, SlackCase, TeamsCase
from roundtrip_run import (
    FIVE_PERCENT,
    OBJECT_IDS,
    assert_exact,
    finds,
    load_and_sync,
    sync,
    write_config,
)
from saas_cases import NEW_READER, N
from vendor_cases import (
    GithubCase,
    GitlabCase,
    NotionCase,
    RssCase,
    ServicenowCase,
    ZendeskCase,
)

from fakes.box import FakeBox
from fakes.github import FakeGithub
from fakes.gitlab import FakeGitlab
from fakes.gmail import FakeGmail
from fakes.notion import FakeNotion
from fakes.servicenow import FakeServicenow
from fakes.slack import FakeSlack
from fakes.teams import FakeTeams
from fakes.zendesk import FakeZendesk
from headwater import Workspace

_IMAP = Path(__file__).resolve().parents[1] / "connectors" / "imap"
sys.path.insert(0, str(_IMAP))
# The imap tests' session fixture (a Dovecot process), taken from their conftest under
# another module name so pytest serves it here too.
_spec = importlib.util.spec_from_file_location("imap_conftest", _IMAP / "conftest.py")
assert _spec is not None and _spec.loader is not None
_imap_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_imap_conftest)
dovecot = _imap_conftest.dovecot
PASSWORD = _imap_conftest.PASSWORD

FAKES: dict[str, tuple[Any, Any]] = {  # case name: (fake, case on it)
    "github": (FakeGithub, GithubCase),
    "gitlab": (FakeGitlab, GitlabCase),
    "notion": (FakeNotion, NotionCase),
    "zendesk": (FakeZendesk, ZendeskCase),
    "servicenow": (FakeServicenow, ServicenowCase),
    "slack": (FakeSlack, SlackCase),
    "teams": (FakeTeams, TeamsCase),
    "box": (FakeBox, BoxCase),
    "gmail": (FakeGmail, GmailCase),
    "rss": (LocalHttpServer, RssCase),
}


@pytest.fixture
def vendor_case(request: pytest.FixtureRequest) -> Iterator[Any]:
    kind = str(request.param)
    if kind == "imap":
        account = request.getfixturevalue("dovecot").account()
        yield ImapCase(account.port, account.username, PASSWORD)
        return
    fake, case = FAKES[kind]
    with fake() as started:
        yield case(started)


def mail_round_trip(case: MailCase, tmp_path: Path) -> None:
    """Load N messages, sync, delete 5 % and add 5 % new ones, re-sync; exact counts
    (a message is never edited, and its ACL is its mailbox's or the source's)."""
    config = write_config(tmp_path, case.source())
    deleted = list(range(0, N, 20))
    added = list(range(N, N + FIVE_PERCENT))
    with Workspace.open(config) as ws:
        load_and_sync(ws, case)

        case.mutate(deleted, added)
        OBJECT_IDS.update({i: case.object_id(i) for i in added})
        second = sync(ws, case)
        assert second == {"new": FIVE_PERCENT, "changed": 0, "deleted": FIVE_PERCENT, "failed": 0}
        assert_exact(ws, active=N, deleted=deleted, revision_2=[])
        for i in deleted[:3]:
            assert not finds(ws, i, **case.reader)
        for i in added:
            assert finds(ws, i, **case.reader), f"{i}: a new message is not found"
        assert finds(ws, 3, **case.reader) and not finds(ws, 3, user=NEW_READER)


def feed_round_trip(case: RssCase, tmp_path: Path) -> None:
    """Load an N-entry feed, sync, let 5 % of the entries leave the feed and edit 5 %,
    re-sync; exact counts: the edits arrive and nothing is deleted (a feed shows only its
    latest entries: leaving it is not a delete, docs/connectors/rss.md)."""
    config = write_config(tmp_path, case.source())
    dropped, edited = list(range(0, N, 20)), list(range(1, N, 20))
    with Workspace.open(config) as ws:
        load_and_sync(ws, case)

        case.mutate(dropped, edited)
        second = sync(ws, case)
        assert second == {"new": 0, "changed": FIVE_PERCENT, "deleted": 0, "failed": 0}
        assert_exact(ws, active=N, deleted=[], revision_2=edited)
        for i in edited[:3]:
            hits = ws.search(f"mk{i:04d}x", mode="keyword", k=1, **case.reader)
            assert "edited today" in hits[0]["chunk"]
        for i in dropped:
            assert finds(ws, i, **case.reader), f"{i}: an entry that left the feed is gone"
