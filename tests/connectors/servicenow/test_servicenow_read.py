"""The servicenow connector against the fake Table API: user criteria to ACLs and to
people, denies and scripts failing closed, incremental reads, a 429 storm and validate's
messages."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from fake_api_checks import FakeApi, FakeApiChecks, ValidateStep
from servicenow_support import article, make, populate

from fakes.servicenow import FakeServicenow
from headwater.connectors.testing import FAR_FUTURE, collect, no_known
from headwater.errors import ConfigError, CredentialError
from headwater.types import Failure, Window

EVERYTHING = Window(None, FAR_FUTURE)


def test_user_criteria_become_acls_and_people(sn: FakeServicenow, tmp_path: Path) -> None:
    populate(sn)
    connector = make(sn, tmp_path)
    result = collect(connector.read(EVERYTHING, None, no_known))
    docs = {d.object_id: d for d in result.documents}
    # retired a5 and a6 (knowledge base not configured) are not read
    assert list(docs) == [f"kb_knowledge/a{i}" for i in (1, 2, 3, 4)]
    assert docs["kb_knowledge/a1"].access is None  # no criteria: the source's `access`
    principals = {o: d.access.groups for o, d in docs.items() if d.access is not None}
    assert len({g for gs in principals.values() for g in gs}) == 3
    listed = {g.principal: g for g in make(sn, tmp_path).groups()}
    members = {o: sorted(listed[gs[0]].members) for o, gs in principals.items()}
    assert members == {
        "kb_knowledge/a2": ["ann@example.com", "cat@example.com"],  # role or user
        "kb_knowledge/a3": ["bob@example.com", "cat@example.com"],  # HR group (dan inactive)
        "kb_knowledge/a4": ["cat@example.com"],  # HR knowledge base AND admins
    }
    assert listed[principals["kb_knowledge/a4"][0]].display_name == "HR group & Admins"


def test_denies_scripts_and_companies_fail_closed(sn: FakeServicenow, tmp_path: Path) -> None:
    populate(sn)
    sn.tables["kb_knowledge"] += [
        article("a7", "kb1", 7, cannot_read_user_criteria="uc_ann"),
        article("a8", "kb1", 8, can_read_user_criteria="uc_script"),
        article("a9", "kb1", 9, can_read_user_criteria="uc_company"),
    ]
    result = collect(make(sn, tmp_path).read(EVERYTHING, None, no_known))
    failures = {i.object_id: i for i in result.items if isinstance(i, Failure)}
    assert set(failures) == {"kb_knowledge/a7", "kb_knowledge/a8", "kb_knowledge/a9"}
    assert all(f.permanent and f.error_class == "unsupported_acl" for f in failures.values())
    assert "cannot read" in failures["kb_knowledge/a7"].message
    assert "a script" in failures["kb_knowledge/a8"].message
    assert "company" in failures["kb_knowledge/a9"].message


def test_an_unreadable_criteria_table_fails_articles_closed(
    sn: FakeServicenow, tmp_path: Path
) -> None:
    populate(sn)
    sn.broken.add("/api/now/table/user_criteria")
    result = collect(make(sn, tmp_path, retry_attempts=2).read(EVERYTHING, None, no_known))
    failed = sorted(i.object_id for i in result.items if isinstance(i, Failure))
    assert failed == ["kb_knowledge/a2", "kb_knowledge/a3", "kb_knowledge/a4"]
    assert [d.object_id for d in result.documents] == ["kb_knowledge/a1"]


def test_incremental_reads_ask_updated_since(sn: FakeServicenow, tmp_path: Path) -> None:
    populate(sn)
    first = collect(make(sn, tmp_path).read(EVERYTHING, None, no_known))
    assert first.final is not None
    assert json.loads(first.final.cursor) == {"newest": "2024-05-01 09:04:00"}
    sn.tables["kb_knowledge"][0]["sys_updated_on"] = "2024-05-01 09:30:00"
    sn.clear_log()
    again = collect(make(sn, tmp_path, window_overlap="1m").read(EVERYTHING, first.final, no_known))
    # a minute of overlap: a3 (09:03) and a4 (09:04) again, then the edited a1
    assert [d.object_id for d in again.documents] == [
        "kb_knowledge/a3",
        "kb_knowledge/a4",
        "kb_knowledge/a1",
    ]
    asked = [c.query["sysparm_query"] for c in sn.log if c.path.endswith("/kb_knowledge")]
    assert "sys_updated_on>=2024-05-01 09:03:00" in asked[0]


class TestServicenowApi(FakeApiChecks):
    """The shared fake-API read checks (``fake_api_checks``): a 429 storm, Retry-After,
    and validate's messages naming credentials, bases and tables."""

    validate_steps = (
        ValidateStep(
            CredentialError, r"401 \(User Not Authenticated.*`user` and", {"password": "nope"}
        ),
        ValidateStep(
            ConfigError,
            r"no knowledge base \['Legal'\].*one of: HR, IT, Other",
            {"knowledge_bases": ["IT", "Legal"]},
        ),
        ValidateStep(
            CredentialError,
            r"may not read table 'kb_uc_can_read_mtom'",
            change=lambda sn: sn.denied.add("kb_uc_can_read_mtom"),
        ),
    )

    @pytest.fixture
    def fake_api(self, sn: FakeServicenow, tmp_path: Path) -> FakeApi:
        populate(sn)
        return FakeApi(sn, partial(make, sn, tmp_path), documents=4)
