"""``sqlite`` -> ``pgvector`` through the CLI, with the password in the index url as
``${PGPASS}`` (issue 25 item 5): ``headwater rebuild`` builds and verifies the pgvector
generation, ``rebuild switch`` and ``rebuild rollback`` move between the engines (each
rollback catching the older one up first), and the secret reaches the server (a wrong one
is refused) yet never appears in any output, ``--json``, DEBUG log, ``status``, the
manifest's recorded generation options or any other file under the state dir. When the
config goes back to ``sqlite`` while pgvector serves, a search names the fix (the url was
never recorded) and ``headwater rebuild`` moves on to a new sqlite generation.

The server is a real PostgreSQL + pgvector (``pg_embedded``) of its own that checks
passwords, so a secret that did not arrive fails the test. Every command is a real
``headwater`` subprocess run with ``-vv --log-file``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pg_embedded import EmbeddedServer
from workspace_helpers import filesystem_source, write_config

pytestmark = pytest.mark.server
SECRET = f"pw-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def guarded_server() -> Iterator[EmbeddedServer]:
    """A PostgreSQL + pgvector that checks the ``postgres`` user's password."""
    server = EmbeddedServer(password=SECRET)
    try:
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield server
    finally:
        server.stop()


class Cli:
    """Runs ``headwater`` in a workspace and keeps everything it printed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.printed: list[str] = []

    def run(self, *args: str, password: str = SECRET) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PGPASS": password}
        done = subprocess.run(
            [sys.executable, "-m", "headwater.cli", "-vv", "--log-file", "logs/hw.log", *args],
            cwd=self.root, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        self.printed += [done.stdout, done.stderr]
        return done

    def ok(self, *args: str) -> Any:
        done = self.run(*args)
        assert done.returncode == 0, done.stderr[-3000:] + done.stdout
        return json.loads(done.stdout) if "--json" in args else done.stdout


def _configure(root: Path, corpus: Path, index: str) -> None:
    write_config(root, manifest_url=None, sources=filesystem_source(corpus), indexes=index)


def _titles(cli: Cli, query: str) -> list[str]:
    hits = cli.ok("search", query, "--group", "staff", "--mode", "keyword", "--json")
    return [h["title"] for h in hits["results"]]


def _generations(cli: Cli) -> dict[int, dict[str, Any]]:
    status = cli.ok("rebuild", "status", "--json")
    return {g["generation"]: g for g in status["indexes"][0]["generations"]}


def test_sqlite_to_pgvector_with_a_secret_url_switches_and_rolls_back_without_leaking(
    tmp_path: Path, corpus: Path, guarded_server: EmbeddedServer
) -> None:
    cli = Cli(tmp_path)
    schema = f"x_{uuid.uuid4().hex[:10]}"
    where = f"127.0.0.1:{guarded_server.port}/postgres"
    pgvector = (
        f'[[index]]\nname = "main"\ntype = "pgvector"\n'
        f'url = "postgresql://postgres:${{PGPASS}}@{where}"\nschema = "{schema}"\n'
    )
    _configure(tmp_path, corpus, '[[index]]\nname = "main"\ntype = "sqlite"\n')
    cli.ok("sync", "--json")
    assert "Expenses" in _titles(cli, "reimbursement")

    _configure(tmp_path, corpus, pgvector)
    assert "${PGPASS}" in (tmp_path / "headwater.toml").read_text()  # the reference only
    warned = cli.run("sync", "--json")
    assert warned.returncode == 0 and "headwater rebuild main" in warned.stderr, warned.stderr
    wrong = cli.run("rebuild", "--json", password="not-the-password")
    assert wrong.returncode != 0, wrong.stdout
    assert "password authentication failed" in wrong.stderr, wrong.stderr[-2000:]
    assert "not-the-password" not in wrong.stdout + wrong.stderr

    built = cli.ok("rebuild", "--no-switch", "--json")["indexes"][0]
    assert (built["result"], built["generation"]) == ("ready", 2), built
    gens = _generations(cli)
    assert gens[1]["state"] == "live" and gens[2]["state"] == "ready"
    recorded = gens[2]["settings"]["sink"]
    assert recorded["type"] == "pgvector" and recorded["options"]["schema"] == schema
    assert "url" not in recorded["options"], recorded
    with psycopg.connect(guarded_server.url) as conn:  # the rows are in PostgreSQL
        held = conn.execute(f'SELECT count(DISTINCT document_id) FROM "{schema}".hw_main__g2')
        assert held.fetchone() == (5,)

    switched = cli.ok("rebuild", "switch", "main", "--json")
    assert switched["result"] == "switched", switched
    assert _generations(cli)[2]["state"] == "live"
    assert "Expenses" in _titles(cli, "reimbursement")  # served by pgvector now
    vector = cli.ok("search", "vacation days", "--group", "staff", "--json")
    assert vector["results"]

    # While pgvector serves, a file goes: the rollback catches sqlite up before it serves.
    (corpus / "guides" / "expenses.md").unlink()
    cli.ok("sync", "--json")
    assert _titles(cli, "reimbursement") == []
    rolled = cli.ok("rebuild", "rollback", "main", "--json")
    assert (rolled["live"], rolled["pending"]) == (1, 0), rolled
    gens = _generations(cli)
    assert gens[1]["state"] == "live" and gens[2]["state"] == "previous"
    assert _titles(cli, "reimbursement") == []
    assert "Vacation policy" in _titles(cli, "vacation")

    # And back to pgvector, caught up with an edit made while sqlite served.
    (corpus / "guides" / "vacation.md").write_text("# Vacation policy\n\nNow 42 holidays.\n")
    cli.ok("sync", "--json")
    again = cli.ok("rebuild", "rollback", "main", "--json")
    assert (again["live"], again["pending"]) == (2, 0), again
    assert _titles(cli, "holidays") == ["Vacation policy"]
    assert cli.ok("reconcile", "--json")["sinks"]["main"]["in_sync"]
    cli.ok("status", "--json")

    # The config goes back to sqlite while pgvector serves: the url was never recorded, so
    # a search says how to reach it again, and a rebuild moves on to a new sqlite one.
    _configure(tmp_path, corpus, '[[index]]\nname = "main"\ntype = "sqlite"\n')
    lost = cli.run("search", "holidays", "--group", "staff")
    assert lost.returncode == 2, lost.stderr[-2000:]
    assert "configure 'main' as type = 'pgvector'" in lost.stderr, lost.stderr[-2000:]
    back = cli.ok("rebuild", "--json")["indexes"][0]
    assert (back["result"], back["generation"]) == ("switched", 3), back
    assert _titles(cli, "holidays") == ["Vacation policy"]

    leaks = [text for text in cli.printed if SECRET in text]
    assert not leaks, leaks[0][:2000]
    log = (tmp_path / "logs" / "hw.log").read_text()
    assert "DEBUG" in log and SECRET not in log
    for path in (tmp_path / "state").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
