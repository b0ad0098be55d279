"""Issue 31 item 1 through the CLI: GitHub users are logins (``github:ann``), never
guessed emails, and ``[identity] aliases`` make them people at search time.

ann shows a public email, bob none: both are named by login alike. With the alias
``github:ann = ann@corp.com``, ``search --as ann@corp.com`` finds the private repo's
issues; bob, without an alias, is still found as ``github:bob``; removing the alias
takes effect without reading GitHub again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from github_support import SECRET, populate, workspace
from typer.testing import CliRunner

from fakes.github import FakeGithub
from headwater.cli.app import register_commands

ALIASES = '[identity]\naliases = { "github:Ann" = "ann@corp.com", "github:cat" = "cat@corp.com" }\n'


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch, gh: FakeGithub) -> None:
    monkeypatch.setenv("HW_TEST_GITHUB_TOKEN", gh.token)


def found(runner: CliRunner, user: str) -> set[str]:
    """The titles ``headwater search --as USER --json`` returns for a word of every issue."""
    args = ["search", "rotate OR DNS OR teh", "--as", user, "--mode", "keyword", "--json"]
    result = runner.invoke(register_commands(), args)
    assert result.exit_code == 0, result.output
    return {r["title"] for r in json.loads(result.output)["results"]}


def test_logins_resolve_through_identity_aliases_at_search(
    gh: FakeGithub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    populate(gh)
    with workspace(gh, tmp_path, 'window_overlap = "0s"\n') as ws:
        ws.sync()
        secret = ws.manifest.document_by_object("gh", f"{SECRET}/issues/1")
        assert secret is not None and "user:github:ann" in secret.acl
        assert not any("@" in p for p in secret.acl), secret.acl  # no email guessed
    config = tmp_path / "headwater.toml"
    config.write_text(ALIASES + config.read_text())
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    private = {f"{SECRET}#1: Key rotation", f"{SECRET}#2: Incident 7"}
    assert private <= found(runner, "ann@corp.com")
    assert private <= found(runner, "github:bob")  # no alias: the login is the name
    assert not private & found(runner, "bob@example.com")
    # cat reads through the team: the synced group names her login, her alias finds it
    assert private <= found(runner, "cat@corp.com")
    whois = runner.invoke(register_commands(), ["whois", "cat@corp.com", "--json"])
    data = json.loads(whois.output)
    assert data["aliases"] == ["github:cat"]
    team = f"gh:group:team:{gh.team_id('octo/core')}"
    assert data["synced_groups"] == [{"group": team, "source": "gh", "display_name": "octo/core"}]
    assert "user:github:cat" in data["principals"]
    gh.clear_log()
    config.write_text(config.read_text().replace(ALIASES, ""))  # the alias goes
    assert not private & found(runner, "ann@corp.com")
    assert private <= found(runner, "github:ann")
    assert gh.log == []  # no source was read again
