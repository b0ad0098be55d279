"""Shared setup for the servicenow tests: a populated fake Table API and builders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.servicenow import FakeServicenow
from headwater.connectors.base import SourceContext
from headwater.connectors.servicenow import ServicenowConnector, ServicenowOptions


def article(sid: str, kb: str, minute: int, **fields: str) -> dict[str, Any]:
    return {
        "sys_id": sid,
        "number": f"KB00{sid[-1]}",
        "short_description": f"Article {sid}",
        "text": f"<p>Body of {sid}</p>",
        "kb_knowledge_base": kb,
        "workflow_state": "published",
        "sys_updated_on": f"2024-05-01 09:{minute:02d}:00",
        "can_read_user_criteria": "",
        "cannot_read_user_criteria": "",
    } | fields


def populate(sn: FakeServicenow) -> None:
    """Knowledge bases IT (open) and HR (HR group only); criteria by user, group, role."""
    sn.tables = {
        "kb_knowledge_base": [
            {"sys_id": "kb1", "title": "IT"},
            {"sys_id": "kb2", "title": "HR"},
            {"sys_id": "kb3", "title": "Other"},
        ],
        "kb_uc_can_read_mtom": [{"kb_knowledge_base": "kb2", "user_criteria": "uc_hr"}],
        "kb_uc_cannot_read_mtom": [],
        "user_criteria": [
            {"sys_id": "uc_hr", "name": "HR group", "group": "g_hr"},
            {"sys_id": "uc_admins", "name": "Admins", "role": "r_admin"},
            {"sys_id": "uc_ann", "name": "Ann", "user": "u_ann"},
            {
                "sys_id": "uc_script",
                "name": "Scripted",
                "advanced": "true",
                "script": "answer = gs.getUser().isMemberOf('x');",
            },
            {"sys_id": "uc_company", "name": "Acme staff", "company": "c1"},
        ],
        "sys_user": [
            {"sys_id": "u_ann", "email": "ann@example.com", "active": "true"},
            {"sys_id": "u_bob", "email": "bob@example.com", "active": "true"},
            {"sys_id": "u_cat", "email": "cat@example.com", "active": "true"},
            {"sys_id": "u_dan", "email": "dan@example.com", "active": "false"},
        ],
        "sys_user_grmember": [
            {"user": "u_bob", "group": "g_hr"},
            {"user": "u_cat", "group": "g_hr"},
            {"user": "u_dan", "group": "g_hr"},
        ],
        "sys_user_has_role": [
            {"user": "u_ann", "role": "r_admin", "inherited": "false"},
            {"user": "u_cat", "role": "r_admin", "inherited": "true"},  # through a group
        ],
        "kb_knowledge": [
            article("a1", "kb1", 1),
            article("a2", "kb1", 2, can_read_user_criteria="uc_admins,uc_ann"),
            article("a3", "kb2", 3),
            article("a4", "kb2", 4, can_read_user_criteria="uc_admins"),
            article("a5", "kb1", 5, workflow_state="retired"),
            article("a6", "kb3", 6),
        ],
    }


def make(sn: FakeServicenow, tmp_path: Path, **overrides: Any) -> ServicenowConnector:
    values: dict[str, Any] = {
        "base_url": sn.url,
        "user": sn.user,
        "password": sn.token,
        "knowledge_bases": ["IT", "kb2"],
        "page_size": 1,
        "window_overlap": "0s",
        "retry_attempts": 3,
        "retry_initial_wait": 0.0,
        "retry_max_wait": 0.0,
    } | overrides
    return ServicenowConnector(
        ServicenowOptions(**values), SourceContext(source_id="sn", state_dir=tmp_path)
    )


@pytest.fixture
def sn() -> Iterator[FakeServicenow]:
    with FakeServicenow() as fake:
        yield fake
