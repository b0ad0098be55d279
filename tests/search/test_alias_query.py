"""Issue 31 item 1: ``[identity] query`` reads aliases from a database at search time.

The rows are merged with the table, cached for ``cache_ttl``, and a query that fails
fails closed: the table's aliases only, the error logged and shown by ``whois``.
Run against a real SQLite file and a real PostgreSQL database.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from headwater import Workspace
from headwater.cli.app import register_commands
from headwater.errors import ConfigError
from headwater.search.alias_source import AliasSource
from pg_support import create_pg_database
from workspace_helpers import filesystem_source, write_config

QUERY = "SELECT alias, person FROM people_aliases"


@pytest.fixture(params=["sqlite", "postgres"])
def alias_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database with a ``people_aliases(alias, person)`` table holding one row."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'people.db'}"
        drop = None
    else:
        url, drop = create_pg_database(request.getfixturevalue("postgres_server_url"))
    run(url, "CREATE TABLE people_aliases (alias TEXT, person TEXT)")
    run(url, "INSERT INTO people_aliases VALUES ('GitHub:Ann', 'ann@corp.com')")
    try:
        yield url
    finally:
        if drop is not None:
            drop()


def run(url: str, sql: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(sql))
    engine.dispose()


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


def test_query_aliases_merge_with_the_table_and_fail_closed(
    alias_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "corpus"
    docs.mkdir()
    (docs / "plan.md").write_text("# Plan\n\nThe budget for the year.\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.md").write_text("# Notes\n\nThe budget, again.\n")
    sources = filesystem_source(docs, "gh", '{ users = ["github:ann"] }') + filesystem_source(
        tmp_path / "other", "sp", '{ users = ["ann@corp.onmicrosoft.com"] }'
    )
    identity = (
        '[identity]\naliases = { "ann@corp.onmicrosoft.com" = "ann@corp.com" }\n'
        f'query = "{QUERY}"\nurl = "${{HW_TEST_ALIAS_DB}}"\ncache_ttl = "0s"\n'
    )
    monkeypatch.setenv("HW_TEST_ALIAS_DB", alias_db)
    config = write_config(tmp_path, manifest_url=None, sources=sources, extra=identity)
    with Workspace.open(config) as ws:
        ws.sync()
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert found(runner, "ann@corp.com") == {"Plan", "Notes"}  # table and query alike
    assert found(runner, "github:ann") == {"Plan", "Notes"}
    assert whois(runner, "ann@corp.com")["aliases"] == ["ann@corp.onmicrosoft.com", "github:ann"]
    # a row added in the database counts at the next search (cache_ttl 0s): no re-sync
    run(alias_db, "INSERT INTO people_aliases VALUES ('slack:U7', 'ann@corp.com')")
    assert "slack:u7" in whois(runner, "ann@corp.com")["aliases"]  # type: ignore[operator]
    # the query fails: searches run with the table only, and whois says why
    run(alias_db, "DROP TABLE people_aliases")
    assert found(runner, "ann@corp.com") == {"Notes"}
    shown = whois(runner, "ann@corp.com")
    assert shown["aliases"] == ["ann@corp.onmicrosoft.com"]
    assert "[identity] query failed" in str(shown["alias_error"])
    assert "check `url`, `query`" in str(shown["alias_error"])
    plain = runner.invoke(register_commands(), ["whois", "ann@corp.com"]).output
    assert "aliases incomplete: [identity] query failed" in plain
    # a row contradicting the table is refused as a whole, naming both users
    run(alias_db, "CREATE TABLE people_aliases (alias TEXT, person TEXT)")
    run(alias_db, "INSERT INTO people_aliases VALUES ('ann@corp.onmicrosoft.com', 'x@corp.com')")
    error = str(whois(runner, "ann@corp.com")["alias_error"])
    assert "'ann@corp.onmicrosoft.com' is given for both" in error
    assert found(runner, "x@corp.com") == set()


def test_the_answer_is_cached_for_the_ttl_and_a_failure_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'people.db'}"
    run(url, "CREATE TABLE people_aliases (alias TEXT, person TEXT)")
    run(url, "INSERT INTO people_aliases VALUES ('github:ann', 'ann@corp.com')")
    clock = [0.0]
    source = AliasSource({}, query=QUERY, url=url, ttl=60.0, now=lambda: clock[0])
    assert source.current().identities_of("ann@corp.com") == ("ann@corp.com", ("github:ann",))
    run(url, "DELETE FROM people_aliases")
    clock[0] = 59.0
    assert source.current().identities_of("github:ann")[0] == "ann@corp.com"  # cached
    clock[0] = 60.0
    assert source.current().identities_of("github:ann") == ("github:ann", ())  # re-read
    run(url, "DROP TABLE people_aliases")
    clock[0] = 200.0
    with caplog.at_level(logging.ERROR, logger="headwater.search.alias_source"):
        failed = source.current()
    assert failed.error is not None and failed.canonical_of == {}
    assert "searching with the [identity] aliases table only" in caplog.text
    bad = AliasSource({}, query="SELECT 1, 2", url=url)
    assert "expected rows of two strings" in str(bad.current().error)


def test_a_secret_in_the_url_is_never_shown(tmp_path: Path) -> None:
    url = "postgresql+psycopg://hr:s3cret@127.0.0.1:1/hr"  # nothing listens on port 1
    error = AliasSource({}, query=QUERY, url=url).current().error
    assert error is not None and "s3cret" not in error and "***" in error


@pytest.mark.parametrize(
    ("identity", "message"),
    [
        (f'query = "{QUERY}"\n', "has `query` without `url`"),
        ('url = "sqlite:///x.db"\n', "has `url` without `query`"),
        (f'query = "{QUERY}"\nurl = "not a url"\n', "is not a database URL"),
        (f'query = "{QUERY}"\nurl = "sqlite:///x.db"\ncache_ttl = "soon"\n', "soon"),
    ],
)
def test_bad_identity_keys_are_config_errors(tmp_path: Path, identity: str, message: str) -> None:
    config = write_config(tmp_path, manifest_url=None, sources="", extra=f"[identity]\n{identity}")
    with pytest.raises(ConfigError, match=message):
        Workspace.open(config)
