"""Shared setup for the zendesk tests: a populated fake API and connector builders."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fakes.zendesk import Article, FakeZendesk
from headwater.connectors.base import SourceContext
from headwater.connectors.zendesk import ZendeskConnector, ZendeskOptions

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def populate(zd: FakeZendesk) -> None:
    """Four articles (public, one segment, two segments, German) and three segments."""
    zd.users = [
        {"id": 10, "email": "ann@example.com", "role": "agent", "active": True, "tags": []},
        {"id": 11, "email": "bob@example.com", "role": "end-user", "active": True,
         "tags": ["vip", "beta"], "organization_id": 900},
        {"id": 12, "email": "cat@example.com", "role": "end-user", "active": True,
         "tags": ["vip"], "organization_id": 901},
        {"id": 13, "email": "dan@example.com", "role": "end-user", "active": True,
         "suspended": True, "tags": ["vip"], "organization_id": 900},
        {"id": 14, "email": "eve@example.com", "role": "end-user", "active": True, "tags": []},
    ]  # fmt: skip
    zd.group_memberships = [(10, 500)]
    zd.segments = {
        1: {"id": 1, "name": "Agents and admins", "user_type": "staff", "built_in": True},
        2: {"id": 2, "name": "VIP at Acme", "user_type": "signed_in_users", "tags": ["vip"],
            "organization_ids": [900], "added_user_ids": [14]},
        3: {"id": 3, "name": "Support group", "user_type": "staff", "group_ids": [500]},
    }  # fmt: skip
    zd.articles = {
        101: Article(101, "Reset a password", "<p>Click reset.</p>", T0.replace(minute=1)),
        102: Article(102, "VIP line", "<p>Call 555.</p>", T0.replace(minute=2), segments=[2]),
        103: Article(103, "Escalations", "<p>Page on-call.</p>", T0.replace(minute=3),
                     segments=[1, 3]),
        104: Article(104, "Passwort", "<p>Klick.</p>", T0.replace(minute=4), locale="de"),
    }  # fmt: skip


def make(zd: FakeZendesk, tmp_path: Path, **overrides: Any) -> ZendeskConnector:
    values: dict[str, Any] = {
        "base_url": zd.url,
        "email": zd.user,
        "token": zd.token,
        "retry_attempts": 3,
        "retry_initial_wait": 0.0,
        "retry_max_wait": 0.0,
    } | overrides
    return ZendeskConnector(
        ZendeskOptions(**values), SourceContext(source_id="zd", state_dir=tmp_path)
    )


@pytest.fixture
def zd() -> Iterator[FakeZendesk]:
    with FakeZendesk() as fake:
        fake.page_limit = 2  # pages overlap by one (the export starts at `end_time`)
        yield fake
