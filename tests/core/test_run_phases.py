"""A run records where its time went: seconds per phase, kept with the run (issue 28).

A real filesystem sync on a SQLite and a PostgreSQL manifest: ``runs show --json`` has
``phases`` with ``read``, ``fetch_parse``, ``commit`` and ``prune``, each non-negative,
together no more than the run's duration and more than nothing (they were measured);
the human output prints them as indented lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from headwater.cli.app import app, register_commands
from headwater.sync.phases import PHASES, PhaseTimes
from workspace_helpers import filesystem_source, write_config


def cli(config: Path, *args: str) -> Any:
    register_commands()
    result = CliRunner().invoke(app, ["--config", str(config), *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result.stdout


def test_a_real_sync_records_its_time_per_phase(
    tmp_path: Path, corpus: Path, manifest_url: str
) -> None:
    config = write_config(tmp_path, manifest_url=manifest_url, sources=filesystem_source(corpus))
    cli(config, "sync", "--json")
    (corpus / "guides" / "expenses.md").unlink()  # the second run also deletes by difference
    cli(config, "sync", "--json")
    for listed in cli(config, "runs", "--json")["runs"]:
        run = cli(config, "runs", "show", listed["run_id"], "--json")
        phases = run["phases"]
        assert list(phases) == list(PHASES) == ["read", "fetch_parse", "commit", "prune"]
        assert all(seconds >= 0 for seconds in phases.values()), phases
        assert 0 < sum(phases.values()) <= run["duration_s"], (phases, run["duration_s"])
        assert listed["phases"] == phases  # the list carries the same object
    latest = cli(config, "runs", "--json")["runs"][0]
    assert latest["counts"]["deleted"] == 1
    shown = cli(config, "runs", "show", latest["run_id"][:8]).splitlines()
    assert "phases:" in shown
    assert any(line.startswith("  fetch_parse: ") for line in shown), shown


def test_phase_times_round_down_and_count_a_raising_body() -> None:
    times = PhaseTimes()
    times.seconds["read"] = 0.0019999
    try:
        with times.measure("commit"):
            raise ValueError("a failed commit still took time")
    except ValueError:
        pass
    assert times.as_dict()["read"] == 0.001
    assert times.seconds["commit"] > 0
    assert times.as_dict()["prune"] == 0.0
