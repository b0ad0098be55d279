"""validate() names what is wrong: the token, the missing scope, an unknown shared drive,
an unreachable API."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_gdrive_conformance import make

from fakes.gdrive import FakeDrive
from headwater.connectors.gdrive import principal_for_group
from headwater.errors import ConfigError, CredentialError, TransientError


def test_a_rejected_token_names_the_token_option(drive: FakeDrive, tmp_path: Path) -> None:
    with pytest.raises(CredentialError, match=r"gdrive `token` was rejected .*HTTP 401"):
        make(drive.url, tmp_path, token="expired").validate()


def test_a_missing_scope_is_named(drive: FakeDrive, tmp_path: Path) -> None:
    drive.scope_ok = False
    with pytest.raises(CredentialError, match=r"lacks the scope .*auth/drive\.readonly"):
        make(drive.url, tmp_path).validate()


def test_an_unknown_shared_drive_is_named(drive: FakeDrive, tmp_path: Path) -> None:
    make(drive.url, tmp_path, shared_drives=["sd1"]).validate()
    with pytest.raises(ConfigError, match=r"`shared_drives` names 'nope'"):
        make(drive.url, tmp_path, shared_drives=["sd1", "nope"]).validate()


def test_an_unreachable_api_is_transient(tmp_path: Path) -> None:
    with pytest.raises(TransientError, match=r"gdrive `base_url` http://127\.0\.0\.1:9"):
        make("http://127.0.0.1:9", tmp_path).validate()


def test_group_principals_are_prefixed_by_the_source() -> None:
    assert principal_for_group("gd", "Eng@Example.com") == "gd:group:eng@example.com"
