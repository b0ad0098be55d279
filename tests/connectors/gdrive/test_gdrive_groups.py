"""gdrive ``groups()`` through the Directory API (issue 31 item 2), against the fake:
a domain's groups with their members, nested groups (transitively at search), pages,
CUSTOMER and suspended members left out, a group deleted in the directory gone after the
next ``sync --permissions``, and ``validate()`` naming a missing scope or role.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fakes.gdrive import TOKEN, FakeDrive
from headwater import Workspace
from headwater.cli.app import register_commands
from headwater.connectors.base import SourceContext
from headwater.connectors.gdrive import GdriveConnector, GdriveOptions
from headwater.errors import CredentialError

GROUP_SCOPE = "https://www.googleapis.com/auth/admin.directory.group.readonly"


def make(drive: FakeDrive, tmp_path: Path, **extra: Any) -> GdriveConnector:
    values: dict[str, Any] = {
        "base_url": drive.url,
        "directory_url": drive.url,
        "token": TOKEN,
        "groups_domain": "example.com",
        "retry_attempts": 2,
        "retry_initial_wait": 0.0,
    } | extra
    return GdriveConnector(GdriveOptions(**values), SourceContext("gd", tmp_path))


def directory(drive: FakeDrive) -> None:
    """all ⊃ eng ⊃ platform; eng also nests a partner's group the token may not read."""
    drive.add_group("all@example.com", "Everyone", [("GROUP", "Eng@example.com")])
    drive.add_group("Eng@example.com", "Engineering", [
        ("USER", "Ann@example.com"),
        ("GROUP", "platform@example.com"),
        ("GROUP", "ext@partner.com"),
        ("CUSTOMER", "C0123"),
        ("USER", "sus@example.com", "SUSPENDED"),
    ])  # fmt: skip
    drive.add_group("platform@example.com", "Platform", [("USER", "bob@example.com")])
    drive.add_group("ext@partner.com", "Partner", [("USER", "pat@partner.com")])


def test_groups_lists_members_and_nested_groups_by_email(drive: FakeDrive, tmp_path: Path) -> None:
    directory(drive)
    drive.directory_page = 1  # every list comes one row a page
    listed = {g.principal: g for g in make(drive, tmp_path).groups()}
    assert set(listed) == {"gd:group:all@example.com", "gd:group:eng@example.com",
                           "gd:group:platform@example.com"}  # fmt: skip
    eng = listed["gd:group:eng@example.com"]
    assert list(eng.members) == ["Ann@example.com"]  # CUSTOMER and suspended: left out
    assert eng.subgroups == ("gd:group:ext@partner.com", "gd:group:platform@example.com")
    assert (eng.display_name, eng.mail) == ("Engineering", "Eng@example.com")
    assert listed["gd:group:all@example.com"].subgroups == ("gd:group:eng@example.com",)
    assert list(listed["gd:group:platform@example.com"].members) == ["bob@example.com"]
    pages = [r for r in drive.log if r.path.endswith("/members") and r.query.get("pageToken")]
    assert pages, "members.list was paged"


def test_without_groups_domain_nothing_is_asked(drive: FakeDrive, tmp_path: Path) -> None:
    directory(drive)
    assert list(make(drive, tmp_path, groups_domain=None).groups()) == []
    assert not any(r.path.startswith("/admin/") for r in drive.log)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("directory_scope_ok", f"needs the scope {GROUP_SCOPE}, which `token` lacks"),
        ("directory_admin", "act as an administrator with the Groups Reader role"),
    ],
)
def test_validate_names_the_missing_scope_or_role(
    drive: FakeDrive, tmp_path: Path, setting: str, message: str
) -> None:
    make(drive, tmp_path).validate()
    setattr(drive, setting, False)
    with pytest.raises(CredentialError, match=message):
        make(drive, tmp_path).validate()
    make(drive, tmp_path, groups_domain=None).validate()  # Drive alone still validates
    with pytest.raises(CredentialError, match=message):
        list(make(drive, tmp_path).groups())


def test_nested_groups_expand_at_search_and_a_deleted_group_goes(
    drive: FakeDrive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory(drive)
    drive.share("a", [{"type": "group", "role": "reader", "emailAddress": "all@example.com"}])
    config = tmp_path / "headwater.toml"
    config.write_text(
        '[workspace]\ntenant = "acme"\nstate_dir = "state"\n'
        '[embedder]\ntype = "fake"\ndimension = 32\n'
        '[[index]]\nname = "main"\ntype = "sqlite"\n'
        f'[[source]]\nid = "gd"\ntype = "gdrive"\nbase_url = "{drive.url}"\n'
        f'directory_url = "{drive.url}"\ntoken = "{TOKEN}"\ngroups_domain = "example.com"\n'
        "retry_attempts = 2\nretry_initial_wait = 0.0\n"
    )
    with Workspace.open(config, connector_types={"gdrive": GdriveConnector}) as ws:
        ws.sync()
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def titles(user: str) -> set[str]:
        args = ["search", "Alpha", "--as", user, "--mode", "keyword", "--json"]
        result = runner.invoke(register_commands(), args)
        assert result.exit_code == 0, result.output
        return {r["title"] for r in json.loads(result.stdout)["results"]}

    assert titles("bob@example.com") == {"a.txt"}  # platform ⊂ eng ⊂ all
    assert titles("pat@partner.com") == set()  # a group the token cannot read adds no one
    shown = json.loads(runner.invoke(register_commands(), ["whois", "bob@example.com",
                                                            "--json"]).stdout)  # fmt: skip
    assert [(g["group"], g.get("via")) for g in shown["synced_groups"]] == [
        ("gd:group:platform@example.com", None),
        ("gd:group:eng@example.com", "gd:group:platform@example.com"),
        ("gd:group:all@example.com", "gd:group:eng@example.com"),
    ]
    del drive.groups["platform@example.com"]  # deleted in the directory
    drive.groups["Eng@example.com"]["members"].remove(("GROUP", "platform@example.com", "ACTIVE"))
    result = runner.invoke(register_commands(), ["sync", "gd", "--permissions", "--json"])
    assert result.exit_code == 0, result.output
    assert titles("bob@example.com") == set()
    assert titles("ann@example.com") == {"a.txt"}
