"""Issue 31 item 1: ``[identity] aliases_file``, aliases in a CSV file beside the config.

The file is checked at load (a bad row is a config error naming the file and line), read
again at the first search after it changes (no restart, no source re-read), and a file
that turns bad fails closed (its aliases are left out, ``whois`` says why). ``whois``
names the line each alias came from. Through the CLI here; through a real ``serve`` in
``tests/api/test_api_identity.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from headwater import Workspace
from headwater.cli.app import register_commands
from headwater.errors import ConfigError
from headwater.search.alias_file import read_alias_file
from headwater.search.alias_source import AliasSource
from workspace_helpers import filesystem_source, write_config

IDENTITY = '[identity]\naliases = { "ann@corp.onmicrosoft.com" = "ann@corp.com" }\n'


def setup(tmp_path: Path, rows: str) -> Path:
    """Two sources naming Ann differently, and an alias file beside the config."""
    for folder, title in (("gh", "Plan"), ("sp", "Notes")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{title.lower()}.md").write_text(f"# {title}\n\nThe budget.\n")
    sources = filesystem_source(tmp_path / "gh", "gh", '{ users = ["github:ann"] }')
    sources += filesystem_source(tmp_path / "sp", "sp", '{ users = ["ann@corp.onmicrosoft.com"] }')
    (tmp_path / "aliases.csv").write_text(rows)
    extra = IDENTITY + 'aliases_file = "aliases.csv"\n'
    return write_config(tmp_path, manifest_url=None, sources=sources, extra=extra)


def latest_runs(ws: Workspace) -> list[str | None]:
    return [r.run_id if r else None for r in ws.last_runs().values()]


def found(runner: CliRunner, user: str) -> set[str]:
    args = ["search", "budget", "--as", user, "--mode", "keyword", "--json"]
    result = runner.invoke(register_commands(), args)
    assert result.exit_code == 0, result.output
    return {r["title"] for r in json.loads(result.stdout)["results"]}


def whois(runner: CliRunner, user: str) -> dict[str, object]:
    result = runner.invoke(register_commands(), ["whois", user, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_file_aliases_count_at_once_and_whois_names_their_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = setup(tmp_path, "alias,user\n# Ann's login\nGitHub:Ann,ann@corp.com\n")
    with Workspace.open(config) as ws:
        ws.sync()
        runs = latest_runs(ws)
        assert {r["title"] for r in ws.search("budget", user="github:ann", mode="keyword")} == {
            "Plan",
            "Notes",
        }
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert found(runner, "ann@corp.com") == {"Plan", "Notes"}
    shown = whois(runner, "ann@corp.com")
    assert shown["aliases"] == ["ann@corp.onmicrosoft.com", "github:ann"]
    csv_line = f"{tmp_path / 'aliases.csv'} line 3"
    assert shown["alias_origins"] == {
        "ann@corp.onmicrosoft.com": "[identity] aliases",
        "github:ann": csv_line,
    }
    plain = runner.invoke(register_commands(), ["whois", "github:ann"]).output
    assert f"alias github:ann: from {csv_line}" in plain
    assert "alias ann@corp.onmicrosoft.com: from [identity] aliases" in plain
    # the alias moves to another person: the next search runs as the file says now
    (tmp_path / "aliases.csv").write_text("github:ann,bob@corp.com\n")
    assert found(runner, "ann@corp.com") == {"Notes"}
    assert found(runner, "bob@corp.com") == {"Plan"}
    with Workspace.open(config) as ws:
        assert latest_runs(ws) == runs  # no source was read again


def test_the_file_is_reread_when_it_changes_and_fails_closed(tmp_path: Path) -> None:
    config = setup(tmp_path, "github:ann,ann@corp.com\n")
    with Workspace.open(config) as ws:
        ws.sync()

        def titles(user: str) -> set[str]:
            return {r["title"] for r in ws.search("budget", user=user, mode="keyword")}

        assert titles("ann@corp.com") == {"Plan", "Notes"}
        aliases = tmp_path / "aliases.csv"
        aliases.write_text("")  # the same open workspace reads the new file
        assert titles("ann@corp.com") == {"Notes"}
        aliases.write_text("github:ann,ann@corp.com\n")
        assert titles("ann@corp.com") == {"Plan", "Notes"}
        # an edit that breaks the file: its aliases are left out, the table stays
        aliases.write_text("github:ann,ann@corp.com\nnot a row\n")
        assert titles("ann@corp.com") == {"Notes"}
        assert titles("github:ann") == {"Plan"}
        caller = ws.principals_of("ann@corp.com")
        assert caller.alias_error is not None and f"{aliases} line 2" in caller.alias_error
        aliases.unlink()
        assert "cannot be read" in str(ws.principals_of("ann@corp.com").alias_error)
        aliases.write_text("github:ann,ann@corp.com\n")
        assert titles("ann@corp.com") == {"Plan", "Notes"}
        assert ws.principals_of("ann@corp.com").alias_error is None


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ("github:ann,ann@corp.com\nlonely\n", "aliases.csv line 2: 'lonely' is not an alias,user"),
        ("a@x.com,b@x.com\n\n# note\nb@x.com,c@x.com\n", "aliases.csv line 1: 'a@x.com' maps to"),
        ("ann@corp.onmicrosoft.com,x@corp.com\n", "aliases.csv line 1: 'ann@corp.onmicrosoft"),
        ('"github:ann\n', "aliases.csv line 1:"),
        ("g,\u212aim@x.com\n", "aliases.csv line 1: "),
    ],
)
def test_a_bad_file_is_a_config_error_naming_file_and_line(
    tmp_path: Path, rows: str, expected: str
) -> None:
    config = setup(tmp_path, rows)
    with pytest.raises(ConfigError) as caught:
        Workspace.open(config)
    assert expected in "\n".join([str(caught.value), *caught.value.problems])
    assert str(tmp_path / "aliases.csv") in "\n".join(caught.value.problems)


def test_missing_and_non_utf8_files_are_named(tmp_path: Path) -> None:
    config = setup(tmp_path, "")
    (tmp_path / "aliases.csv").unlink()
    with pytest.raises(ConfigError) as caught:
        Workspace.open(config)
    assert f"{tmp_path / 'aliases.csv'} cannot be read" in "\n".join(caught.value.problems)
    (tmp_path / "aliases.csv").write_bytes(b"github:ann,ann@corp.com\nb\xe9b,bob@x.com\n")
    with pytest.raises(ConfigError) as caught:
        Workspace.open(config)
    assert "aliases.csv line 2: the file is not UTF-8" in "\n".join(caught.value.problems)


def test_quoted_fields_header_and_comments(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text('\ufeffAlias,User\n\n# people\n"slack:U7" , ann@corp.com\n')
    [entry] = read_alias_file(path)
    assert (entry.alias, entry.user, entry.origin) == ("slack:U7", "ann@corp.com", f"{path} line 4")
    source = AliasSource({}, file=path)
    assert source.current().identities_of("slack:u7") == ("ann@corp.com", ("slack:u7",))
