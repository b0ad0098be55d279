"""``[parse] time_budget`` and ``metadata_only_on_failure``: workspace defaults, a
source's override, and a value that is no duration refused with its name."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater import Workspace
from headwater.config.sections import ParseSection
from headwater.errors import ConfigError
from workspace_helpers import filesystem_source, write_config


def test_time_budget_and_metadata_only_defaults_and_source_overrides() -> None:
    default = ParseSection().options()
    assert (default.time_budget_s, default.metadata_only_on_failure) == (60.0, True)
    workspace = ParseSection(time_budget="2m", metadata_only_on_failure=False)
    assert workspace.options().time_budget_s == 120.0
    assert workspace.options().metadata_only_on_failure is False
    source = ParseSection(time_budget="5s", metadata_only_on_failure=True)
    laid = workspace.options(source)
    assert (laid.time_budget_s, laid.metadata_only_on_failure) == (5.0, True)
    assert workspace.options(ParseSection()).time_budget_s == 120.0  # unset: the workspace's
    # not part of the content version: changing them re-reads nothing
    assert laid.describe() == default.describe() == {}


def test_a_source_time_budget_reaches_its_parse_options(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(tmp_path / "corpus", extra='parse = { time_budget = "7s" }'),
        extra='[parse]\ntime_budget = "90s"\n',
    )
    with Workspace.open(config) as ws:
        identity = ws.runtime.sources.identity(ws.runtime.sources.section("docs"))
        assert identity.parse_options.time_budget_s == 7.0


def test_a_time_budget_that_is_no_duration_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    config = write_config(
        tmp_path,
        manifest_url=None,
        sources=filesystem_source(tmp_path / "corpus"),
        extra='[parse]\ntime_budget = "soon"\n',
    )
    with pytest.raises(ConfigError) as refused:
        Workspace.open(config)
    assert "time_budget" in str(refused.value) and "'soon'" in str(refused.value)
