"""Config validation: every problem at once, with key paths; ${ENV}; secrets hidden."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.config import load_config, parse_duration
from headwater.errors import ConfigError


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "headwater.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[workspace]
state_dir = 3
colour = "blue"

[[source]]
id = "docs"
type = "filesystem"
batch_size = "many"
roots = "./docs"

[[source]]
id = "web"
type = "nonexistent"
""",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    problems = caught.value.problems
    text = "\n".join(problems)
    assert "workspace.tenant: required key is missing" in text
    assert "workspace.state_dir" in text
    assert "workspace.colour: unknown key" in text
    assert "source[0].batch_size" in text
    assert len(problems) >= 4


def test_plugin_options_are_validated_with_key_paths(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[workspace]
tenant = "acme"

[[source]]
id = "docs"
type = "filesystem"
roots = "./docs"
follow_symlinks = "sometimes"

[[source]]
id = "other"
type = "nonexistent"
""",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    text = "\n".join(caught.value.problems)
    assert "source[0] (id=docs).root: required key is missing" in text
    assert "source[0] (id=docs).roots: unknown key" in text
    assert "source[0] (id=docs).follow_symlinks" in text
    assert "source[1] (id=other).type" in text and "nonexistent" in text


def test_env_references_are_substituted_and_missing_ones_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HW_DOCS_ROOT", str(tmp_path))
    ok = write(
        tmp_path,
        '[workspace]\ntenant = "acme"\n[[source]]\nid = "d"\ntype = "filesystem"\n'
        'root = "${HW_DOCS_ROOT}"\n',
    )
    loaded = load_config(ok)
    assert loaded.source_options["d"].root == str(tmp_path)
    monkeypatch.delenv("HW_DOCS_ROOT")
    with pytest.raises(ConfigError) as caught:
        load_config(ok)
    assert "HW_DOCS_ROOT is not set" in str(caught.value)


def test_secret_values_never_appear_in_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HW_SECRET", "s3cr3t-value")
    path = write(
        tmp_path,
        '[workspace]\ntenant = "acme"\n[embedder]\ntype = "openai"\nbase_url = "http://x"\n'
        'model = "m"\ndimension = "not-a-number"\napi_key = "${HW_SECRET}"\n',
    )
    from headwater.workspace import Workspace

    with pytest.raises(ConfigError) as caught:
        Workspace.open(path)
    assert "s3cr3t-value" not in str(caught.value)
    assert "dimension" in str(caught.value)


def test_missing_config_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="headwater init"):
        load_config(tmp_path / "nope.toml")


def test_invalid_toml_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[workspace\n"))


def test_durations() -> None:
    assert parse_duration("30m").total_seconds() == 1800  # type: ignore[union-attr]
    assert parse_duration("1d").total_seconds() == 86400  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        parse_duration("soon")


DURATION_KEYS = """
[workspace]
tenant = "acme"

[scheduler]
refresh_every = "{v}"
failure_backoff = "{v}"
backoff_max = "{v}"
keep_runs_for = "{v}"

[[index]]
name = "main"
type = "sqlite"
keep_previous_for = "{v}"

[[source]]
id = "docs"
type = "filesystem"
root = "."
refresh_every = "{v}"
prune_every = "{v}"
permissions_every = "{v}"
"""
INTERVALS = [
    "scheduler.refresh_every",
    "scheduler.failure_backoff",
    "scheduler.backoff_max",
    "source[0].refresh_every",
    "source[0].prune_every",
    "source[0].permissions_every",
]
RETENTIONS = ["scheduler.keep_runs_for", "index[0].keep_previous_for"]


def test_a_duration_past_ten_years_is_a_config_error_naming_key_value_and_range(
    tmp_path: Path,
) -> None:
    """A refresh_every of "99999999d" passed validation, then overflowed `run` and `status`."""
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, DURATION_KEYS.format(v="99999999d")))
    problems = caught.value.problems
    for key in INTERVALS + RETENTIONS:
        [line] = [p for p in problems if p.startswith(f"{key}:")]
        assert "'99999999d' is out of range" in line and "to 3650d" in line, line
    assert len(problems) == len(INTERVALS + RETENTIONS)
    with pytest.raises(ValueError, match="out of range"):
        parse_duration(10**12)


def test_a_zero_interval_is_refused_and_a_zero_retention_is_not(tmp_path: Path) -> None:
    """An interval of "0s" made the scheduler spin; a retention of "0s" only keeps nothing."""
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, DURATION_KEYS.format(v="0s")))
    problems = caught.value.problems
    assert sorted(p.split(":")[0] for p in problems) == sorted(INTERVALS)
    assert all("'0s' is out of range; expected a duration from 1s to 3650d" in p for p in problems)
    assert load_config(write(tmp_path, DURATION_KEYS.format(v="1s"))).config.source[0].id == "docs"


def test_the_longest_durations_plan_and_report_without_overflow(tmp_path: Path) -> None:
    """At the ceiling, `run`'s plan, housekeeping and `status` compute their dates."""
    from headwater import Workspace
    from headwater.scheduler.housekeeping import housekeep
    from headwater.scheduler.plans import schedule_status

    (tmp_path / "docs").mkdir()
    body = DURATION_KEYS.format(v="3650d").replace('root = "."', 'root = "docs"')
    body = body.replace("[scheduler]", '[embedder]\ntype = "fake"\ndimension = 32\n\n[scheduler]')
    with Workspace.open(write(tmp_path, body)) as ws:
        ws.sync(index=False)
        assert schedule_status(ws.runtime)["docs"]["next_due_at"] is not None
        housekeep(ws.runtime)
        ws.status()
