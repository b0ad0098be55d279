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
