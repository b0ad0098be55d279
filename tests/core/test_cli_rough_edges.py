"""Rough edges of the command line found by running it for real (issue 28, items 6, 8
and 11): run id prefixes, exit codes, help text, the demo's command lines, packaging."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from headwater import Workspace
from headwater.api.admin import templates
from headwater.cli import exits
from headwater.config import load_config
from headwater.connectors.filesystem import FilesystemConnector, FilesystemOptions
from headwater.errors import ConfigError
from headwater.manifest import schema as t
from headwater.manifest.records import FailureWrite
from headwater.manifest.schedule import ScheduleStore
from headwater.sync.redrive import UNREADABLE
from workspace_helpers import filesystem_source, write_config

HEADWATER = [sys.executable, "-m", "headwater.cli"]

ROOT = Path(__file__).resolve().parents[2]


def test_the_license_is_an_spdx_string_setuptools_does_not_warn_about() -> None:
    """`license = { text = ... }` made setuptools warn on every install (a TOML table
    is deprecated); the SPDX string needs setuptools 77 or later."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in pyproject["build-system"]["requires"]


def test_the_readme_says_how_to_reach_the_installed_command() -> None:
    use = (ROOT / "README.md").read_text(encoding="utf-8").split("## Use", 1)[1]
    opening = use.split("```", 1)[0]
    assert "source .venv/bin/activate" in opening
    assert ".venv/bin/headwater" in opening


# -- item 6: `runs show` takes the short ids `runs` and the admin page show ------------


def cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HEADWATER, "-c", str(config), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "400"},
        timeout=300,
    )


def copy_run(config: Path, *run_ids: str) -> None:
    """Copies of the workspace's one run under the given ids (a day apart, newest last)."""
    with Workspace.open(config) as ws, ws.manifest.engine.begin() as conn:
        (row,) = conn.execute(select(t.runs)).mappings().all()
        for n, run_id in enumerate(run_ids, 1):
            started = row["started_at"] + timedelta(days=n)
            conn.execute(insert(t.runs).values({**row, "run_id": run_id, "started_at": started}))


def test_runs_show_takes_a_unique_prefix_and_names_the_candidates_of_an_ambiguous_one(
    tmp_path: Path, corpus: Path
) -> None:
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    assert cli(config, "sync", "--no-index").returncode == 0
    twins = ("abcdef01-1111-4000-8000-000000000000", "abcdef01-2222-4000-8000-000000000000")
    copy_run(config, *twins)
    listed = json.loads(cli(config, "runs", "--json").stdout)["runs"]
    own = next(r for r in listed if r["run_id"] not in twins)
    # Tables show 8 characters, more where two runs share them: each shown id is unique.
    assert [r["short_id"] for r in listed[:2]] == ["abcdef01-2", "abcdef01-1"]
    assert own["short_id"] == own["run_id"][:8]
    table = cli(config, "runs").stdout
    assert "abcdef01-2" in table and own["run_id"][:8] in table
    assert own["run_id"] not in table  # the table shows short ids, not the full one

    for shown in (own["short_id"], "abcdef01-1"):
        done = cli(config, "runs", "show", shown, "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["run_id"].startswith(shown)
    ambiguous = cli(config, "runs", "show", "abcdef01")
    assert ambiguous.returncode == 2
    message = " ".join(ambiguous.stderr.split())
    assert "ambiguous" in message and twins[0] in message and twins[1] in message
    assert cli(config, "runs", "show", "ffffffff").returncode == 2  # no such run
    # The admin page's run history shows the same short ids.
    with Workspace.open(config) as ws:
        html = templates.get_template("source.html").render(
            source=ws.source_section("docs"),
            runs=ScheduleStore(ws.manifest.engine).list_runs("docs"),
            failures=[],
            paused=False,
            session=None,
            csrf="",
            flash=None,
        )
    assert ">abcdef01-2<" in html and ">abcdef01-1<" in html
    assert f">{own['run_id'][:8]}<" in html


# -- item 8: exit codes and CLI text -----------------------------------------------


def test_a_sync_of_a_source_whose_root_is_missing_exits_2_as_a_config_error(
    tmp_path: Path,
) -> None:
    """The run fails on a ConfigError (fix `root`): exit 2, as docs/cli.md says for
    configuration errors; before, 1 (a run failed, as for a flaky server)."""
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(tmp_path / "no"))
    done = cli(config, "sync")
    assert done.returncode == 2, done.stderr
    assert "does not exist" in done.stderr and "Fix `root`" in done.stderr
    assert json.loads(cli(config, "sync", "--json").stdout)["runs"][0]["status"] == "failed"


