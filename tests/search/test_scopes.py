"""Folder-scoped search and ``headwater tree`` end to end: a filesystem source synced
into the default sqlite index, searched through the CLI (one real subprocess, the rest
in process with Click's runner, which runs the same commands and exit codes) and the
Python API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from headwater import Workspace
from headwater.cli.app import register_commands
from headwater.errors import ConfigError
from headwater.scopes import Scope, nodes_of, scope_tokens
from workspace_helpers import filesystem_source, write_config

HEADWATER = [sys.executable, "-m", "headwater.cli"]


def subprocess_run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [*HEADWATER, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run(args: list[str], cwd: Path) -> Ran:
    """The command in this process (``cwd`` as the working directory)."""
    before = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(register_commands(), args)
    finally:
        os.chdir(before)
    return Ran(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def scoped(tmp_path: Path, corpus: Path) -> Path:
    """The shared corpus plus ``guides-old/`` (a sibling whose name starts like
    ``guides``) and a second source ``board`` only ``boss@acme.test`` may read."""
    (corpus / "guides-old").mkdir()
    (corpus / "guides-old" / "vacation-2019.md").write_text(
        "# Old vacation policy\n\nIn 2019 every employee got 20 vacation days.\n"
    )
    board = tmp_path / "board"
    (board / "minutes").mkdir(parents=True)
    (board / "minutes" / "q3.md").write_text("# Q3 minutes\n\nVacation budget approved.\n")
    sources = filesystem_source(corpus) + filesystem_source(
        board, "board", '{ users = ["boss@acme.test"] }'
    )
    write_config(tmp_path, manifest_url=None, sources=sources)
    with Workspace.open(tmp_path / "headwater.toml") as ws:
        ws.sync()
    return tmp_path


def paths(results: list[dict[str, object]]) -> set[str]:
    return {str(r["locator"]).split("/corpus/")[-1].split("/board/")[-1] for r in results}


def test_scope_tokens_are_whole_nodes() -> None:
    assert nodes_of("/a//b/c.md/") == ["a", "a/b", "a/b/c.md"]
    assert scope_tokens("fs", {"hierarchy": "a/b.md"}) == ["fs:", "fs:a", "fs:a/b.md"]
    assert scope_tokens("jira", {}) == ["jira:"]
    assert Scope.parse("docs:/guides/").key() == "docs:guides"
    assert Scope.parse("docs").key() == "docs:"
    for bad in ("docs:guides/../x", ":guides", "docs:./a"):
        with pytest.raises(ConfigError, match="scope"):
            Scope.parse(bad)


def test_search_under_a_folder_through_the_cli(scoped: Path) -> None:
    base = ["search", "vacation days", "--group", "staff", "--mode", "keyword", "--json"]
    under = subprocess_run([*base, "--under", "docs:guides"], scoped)
    assert under.returncode == 0, under.stderr
    assert paths(json.loads(under.stdout)["results"]) == {"guides/vacation.md"}
    sibling = run([*base, "--under", "docs:guides-old/"], scoped)
    assert paths(json.loads(sibling.stdout)["results"]) == {"guides-old/vacation-2019.md"}
    both = run([*base, "--under", "docs:guides", "--under", "docs:guides-old"], scoped)
    assert paths(json.loads(both.stdout)["results"]) == {
        "guides/vacation.md",
        "guides-old/vacation-2019.md",
    }
    # A prefix of a folder name is no folder: nothing, never guides/ and guides-old/.
    prefix = run([*base, "--under", "docs:guide"], scoped)
    assert json.loads(prefix.stdout)["results"] == []
    # The scope does not widen the ACL: board is the boss's only.
    board = run([*base, "--under", "board:minutes"], scoped)
    assert json.loads(board.stdout)["results"] == []
    boss = run(
        ["search", "vacation", "--as", "boss@acme.test", "--json", "--under", "board:minutes"],
        scoped,
    )
    assert paths(json.loads(boss.stdout)["results"]) == {"minutes/q3.md"}
    for scope, said in (("nope:guides", "'nope' is not configured"), ("docs:../x", "'..'")):
        bad = run([*base, "--under", scope], scoped)
        assert bad.returncode == 2 and bad.stdout == "", scope
        assert said in bad.stderr, bad.stderr


def test_tree_lists_what_the_caller_may_see(scoped: Path) -> None:
    root = run(["tree", "docs", "--group", "staff", "--json"], scoped)
    assert root.returncode == 0, root.stderr
    report = json.loads(root.stdout)
    assert report["source"] == "docs" and report["path"] == "" and report["unplaced"] == 0
    assert [(n["name"], n["kind"], n["documents"]) for n in report["nodes"]] == [
        ("guides", "folder", 2),
        ("guides-old", "folder", 1),
        ("notes", "folder", 2),
        ("readme.md", "document", 1),
    ]
    assert report["nodes"][0]["path"] == "guides"
    guides = json.loads(
        run(["tree", "docs", "guides/", "--group", "staff", "--json"], scoped).stdout
    )
    assert [(n["path"], n["kind"]) for n in guides["nodes"]] == [
        ("guides/expenses.md", "document"),
        ("guides/vacation.md", "document"),
    ]
    assert all(n["document_id"] and n["title"] for n in guides["nodes"])
    # Someone outside `staff` sees no folder of docs; the boss sees board's.
    assert json.loads(run(["tree", "docs", "--json"], scoped).stdout)["nodes"] == []
    boss = json.loads(run(["tree", "board", "--as", "boss@acme.test", "--json"], scoped).stdout)
    assert [(n["name"], n["documents"]) for n in boss["nodes"]] == [("minutes", 1)]
    plain = run(["tree", "docs", "--group", "staff"], scoped)
    assert "guides/  (2 documents)" in plain.stdout and "readme.md" in plain.stdout
    unknown = run(["tree", "nope"], scoped)
    assert unknown.returncode == 2 and "'nope' is not configured" in unknown.stderr


def test_k_results_come_back_from_a_scope(tmp_path: Path) -> None:
    """Many better matches outside the folder do not starve it: the filter is in the index."""
    root = tmp_path / "corpus"
    (root / "noise").mkdir(parents=True)
    (root / "wanted").mkdir()
    for i in range(40):
        (root / "noise" / f"n{i}.md").write_text(f"# Noise {i}\n\ngranite granite granite {i}\n")
    for i in range(4):
        (root / "wanted" / f"w{i}.md").write_text(f"# Wanted {i}\n\ngranite and more {i}\n")
    write_config(
        tmp_path, manifest_url=None, sources=filesystem_source(root, access="{ public = true }")
    )
    with Workspace.open(tmp_path / "headwater.toml") as ws:
        ws.sync()
        for mode in ("keyword", "vector", "hybrid"):
            found = ws.search("granite", k=3, mode=mode, scopes=[Scope.parse("docs:wanted")])
            assert len(found) == 3, mode
            assert all("/wanted/" in r.locator for r in found), mode
