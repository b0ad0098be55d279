"""The ``encrypted`` failure class in ``failures --summary``: what silences it."""

from __future__ import annotations

from headwater.manifest.failure_groups import FailureGroup, GroupKey
from headwater.sync.fixes import SourceFacts, fix_for


def test_an_encrypted_group_says_password_and_offers_an_exclude_glob() -> None:
    group = FailureGroup(
        GroupKey("docs", "parse", "encrypted", ".pdf"),
        count=2,
        dead=2,
        examples=("hr/salaries.pdf", "hr/bonus.pdf"),
        spellings=(".pdf",),
        message="the PDF is password-protected and cannot be read without the password",
    )
    fix = fix_for(group, SourceFacts(type="filesystem", excludable=True))
    assert (fix.kind, fix.line, fix.where) == (
        "exclude",
        'exclude = ["**/*.pdf"]',
        '[[source]] id = "docs"',
    )
    assert "password-protected" in fix.detail and "without the password" in fix.detail
    elsewhere = fix_for(group, SourceFacts(type="sharepoint", excludable=False))
    assert elsewhere.kind == "inspect" and "password-protected" in elsewhere.detail