def test_for_runs_a_config_failure_beats_a_plain_one_and_cancelling_beats_both() -> None:
    assert exits.for_runs(["failed", "succeeded"], needs_person=False) == 1
    assert exits.for_runs(["failed", "failed"], needs_person=True, config_error=True) == 2
    assert exits.for_runs(["failed"], needs_person=False, config_error=True, cancelled=True) == 130
    assert exits.failed_on_config("CredentialError: 401 from the server")  # a subclass
    assert not exits.failed_on_config("TransientError: connection refused")
    assert not exits.failed_on_config(None)


def test_a_file_given_as_root_is_called_a_file_not_a_missing_folder(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n")
    for root, said in ((notes, "is a file, not a folder"), (notes / "sub", "lies under")):
        connector = FilesystemConnector(FilesystemOptions(root=str(root)))
        with pytest.raises(ConfigError) as caught:
            connector.validate()
        message = str(caught.value)
        assert said in message and "does not exist" not in message
        assert str(tmp_path) in message and "`include`" in message


def test_an_unset_variable_is_one_line_without_the_validation_echo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tenant = "${T}"` unset said the variable is unset and then, in pydantic's words,
    that the empty string left behind is too short; a URL, that '' is not a URL."""
    monkeypatch.delenv("HW_UNSET_TENANT", raising=False)
    monkeypatch.delenv("HW_UNSET_URL", raising=False)
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources='[[source]]\nid = "site"\ntype = "web"\nstart_urls = ["${HW_UNSET_URL}"]\n'
        "access = { public = true }\n",
    )
    config.write_text(config.read_text().replace('"acme"', '"${HW_UNSET_TENANT}"'))
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert caught.value.problems == [
        "workspace.tenant: environment variable HW_UNSET_TENANT is not set; export "
        "HW_UNSET_TENANT or remove the ${HW_UNSET_TENANT} reference",
        "source[0].start_urls[0]: environment variable HW_UNSET_URL is not set; export "
        "HW_UNSET_URL or remove the ${HW_UNSET_URL} reference",
    ]
    # A problem of another key is still reported beside them.
    config.write_text(config.read_text() + "max_pages = 0\n")
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert len(caught.value.problems) == 3
    assert "source[0] (id=site).max_pages" in caught.value.problems[2]


def test_help_shows_no_type_beside_flags(tmp_path: Path) -> None:
    """typer's Rich help printed `--json <bool>`, as if the flag took a value."""
    for command in (["sync", "--help"], ["search", "--help"], ["--help"]):
        shown = subprocess.run(
            [*HEADWATER, *command],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
            timeout=60,
        ).stdout
        assert "<bool>" not in shown and "<int>" not in shown.split("--k")[0]
        assert "--json" in shown or "--verbose" in shown
    assert "<str>" in shown  # options that take a value keep their type


def test_the_docs_show_the_optional_as_of_search_in_brackets() -> None:
    for doc in (ROOT / "docs" / "cli.md", ROOT / "README.md"):
        text = doc.read_text(encoding="utf-8")
        assert "headwater search QUERY [--as EMAIL]" in text, doc
        assert "QUERY --as EMAIL" not in text, doc


def test_the_demo_prints_command_lines_that_can_be_pasted() -> None:
    spec = importlib.util.spec_from_file_location("demo", ROOT / "examples" / "demo.py")
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    args = ("search", "what happens when a robot fails to dock", "--as", "x@y.z", "--json")
    line = demo.shown(args)
    assert line.startswith("$ headwater search 'what happens")
    assert shlex.split(line[2:]) == ["headwater", *args]


def test_redrive_all_names_the_entries_it_left_dead(tmp_path: Path, corpus: Path) -> None:
    """`dlq redrive --all` said "redriven 0" when every dead entry was of a source a sync
    cannot read again, and nothing said which entries it skipped or what to do."""
    config = write_config(tmp_path, manifest_url=None, sources=filesystem_source(corpus))
    with Workspace.open(config) as ws:
        ws.manifest.failures.record(
            [
                FailureWrite(
                    source_id="gone",
                    object_id="old.md",
                    document_id="acme:gone:old.md",
                    locator="old.md",
                    stage="parse",
                    error_class="parse_error",
                    message="broken",
                    pipeline_version="v1",
                    source_version="1",
                    fetch_ref=None,
                    permanent=True,
                )
            ]
        )
        (entry,) = ws.dead_letters()
    done = cli(config, "dlq", "redrive", "--all")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "redriven 0" in text and "skipped 1" in text
    assert f"#{entry.entry_id} gone/old.md parse" in text
    assert f"headwater dlq drop {entry.entry_id}" in text
    report = json.loads(cli(config, "dlq", "redrive", "--all", "--json").stdout)
    assert report["skipped"] == [
        {
            "id": entry.entry_id,
            "source": "gone",
            "stage": "parse",
            "object_id": "old.md",
            "reason": UNREADABLE,
        }
    ]
