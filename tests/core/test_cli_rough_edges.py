"""Rough edges of the command line found by running it for real (issue 28, items 6, 8
and 11): run id prefixes, exit codes, help text, the demo's command lines, packaging."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from datetime import timedelta
from pathlib import Path

from sqlalchemy import insert, select

from headwater import Workspace
from headwater.manifest import schema as t
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
